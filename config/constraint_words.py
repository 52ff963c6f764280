"""Database constraints said in words: what an analyst reads when a form breaks one.

Every model the admin edits keeps its rules as database constraints too (CheckConstraint,
conditional UniqueConstraint). Django's form validation checks them, but says
``Constraint "cycle_period_ordered" is violated.``, a name only its author can read.
``worded_form`` (applied to every registered ModelAdmin's forms by ``config.admin_forms``
from ``config/urls.py``) gives them a constraint check that says each broken constraint in the
words below (``CONSTRAINT_WORDS``), on the field it is about when the form shows it. Like Django's own, it
leaves out constraints on fields the form does not show (the admin's save_model sets those).

A constraint without words here fails ``tests/foundation/test_constraint_words.py``, which
walks every constraint of every admin-registered model. The API says the same words when the
database refuses a write (``config/api_errors.py``).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db.models import Model, UniqueConstraint

_GUARD_FLAG = "_opgrade_constraint_words"

# constraint name -> (the field it is about, or "" for the row as a whole; the sentence)
CONSTRAINT_WORDS: dict[str, tuple[str, str]] = {
    # providers
    "cycle_period_ordered": ("period_end", "The period cannot end before it starts."),
    "cluster_price_not_negative": ("list_price_per_gpu_hour", "The list price per GPU-hour cannot be negative."),
    "cluster_unique_name_per_provider": ("name", "This provider already has a cluster with this name."),
    # probes
    "proberun_progress_bounded": ("progress_done", "A run cannot have done more steps than it has."),
    "clusteraccess_port_valid": ("login_port", "The SSH port must be between 1 and 65535."),
    "clusteraccess_concurrency_positive": ("max_concurrency", "At least one SSH session must be allowed."),
    "tenantaccount_has_a_secret": ("", "A tenant account needs a private key or a password (or both)."),
    "tenantaccount_unique_label": ("label", "This cluster already has a tenant account with this label."),
    "hostkeypin_sha256": ("fingerprint", "A host key fingerprint is written SHA256:... (as ssh-keygen -l prints it)."),
    "hostkeypin_unique": ("", "This host key is already pinned for this host and port."),
    "hostcapin_sha256": ("fingerprint", "A host CA fingerprint is written SHA256:... (as ssh-keygen -l prints it)."),
    "hostcapin_unique": ("", "This host CA is already trusted for this access."),
    "probeschedule_one_timing": ("", "Choose either a crontab or an interval for the schedule, not both and not neither."),
    "finding_one_per_run_target_metric": ("", "This run already has a finding for this target and metric."),
    # ratings
    "docreview_score_0_4": ("score", "A documentation review score is from 0 to 4."),
    "docreview_one_per_reviewer": ("", "This reviewer already reviewed this criterion for this provider in this cycle."),
    "docreview_one_reconciled": ("", "This criterion already has a reconciled review for this provider in this cycle."),
    "customerfeedback_rating_1_5": ("rating", "A customer rating is from 1 to 5."),
    "customerfeedback_area_xor_criterion": ("", "Customer feedback rates either an area or a criterion: choose exactly one."),
    "customerfeedback_one_per_respondent_criterion": (
        "", "This respondent already rated this criterion for this provider in this cycle (from this source)."),
    "customerfeedback_one_per_respondent_area": (
        "", "This respondent already rated this area for this provider in this cycle (from this source)."),
    "override_value_0_1": ("value", "An override is a normalised score from 0 to 1."),
    "override_has_justification": ("justification", "An override needs a written justification."),
    "override_second_approver_distinct": (
        "", "The second approval must come from a third person: neither the proposer nor the first approver."),
    "override_measurement_wrong_has_evidence": (
        "evidence_finding", "An override for a wrong measurement needs the finding that shows the measurement was wrong."),
    "override_critical_only_measurement_wrong": (
        "reason", "Only an override for a wrong measurement may dispute critical findings."),
    "override_measurement_wrong_two_approvers": (
        "", "An override for a wrong measurement is approved only after two people besides the proposer agreed."),
    "apitoken_digest_is_sha256": ("", "A token is stored only as its SHA-256 digest (64 hexadecimal characters)."),
    "override_four_eyes": ("", "Four eyes: a publisher may not decide on their own override."),
    "override_decision_recorded": ("", "A decided override needs who decided it and when."),
    "override_one_approved_per_unit": ("", "Another override of this criterion is already approved for this provider."),
    "scoresnapshot_seed_not_negative": ("seed", "The seed cannot be negative."),
    "scoresnapshot_unique_content_per_cycle": ("", "This cycle already has a snapshot with exactly this result."),
    "tierassignment_coverage_0_1": ("coverage", "Coverage is a share from 0 to 1."),
    "tierassignment_one_per_provider": ("", "This snapshot already has a tier for this provider."),
    # reports
    "report_status_known": ("status", "Unknown report status."),
    "report_published_has_publisher": ("", "A published report needs its publisher and publication time."),
    "report_withdrawn_has_notice": ("withdrawal_notice", "A withdrawn report needs a withdrawal notice and time."),
    "report_superseded_has_timestamp": ("", "A superseded report needs the time it was superseded."),
    "report_correction_has_notice": ("correction_notice", "A correction needs a notice saying what it corrects."),
    "report_one_published_per_cycle": ("", "This cycle already has a published report: correct or withdraw it first."),
    # rubric
    "rubric_version_unique_label": ("version", "A rubric with this name and version already exists."),
    "rubric_coverage_floor_0_1": ("coverage_floor", "The coverage floor is a share from 0 to 1."),
    "rubric_tier_floors_ordered": (
        "", "Tier floors must not rise going down: Platinum >= Gold >= Silver >= Bronze."),
    "rubric_frozen_has_timestamp": ("", "A frozen rubric version needs the time it was frozen (freeze it with the action)."),
    "rubric_frozen_has_fingerprint": ("", "A frozen rubric version needs its fingerprint (freeze it with the action)."),
    "rubric_status_valid": ("status", "A rubric version is either draft or frozen."),
    "area_unique_key_per_version": ("key", "This rubric version already has an area with this key."),
    "area_weight_positive": ("weight", "An area's weight must be above 0."),
    "criterion_unique_key_per_version": ("key", "This rubric version already has a criterion with this key."),
    "criterion_weight_positive": ("weight", "A criterion's weight must be above 0."),
    "criterion_anchors_distinct": ("anchor_worst", "The best and worst anchors must differ."),
    "criterion_gate_has_cap_tier": ("gate_cap_tier", "A gate needs the tier it caps a failing provider at."),
    "criterion_direction_valid": ("direction", "Direction is either higher (is better) or lower (is better)."),
    "criterion_scale_valid": ("scale", "Scale is either linear or log."),
    "criterion_gate_cap_tier_valid": ("gate_cap_tier", "The cap tier is Gold, Silver, Bronze or Underperforming."),
    "criterion_log_anchors_positive": ("scale", "A log scale needs both anchors above 0."),
    # reviews
    "coi_one_per_reviewer_provider": ("", "This reviewer already declared a conflict of interest with this provider."),
    "assignment_one_reviewer_per_slot": ("slot", "This review slot is already assigned for this criterion and provider."),
    "assignment_reviewer_once_per_unit": ("reviewer", "This reviewer already reviews this criterion for this provider."),
    "assignment_score_0_4": ("score", "A review score is from 0 to 4."),
    "assignment_submitted_has_score": ("", "A submitted review needs its score and submission time."),
    "reconciliation_one_per_unit": ("", "This criterion is already reconciled for this provider in this cycle."),
    "reconciliation_value_0_4": ("value", "A reconciled value is from 0 to 4."),
    "reply_has_text": ("text", "A reply needs its text."),
    "interview_rating_1_5": ("rating", "An interview rating is from 1 to 5."),
    # costs
    "clusterprice_one_per_cluster_cycle": ("", "This cluster already has a price in this cycle."),
    "clusterprice_base_positive": ("base_per_gpu_hour", "The base price per GPU-hour must be above 0."),
    "clusterprice_negotiated_has_amount": ("base_per_gpu_hour", "A negotiated price needs its amount per GPU-hour."),
    "clusterprice_components_not_negative": ("", "Storage, egress, support, power, space and staff costs cannot be negative."),
    "clusterprice_base_has_source": ("base_source", "Say where the base price comes from."),
    "clusterprice_hours_in_a_year": ("hours_per_year", "Hours per year must be above 0 and at most 8,784."),
    # grades
    "grade_definition_unique_label": ("version", "A grade definition with this name and version already exists."),
    "grade_status_valid": ("status", "A grade definition is either draft or frozen."),
    "grade_frozen_has_timestamp_and_fingerprint": (
        "", "A frozen grade definition needs the time it was frozen and its fingerprint (freeze it with the action)."),
    "price_observation_unique": ("", "This price observation is already recorded."),
    "price_observation_positive": ("price_per_gpu_hour", "A price per GPU-hour must be above 0."),
}


def constraint_words(name: str) -> str | None:
    """The sentence for constraint ``name``, or None when it has none."""
    entry = CONSTRAINT_WORDS.get(name)
    return entry[1] if entry else None


def constraint_errors(instance: Model, *, skip: set[str] | frozenset[str] = frozenset()) -> dict[str, list[str]]:
    """Every constraint of ``instance``'s model that the row breaks, in words: {field or NON_FIELD_ERRORS: [..]}.

    Constraints on a field in ``skip`` (fields already refused for another reason) are not checked.
    A constraint with no words here is reported by its own (Django's) message rather than hidden.
    """
    out: dict[str, list[str]] = {}
    for model_class, constraints in instance.get_constraints():
        for constraint in constraints:
            try:
                constraint.validate(model_class, instance, exclude=set(skip))
            except ValidationError as exc:
                field, words = CONSTRAINT_WORDS.get(constraint.name, ("", ""))
                if not words:
                    field, words = "", " ".join(exc.messages)
                if not field and isinstance(constraint, UniqueConstraint) and len(constraint.fields) == 1:
                    field = constraint.fields[0]
                out.setdefault(field or NON_FIELD_ERRORS, []).append(words)
    return out


def worded_form(form_class: type[forms.BaseForm]) -> type[forms.BaseForm]:
    """A subclass of ``form_class`` (a ModelForm) whose constraint check speaks in words."""
    if getattr(form_class, _GUARD_FLAG, False) or not hasattr(form_class, "validate_constraints"):
        return form_class

    def validate_constraints(self: Any) -> None:
        if not getattr(self, "_validate_constraints", True):
            return
        # As Django does: constraints on a field the form does not show (set by the admin's
        # save_model, e.g. an encrypted secret) or on a field already refused are not checked here.
        for field, messages in constraint_errors(self.instance, skip=self._get_validation_exclusions()).items():
            target = field if field in self.fields and field not in self.errors else None
            for message in messages:
                if message not in self.errors.get(target or NON_FIELD_ERRORS, []):
                    self.add_error(target, message)

    return type(form_class.__name__, (form_class,), {
        "validate_constraints": validate_constraints, _GUARD_FLAG: True, "__module__": form_class.__module__,
    })
