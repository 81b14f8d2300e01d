"""The reviewed op list is well formed and is the only source of allowed ops (no TensorFlow)."""

from __future__ import annotations

from gradscope._src.frontends.yaml import catalog
from gradscope._src.frontends.yaml.ops import OpError, resolve_op


def _review() -> dict[str, str | None]:
    return catalog.review()


def test_every_allowed_op_was_reviewed_as_allowed() -> None:
    review = _review()
    for path in catalog.allowed_ops():
        assert path in review and review[path] is None, path


def test_refused_review_entries_are_refused_with_their_reason() -> None:
    review = _review()
    refused = {p: r for p, r in review.items() if r is not None}
    assert "random.fixed_unigram_candidate_sampler" in refused and "timestamp" in refused
    for path, reason in refused.items():
        try:
            resolve_op(path)
        except OpError as exc:
            assert reason in str(exc), path
        else:
            raise AssertionError(f"{path} resolved although the review refuses it")


def test_an_op_missing_from_the_review_is_not_allowed() -> None:
    assert set(catalog.allowed_ops()) <= set(_review())
