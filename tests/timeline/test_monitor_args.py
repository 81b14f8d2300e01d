"""``Monitor(...)`` refuses a wrong argument or an output it cannot write when it is made,
before any training, with a message naming what it saw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.tf


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"every": 2.5}, TypeError, "every must be a whole number of steps, saw 2.5"),
        ({"every": "3"}, TypeError, "every must be a whole number of steps, saw '3'"),
        ({"every": True}, TypeError, "every must be a whole number of steps, saw True"),
        ({"every": 0}, ValueError, "every must be 1 or more steps, saw 0"),
        ({"every": -2}, ValueError, "every must be 1 or more steps, saw -2"),
        ({"thresholds": "x"}, TypeError, "thresholds must be a gradscope.keras.Thresholds"),
        ({"timeline": 3}, TypeError, "timeline must be a path or None, saw 3"),
        ({"tensorboard": ""}, ValueError, "tensorboard must be a path or None, saw an empty"),
        ({"histograms": "yes"}, TypeError, "histograms must be True or False, saw 'yes'"),
        ({"per_loss": 1}, TypeError, "per_loss must be True or False, saw 1"),
    ],
)
def test_a_wrong_argument_is_refused_when_the_monitor_is_made(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    import gradscope
    from gradscope.keras import Monitor

    with pytest.raises(error, match=f"^gradscope.keras.Monitor: {message}") as raised:
        Monitor(**options)
    assert isinstance(raised.value, gradscope.UsageError)  # as every public argument's


def test_right_arguments_of_every_accepted_type_are_accepted(tmp_path: Path) -> None:
    from gradscope._src.timeline import Thresholds
    from gradscope.keras import Monitor

    monitor = Monitor(
        every=np.int64(3),
        timeline=tmp_path / "new" / "deeper" / "t.json",  # directories made when written
        tensorboard=str(tmp_path / "tb"),
        thresholds=Thresholds(),
        histograms=False,
        per_loss=False,
    )
    assert monitor.recorder.every == 3


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"timeline": "afile/t.json"}, NotADirectoryError,
         "cannot write the timeline to 'afile/t.json': '.*afile' is a file, not a directory"),
        ({"timeline": "afile/sub/t.json"}, NotADirectoryError, "'.*afile' is a file"),
        ({"timeline": "adir"}, IsADirectoryError,
         "cannot write the timeline to 'adir': it is a directory"),
        ({"tensorboard": "afile"}, NotADirectoryError,
         "cannot write TensorBoard files to 'afile': '.*afile' is a file, not a directory"),
        ({"tensorboard": "afile/logs"}, NotADirectoryError, "'.*afile' is a file"),
    ],
)  # fmt: skip
def test_an_output_that_cannot_be_written_is_refused_when_the_monitor_is_made(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    options: dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    from gradscope.keras import Monitor

    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("a file")
    (tmp_path / "adir").mkdir()
    with pytest.raises(error, match=message):
        Monitor(every=1, **options)


def test_every_beyond_int64_is_refused_when_the_monitor_is_made() -> None:
    """`Monitor(every=2**70)` was accepted, then `fit` raised OverflowError (`step % every`
    on int64 steps)."""
    from gradscope._src.timeline import Recorder
    from gradscope.keras import Monitor

    said = r"^gradscope\.keras\.Monitor: every must be at most 2\*\*63-1 steps \(int64\), saw "
    with pytest.raises(ValueError, match=said + str(2**70) + "$"):
        Monitor(every=2**70)
    with pytest.raises(ValueError, match=r"every must be from 1 to 2\*\*63-1 steps"):
        Recorder(every=2**63)
    assert Monitor(every=2**63 - 1).recorder.every == 2**63 - 1
