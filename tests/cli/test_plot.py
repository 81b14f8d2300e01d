"""``gradscope plot``: the picture files of a real run, bad input, and no TensorFlow import."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from gradscope._src.timeline.record import write
from tests.conftest import RunCli
from tests.timeline.test_plot import deep_timeline


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.tf
def test_plot_writes_png_svg_and_html_of_a_real_run(tmp_path: Path) -> None:
    import matplotlib.image

    from tests.timeline import scenarios

    run = scenarios.dying_relu()
    for suffix in ("png", "svg", "html"):
        out = tmp_path / f"norms.{suffix}"
        code, stdout, stderr = _invoke("plot", str(run.path), "-o", str(out))
        assert (code, stdout, stderr) == (0, "", "")
        data = out.read_bytes()
        if suffix == "png":
            assert matplotlib.image.imread(io.BytesIO(data), format="png").ndim == 3
        elif suffix == "svg":
            assert ET.fromstring(data).tag.endswith("svg")
        else:
            page = data.decode("utf-8")
            assert "<svg" in page and "<script" not in page and "src=" not in page
            assert all(f["variable"] in page for f in run.timeline["findings"])


def test_plot_refuses_an_unknown_picture_format(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    write(str(path), deep_timeline(layers=2))
    code, _, stderr = _invoke("plot", str(path), "-o", str(tmp_path / "norms.jpg"))
    assert code == 2
    assert (
        stderr
        == f"gradscope plot: {tmp_path / 'norms.jpg'}: expected a .png, .svg or .html file name\n"
    )
    assert not (tmp_path / "norms.jpg").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot read"),
        ("{not json", "not JSON"),
        ('{"gradscope": 1, "losses": {}}', "not a gradscope timeline"),
    ],
)
def test_plot_bad_timeline_is_one_line_exit_2(
    tmp_path: Path, text: str | None, message: str
) -> None:
    path = tmp_path / "t.json"
    if text is not None:
        path.write_text(text)
    code, _, stderr = _invoke("plot", str(path), "-o", str(tmp_path / "n.png"))
    assert code == 2 and message in stderr and stderr.startswith("gradscope plot: ")
    assert stderr.count("\n") == 1


def test_plot_never_imports_tensorflow(
    tmp_path: Path, run_cli: RunCli, no_tensorflow: dict[str, str]
) -> None:
    path = tmp_path / "t.json"
    write(str(path), deep_timeline(layers=3))
    done = run_cli("plot", str(path), "-o", str(tmp_path / "n.svg"), env=no_tensorflow)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "n.svg").stat().st_size > 1000
