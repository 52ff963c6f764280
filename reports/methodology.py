"""The standing methodology text published with every report (pure; no models).

The rubric version supplies the areas, criteria, weights, anchors and parameters; this
text explains how they are combined. It is copied into each report document, so a
report keeps the explanation it was published with even if this text changes later.
"""

from __future__ import annotations

from costs.methodology import COST_METHODOLOGY_TEXT
from probes.thresholds import sources_summary

METHODOLOGY_TEXT = """\
Opgrade rates GPU cloud operators against each other (peer-relative tiers) from three kinds of evidence: \
hands-on probes run on real managed clusters, a blind documentation review by two or more reviewers, and \
customer feedback.

Each criterion's evidence is normalised to a score from 0 to 1 against fixed anchors in the rubric (worst and \
best values), so scores stay comparable across cycles. A probe that timed out, failed at the provider, or that \
the provider declined (did not allow or provide what it needs) scores the worst anchor; a declined criterion \
is not counted as measured in the published coverage, but it counts toward being rated, so declining \
everything rates a provider on the worst anchor (Underperforming) rather than leaving it unrated. Customer ratings are shrunk toward a prior the rubric states (its mean and its \
strength, a number of pseudo-responses), never toward the other providers' ratings, so a few responses cannot \
dominate and no provider's answers move another's score. Criterion scores are combined with the rubric's \
weights into area scores and a composite. Coverage is the measured share of the applicable weight, computed \
exactly (weights as the decimals the rubric writes); a provider under the coverage floor is published as Not \
rated, with no composite and no tier, rather than rewarded for opacity (a criterion the provider declined is rated, at the worst anchor, not \
uncovered).

How tiers are drawn. Sort the rated providers by composite. A tier boundary can only lie in a gap between two \
neighbouring composites (equal composites are never split), and only where a bootstrap confirms it (drawn on \
a fixed stream, so the published tier never depends on the run's seed): every provider above the gap must beat every provider below it with probability at least \
the rubric's boundary confidence, comparing the providers' own bootstrap distributions, and the gap must be \
at least the rubric's minimum gap. Of the confirmed gaps, the (at most) four largest become the boundaries: \
the top group is Platinum, the next Gold, then Silver, Bronze and Underperforming. The number of groups is not \
estimated, so it cannot jump when one provider moves a little. Then two caps, which can only lower a tier: the \
absolute floors (a tier needs a composite of at least its floor) and the gates (a gate such as tenant \
isolation fails on any critical finding or any failing replicate, a breach seen once being a breach, and caps \
the tier at the gate's cap; the report names the replicate and the finding). The probability of each tier \
reruns the whole rule, boundaries and caps included, on every joint bootstrap replicate of the field (the \
seeded bootstrap, recorded below), so it includes the uncertainty of whether a boundary exists at all; its \
calibration on generated cycles is shown below. The confidence interval comes from the seeded replicates, and a provider whose published tier has low \
probability is flagged borderline. A tier changes from the last published cycle only when the bootstrap puts \
less than the hysteresis threshold at the old tier or beyond it on the old side.

What this rule guarantees, and what it does not. (1) Improving your own evidence on any criterion never lowers \
your composite, your interval's bounds, your tier or your chance of any tier or better. (2) Another provider's \
evidence never changes your composite, interval or criterion scores; it can improve your tier only by removing \
a boundary above you (the other provider joins the group above, or its own widened gap displaces a smaller \
boundary): no rule that gives well-separated groups consecutive tiers can exclude this. Through gap sizes \
alone such a windfall is at most two tiers; through confirmation (a noisy improver that was the weakest pair \
of several cuts) it can reach four: both bounds are pinned by tests, not hidden. (3) Adding a provider \
that every rated provider beats for sure never reorders the others and moves anyone's tier by at most one, and \
only when four boundaries were already drawn. (4) Identical evidence gives identical tiers, probabilities and \
intervals: the bootstrap draws depend on the seed and the rubric, never on a provider's name, and the \
published tier does not depend on the seed. (5) A field in \
which no provider is confirmed apart from its neighbour is one group; a field whose neighbours are all \
confirmed apart is cut at its largest gaps even without natural clusters. Each is a property test of 200 \
random cases run on every change.

Providers review the facts about themselves before publication (right of reply on facts, not on opinions). \
Any score override needs a written justification and a second publisher's approval and is listed in the \
report. A gate failed by a critical finding keeps its cap under any override except one saying the \
measurement was wrong, shown by a later finding and approved by two publishers besides the proposer; a tier \
that rests on such an override is marked as such, with the override's justification. A published report \
never changes: corrections are published as new reports that supersede it, with a notice, and withdrawn \
reports stay available, marked withdrawn. Each report's sha256 content hash identifies exactly what was \
published.
"""
# Where the probes' bars come from: ClusterMAX's published minimum versions, or Opgrade's own choice.
METHODOLOGY_TEXT += "\n" + sources_summary() + "\n"
METHODOLOGY_TEXT += "\n" + COST_METHODOLOGY_TEXT  # issue 16: cost per useful Mtok and availability
