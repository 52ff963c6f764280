"""drf-spectacular documents the reviews API without warnings."""

from __future__ import annotations

from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator


def test_the_reviews_api_is_documented_without_schema_warnings():
    GENERATOR_STATS.reset()
    with GENERATOR_STATS.silence():
        schema = SchemaGenerator().get_schema(request=None, public=True)
    messages = [*GENERATOR_STATS._warn_cache, *GENERATOR_STATS._error_cache]
    ours = [m for m in messages if "reviews/" in m or "reviews." in m]
    assert not ours, "\n".join(ours)
    paths = schema["paths"]
    for path in ("/api/v1/assignments/{id}/submit/", "/api/v1/overrides/{id}/approve/",
                 "/api/v1/feedback-imports/", "/api/v1/agreement/{cycle_slug}/", "/api/v1/replies/"):
        assert path in paths, path
    submit = paths["/api/v1/assignments/{id}/submit/"]["post"]
    assert submit["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/Submit")
