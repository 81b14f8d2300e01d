"""A saved model's options, read without TensorFlow: the ``--loss`` grammar, ``loss=`` of the
API, ``--freeze`` globs, and which paths are saved models at all."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from gradscope._src.errors import UsageError
from gradscope._src.frontends.saved import is_saved_target
from gradscope._src.frontends.saved.options import (
    LossChoice,
    freeze_globs,
    loss_choices,
    parse_loss,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("compiled", LossChoice(None, "compiled")),
        ("out_a=compiled", LossChoice("out_a", "compiled")),
        ("mse", LossChoice(None, "mse", "mse")),
        ("out_a=mse", LossChoice("out_a", "mse", "mse")),
        ("Huber(delta=2.0)", LossChoice(None, "Huber(delta=2.0)", "Huber", (("delta", 2.0),))),
        (
            "kind=SparseCategoricalCrossentropy(from_logits=True, ignore_class=None)",
            LossChoice(
                "kind",
                "SparseCategoricalCrossentropy(from_logits=True, ignore_class=None)",
                "SparseCategoricalCrossentropy",
                (("from_logits", True), ("ignore_class", None)),
            ),
        ),
    ],
)
def test_parse_loss(text: str, expected: LossChoice) -> None:
    assert parse_loss(text) == expected


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("mse(", "expected compiled, a Keras loss name"),
        ("Huber(2.0)", "give arguments by name, as from_logits=True"),
        ("Huber(delta=open('x'))", "delta= must be a literal"),
        ("compiled(x=1)", "compiled takes no arguments"),
        ("Huber(delta=)", "the arguments are not Python syntax"),
    ],
)
def test_parse_loss_refuses(text: str, said: str) -> None:
    with pytest.raises(UsageError, match=r"^--loss ") as caught:
        parse_loss(text)
    assert said in str(caught.value)


def test_loss_choices_from_the_api() -> None:
    def my_loss(y_true: object, y_pred: object) -> object:
        return y_pred

    assert loss_choices(None) == ()
    assert loss_choices(["mse", "mae"]) == (parse_loss("mse"), parse_loss("mae"))
    assert loss_choices({"price": "mse"}) == (LossChoice("price", "mse", "mse"),)
    (chosen,) = loss_choices({"price": my_loss})
    assert (chosen.output, chosen.name, chosen.callable) == ("price", "my_loss", my_loss)
    with pytest.raises(UsageError, match="names an output too"):
        loss_choices({"price": "kind=mse"})
    with pytest.raises(UsageError, match="saw int"):
        loss_choices(3)


def test_freeze_globs() -> None:
    assert freeze_globs("base") == ("base",)
    assert freeze_globs(["base", "!base/block_9*"]) == ("base", "!base/block_9*")
    with pytest.raises(UsageError, match="saw '!'"):
        freeze_globs(["!"])


def test_which_paths_are_saved_models(tmp_path: Path) -> None:
    (tmp_path / "savedmodel").mkdir()
    (tmp_path / "savedmodel" / "saved_model.pb").write_bytes(b"")
    (tmp_path / "plain").mkdir()
    with zipfile.ZipFile(tmp_path / "weights.bin", "w") as archive:
        archive.writestr("config.json", "{}")
    (tmp_path / "spec.yaml").write_text("gradscope: 1\n")
    saved = ["missing.keras", "missing.h5", "model.hdf5", "savedmodel", "weights.bin"]
    assert all(is_saved_target(str(tmp_path / n)) for n in saved)
    others = ("plain", "spec.yaml", "pkg.models:build", "train.py:build")
    assert not any(is_saved_target(str(tmp_path / n)) for n in others)
    assert is_saved_target(tmp_path / "savedmodel")  # a pathlib.Path too
