"""The cost of useful output, as the methodology page states it (pure text, copied into each report)."""

COST_METHODOLOGY_TEXT = """\
Cost of useful output (beside the tiers; it never changes a tier). For each cluster, cost per useful million \
output tokens = P * 1e6 / (3600 * T * g * A), where P is the effective price in $ per GPU-hour (the list price, \
or a negotiated one where recorded, plus the mandatory extras: storage, egress and support, each with its \
source), T the output tokens per second per GPU that the serving probe measured at the rubric's target \
interactivity (interpolated monotonically between measured points; a target outside the measured range is \
reported as such, never extrapolated), g the goodput (the share of the tokens asked for that came in requests which \
succeeded and met the time-to-first-token and time-per-output-token objectives: a failed, cut or late request \
is counted and never useful, and the success share is measured over every request of a sweep, not only at the \
point read at the target) and A the availability. With g = A = 1 the figure equals \
InferenceX's P / (T * 3600 / 1e6), the raw cost on an ideal day; the report shows that figure beside ours. \
For a producer that owns its GPUs a second basis replaces P: capex per GPU times the capital recovery factor \
r(1+r)^n / ((1+r)^n - 1) (1/n at r = 0), divided by the hours a year in service, plus power, space and staff \
per GPU-hour.

Availability is measured, never assumed. A = (U / N) x (1 - D / H): N is the number of the cycle's scheduled \
availability samples that could be measured (one sample per slot of the cluster's probe schedule running \
ssh_reachable and node_inventory within the cycle's period), U the number of those in which the ordered capacity \
was usable: every node answered both probes, and the ordered capacity was there (the GPUs node_inventory \
counted reach the ordered GPU count; where no GPU is counted, as on a CPU-only node, the compute nodes that \
answered reach the ordered count, one accelerator a node, or with no count ordered the most any slot \
showed). A node that failed, timed out, was refused or \
declined, or that could not be reached (unreachable, handshake failed, connection lost), or fewer nodes than \
ordered, makes the slot unusable; a slot where only our own \
side failed (refused credentials, a changed host key, unreadable output, or the scheduler refusing a node that \
may be busy with the tenant's own jobs) is left out and counted as unmeasured. D is the downtime the reliability probe \
node_replacement_time measured in the period (seconds until the pool was whole again; a censored run counts at \
its deadline) and H the length of the period. With no measured sample A is unknown, and so is the cost.

The interval is a seeded percentile bootstrap (90%): each draw resamples the serving replicates (T and g \
together, one per sweep of the serving probe: each run sweeps concurrency three times on the testbed) and, independently, the availability samples. Across cycles the report gives each \
provider's cost and rank among the peers with a known cost (1 = cheapest), and flags a provider that improved \
but fell behind: its cost fell, yet a peer whose cost was higher before is lower now (your 10 -> 8 while a \
rival's 12 -> 6).

What the number means, and what it does not. It is a proxy for the cost of a successful task: tokens that \
arrived within the latency objectives, on capacity that was there when scheduled, at the price actually paid. \
It compares providers only for comparable workloads and quality: the same model, input and output lengths, \
target interactivity and objectives, which the probe fixes. It is not a price quote, it says nothing about \
other models, other batch shapes or answer quality, and it leaves out costs a tenant may bear that no price \
page states (engineering time, failed jobs' reruns beyond the measured cycle).
"""
