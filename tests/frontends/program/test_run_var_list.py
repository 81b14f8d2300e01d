"""A DQN whose gradient is asked for the target network's variables (a wrong var_list): the
call and the ``apply_gradients`` it feeds name the var_list and the variables the loss
trains, never "run while the tape was not recording" nor a fix that trains the target
network. Bare TensorFlow says the same Nones, and the fix, applied, trains."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.frontends.program.test_run import PROGRAMS, site, watched

pytestmark = pytest.mark.tf


def bare(program: str, fixed: str = "", tmp: Path | None = None) -> dict[str, object]:
    """The program run as Python runs it (``fixed``: what its ``# asked`` line asks for
    instead, the program written to ``tmp``: autograph reads a function's source from its
    file); its globals up to where it stopped."""
    import keras

    from gradscope._src.frontends import keras_names

    text = (PROGRAMS / program).read_text()
    if fixed:
        text = text.replace("_target.trainable_variables)  # asked", ".trainable_variables)")
        text = text.replace("target_nn.trainable_variables)  # asked", f"{fixed})")
    path = PROGRAMS / program
    if tmp is not None:
        path = tmp / program
        path.write_text(text, encoding="utf-8")
    keras.backend.clear_session()
    found: dict[str, object] = {"__name__": "__main__", "__file__": str(path)}
    code = compile(text, str(path), "exec")
    with keras_names.fresh():
        if fixed:
            exec(code, found)  # the fix applied: it trains
        else:
            with pytest.raises(ValueError, match="No gradients provided for any variable"):
                exec(code, found)
    return found


@pytest.mark.parametrize(
    ("program", "asked", "trains", "through"),
    [
        ("dqn_asks_target.py", "model_target", "model", "outside the tape"),
        ("dqn_asks_target_fn.py", "target_nn", "main_nn", "`tf.stop_gradient` at "),
    ],
)
def test_a_wrong_var_list_names_the_var_list(program: str, asked: str, trains: str,
                                             through: str, tmp_path: Path) -> None:  # fmt: skip
    truth = bare(program)
    if "grads" in truth:  # eager: every gradient TensorFlow returned is None
        assert all(g is None for g in truth["grads"])  # type: ignore[attr-defined]
    fixed = bare(program, f"{trains}.trainable_variables", tmp_path)
    if "grads" in fixed:
        assert all(g is not None for g in fixed["grads"])  # type: ignore[attr-defined]
    online = [v.path for v in truth[trains].trainable_variables]  # type: ignore[attr-defined]
    target = [v.path for v in truth[asked].trainable_variables]  # type: ignore[attr-defined]
    outcome, _ = watched(program)
    at, applied = site(program, "# asked"), site(program, "# applied")
    call = next(c for c in outcome.report.calls if c.site == at)
    assert [s.name for s in call.sources] == target
    assert all(s.status.startswith("none:") for s in call.sources)
    for s in call.sources:
        assert s.fix is not None and (s.fix.kind, s.fix.where) == ("var-list", at)
        assert f"pass `{trains}.trainable_variables` there" in s.fix.text
        assert f"asks for `{asked}.trainable_variables`" in s.fix.text
        assert through in s.fix.text
        assert "not recording" not in s.fix.text + s.note
        assert "stop_gradient(h) @ w2" not in s.fix.text  # would train the target network
        assert s.cause is not None and list(s.cause.names) == online
    feeds = next(c for c in outcome.report.calls if c.site == applied)
    assert [s.name for s in feeds.sources] == online
    assert {(s.fix.kind, s.fix.where) for s in feeds.sources if s.fix} == {("var-list", at)}
    assert all(f"the call at {at} asked for `{asked}.trainable_variables`" in s.note
               for s in feeds.sources)  # fmt: skip


def test_both_networks_asked_keeps_the_target_networks_cut() -> None:
    """A call that trains something asks nothing more (dqn_lagged: online and lagged asked,
    the lagged ones stopped): no var_list cause there."""
    outcome, _ = watched("dqn_lagged.py")
    (call,) = outcome.report.calls
    assert all(s.fix is None or s.fix.kind != "var-list" for s in call.sources)
