"""factory_boy factories shared by the test suite."""

from __future__ import annotations

import datetime as dt

import factory

from providers.models import Cluster, Cycle, Provider
from reviews.api_tokens import api_token_issue
from rubric.models import Area, Criterion, RubricVersion


class RubricVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RubricVersion

    name = "opgrade"
    version = factory.Sequence(lambda n: f"test.{n}")
    title = "Test rubric"


class AreaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Area

    rubric_version = factory.SubFactory(RubricVersionFactory)
    key = factory.Sequence(lambda n: f"area-{n}")
    title = factory.LazyAttribute(lambda o: o.key.title())
    weight = 1.0


class CriterionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Criterion

    area = factory.SubFactory(AreaFactory)
    rubric_version = factory.LazyAttribute(lambda o: o.area.rubric_version)
    key = factory.Sequence(lambda n: f"criterion-{n}")
    title = factory.LazyAttribute(lambda o: o.key)
    weight = 1.0
    evidence_kinds = factory.LazyFunction(lambda: ["doc_review"])
    anchor_best = 1.0
    anchor_worst = 0.0


class ProviderFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Provider
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Provider {n}")
    slug = factory.Sequence(lambda n: f"provider-{n}")
    website = factory.LazyAttribute(lambda o: f"https://{o.slug}.example")


class ClusterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Cluster

    provider = factory.SubFactory(ProviderFactory)
    name = factory.Sequence(lambda n: f"cluster-{n}")
    region = "us-east"
    gpu_model = "H100-SXM-80GB"
    gpu_count = 64
    orchestrator = Cluster.Orchestrator.SLURM


class CycleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Cycle
        skip_postgeneration_save = True  # the hook only sets the M2M peer set

    name = factory.Sequence(lambda n: f"Cycle {n}")
    slug = factory.Sequence(lambda n: f"cycle-{n}")
    rubric_version = factory.SubFactory(RubricVersionFactory)
    period_start = dt.date(2026, 10, 1)
    period_end = dt.date(2026, 12, 31)

    @factory.post_generation
    def providers(self, create, extracted, **kwargs):
        if create and extracted:
            self.providers.set(extracted)


def api_token_for(user: object) -> str:
    """A new API token of `user` (issued by the user, as in the portal): what a script sends."""
    return api_token_issue(user=user, name="test client", by=user).token
