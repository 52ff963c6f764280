"""The standing methodology text published with every report (pure; no models).

The rubric version supplies the areas, criteria, weights, anchors and parameters; this
text explains how they are combined. It is copied into each report document, so a
report keeps the explanation it was published with even if this text changes later.
"""

from __future__ import annotations

from probes.thresholds import sources_summary

METHODOLOGY_TEXT = """\
Opgrade rates GPU cloud operators against each other (peer-relative tiers) from three kinds of evidence: \
hands-on probes run on real managed clusters, a blind documentation review by two or more reviewers, and \
customer feedback.

Each criterion's evidence is normalised to a score from 0 to 1 against fixed anchors in the rubric (worst and \
best values), so scores stay comparable across cycles. Customer ratings are shrunk toward the peer mean (a \
Bayesian average) so a few responses cannot dominate. Criterion scores are combined with the rubric's weights \
into area scores and a composite; missing evidence is reported as coverage, and a provider whose measured \
weight falls under the coverage floor is published as Not rated rather than rewarded for opacity.

Tiers come from the composite: fixed floors for each tier, boundaries between neighbours kept only when the \
bootstrap (seeded, recorded below) is confident the two really differ, and gates (for example tenant isolation) \
that cap the tier of a provider failing them. The confidence interval and the probability of each tier come \
from the same bootstrap; a provider whose top tier probability is low is flagged borderline. A tier changes \
from the last published cycle only when the evidence clearly says so (hysteresis).

Providers review the facts about themselves before publication (right of reply on facts, not on opinions). \
Any score override needs a written justification and a second publisher's approval and is listed in the \
report. A published report never changes: corrections are published as new reports that supersede it, with \
a notice, and withdrawn reports stay available, marked withdrawn. Each report's sha256 content hash identifies \
exactly what was published.
"""
# Where the probes' bars come from: ClusterMAX's published minimum versions, or Opgrade's own choice.
METHODOLOGY_TEXT += "\n" + sources_summary() + "\n"
