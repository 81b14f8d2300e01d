"""Bad saved-model files: one line ``FILE: message``, exit 2, no traceback, and never a byte of
them read as YAML; refused before TensorFlow is imported wherever the bytes tell."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, RunCli

#: Each bad file and the start of its one line (after ``gradscope inspect: ``; a spec's
#: errors are ``FILE:LINE:COLUMN:`` lines of their own).
BAD = {
    "notkeras.keras": "notkeras.keras: a zip archive but not a Keras model file: it holds no "
    "config.json (it holds notes.txt)",
    "cut.keras": "cut.keras: truncated or damaged: the zip archive has no central directory",
    "empty.keras": "empty.keras: the file is empty, expected a Keras model file",
    "text.keras": "text.keras: not a zip archive, so not a Keras model file",
    "model.zip": "model.zip: a zip archive: a Keras model file must be named *.keras",
    "weights.h5": "weights.h5: holds weights only (model.save_weights), not a model",
    "cut.h5": "cut.h5: truncated: ",
    "noise.h5": "noise.h5: not an HDF5 file, so not a Keras model in the legacy .h5 format",
    "huge.h5": "huge.h5: too large for memory: its weights take 2.0 TiB, and loading holds "
    "them twice (4.0 TiB), more than the ",
    "blob.bin": "blob.bin:1:1: a binary file, not a YAML spec (a saved Keras model is a .keras "
    "or "
    ".h5 file; inspect, check, diff and graph load it)",
    "missing.keras": "missing.keras: no such file",
}


def _write_bad_files(folder: Path) -> None:
    import h5py

    with zipfile.ZipFile(folder / "notkeras.keras", "w") as archive:
        archive.writestr("notes.txt", "not a model")
    with zipfile.ZipFile(folder / "whole.keras", "w") as archive:
        archive.writestr("config.json", "{}")
        archive.writestr("model.weights.h5", b"\0" * 4096)
    data = (folder / "whole.keras").read_bytes()
    (folder / "cut.keras").write_bytes(data[: len(data) // 2])
    (folder / "model.zip").write_bytes(data)
    (folder / "empty.keras").write_bytes(b"")
    (folder / "text.keras").write_text("gradscope: 1\n")
    with h5py.File(folder / "weights.h5", "w") as handle:
        handle.create_dataset("kernel", data=[[1.0, 2.0]])
    with h5py.File(folder / "whole.h5", "w") as handle:
        handle.attrs["model_config"] = json.dumps({"class_name": "Sequential"})
        handle.create_dataset("kernel", data=[[1.0] * 64] * 64)
    data = (folder / "whole.h5").read_bytes()
    (folder / "cut.h5").write_bytes(data[: len(data) - 1024])
    (folder / "noise.h5").write_bytes(bytes(range(256)))
    with open(folder / "huge.h5", "wb") as stream:  # sparse: 2 TiB on no disk
        stream.write(b"\x89HDF\r\n\x1a\n")
        stream.truncate(2**41)
    (folder / "blob.bin").write_bytes(b"\x00\x01binary\xff" * 64)


_RUN_ALL = """
import json, sys
from click.testing import CliRunner
from gradscope._src.cli import main
out = {}
for name in sys.argv[1:]:
    result = CliRunner().invoke(main, ["inspect", name, "--loss", "mse"])
    out[name] = [result.exit_code, result.stderr]
print(json.dumps(out))
"""


def test_bad_files_are_one_line_without_tensorflow(
    tmp_path: Path, no_tensorflow: dict[str, str]
) -> None:
    _write_bad_files(tmp_path)
    env = {**no_tensorflow, "PYTHONPATH": no_tensorflow["PYTHONPATH"] + f":{ROOT}"}
    done = subprocess.run([sys.executable, "-c", _RUN_ALL, *BAD], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    results = json.loads(done.stdout)
    for name, start in BAD.items():
        code, stderr = results[name]
        assert code == 2, (name, stderr)
        prefix = "" if name == "blob.bin" else "gradscope inspect: "
        assert stderr.startswith(prefix + start), (name, stderr)
        assert len(stderr.splitlines()) == 1, (name, stderr)  # no traceback, no import


def test_a_directory_that_is_no_savedmodel_stays_a_spec_error(
    tmp_path: Path, run_cli: RunCli
) -> None:
    (tmp_path / "models").mkdir()
    result = run_cli("inspect", "models", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        2, "gradscope inspect: models: is a directory, expected a YAML spec file\n")  # fmt: skip


def test_validate_names_a_saved_model(tmp_path: Path, run_cli: RunCli) -> None:
    with zipfile.ZipFile(tmp_path / "model.keras", "w") as archive:
        archive.writestr("config.json", "{}")
    result = run_cli("validate", "model.keras", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "gradscope validate: model.keras is a saved model: validate reads spec files only, "
        "without TensorFlow; a saved model's gradients are checked by loading it: gradscope "
        "check model.keras\n"
    )


LAYERS = """
    import keras


    @keras.saving.register_keras_serializable(package="shop")
    class Doubler(keras.layers.Layer):
        def build(self, shape):
            self.spare = self.add_weight(shape=(), name="spare")  # never used: never trained

        def call(self, x):
            return x * 2.0
"""


@pytest.mark.tf
def test_custom_objects_and_safe_mode(tmp_path: Path, run_cli: RunCli) -> None:
    import keras

    (tmp_path / "shop_layers.py").write_text(textwrap.dedent(LAYERS))
    sys.path.insert(0, str(tmp_path))
    try:
        from shop_layers import Doubler  # type: ignore[import-not-found]

        model = keras.Sequential([keras.Input((3,)), Doubler(name="double"),
                                  keras.layers.Dense(1, name="out")])  # fmt: skip
        model.save(tmp_path / "custom.keras")
    finally:  # as a new process has it: the class neither imported nor registered
        sys.path.remove(str(tmp_path))
        sys.modules.pop("shop_layers", None)
        keras.saving.get_custom_objects().pop("shop>Doubler", None)
    lambdas = keras.Sequential([keras.Input((3,)), keras.layers.Lambda(lambda t: t * 2.0,
                                name="double"), keras.layers.Dense(1, name="out")])  # fmt: skip
    lambdas.save(tmp_path / "lambda.keras")

    missing = run_cli("inspect", "custom.keras", "--loss", "mse", cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (2, (
        "gradscope inspect: custom.keras: the model uses the custom class 'shop>Doubler', which "
        "Keras cannot find: pass the module that defines it, --custom-objects "
        "my_module:Doubler (or path/to/file.py:Doubler; importing it runs that module's code)\n"
    ))  # fmt: skip
    given = run_cli("check", "custom.keras", "--loss", "mse", "--custom-objects",
                    "shop_layers:Doubler", "-q", "--format", "json", cwd=tmp_path)  # fmt: skip
    assert given.returncode == 1, given.stderr  # loaded; the CI gate fails on the spare weight
    (problem,) = json.loads(given.stdout)["problems"]
    assert (problem["variable"], problem["kind"]) == ("double/spare", "never-trained")
    keras.saving.get_custom_objects().pop("shop>Doubler", None)  # registered by the import
    typo = run_cli("inspect", "custom.keras", "--custom-objects", "shop_layers:Dubler",
                   cwd=tmp_path)  # fmt: skip
    assert typo.stderr.startswith(
        "gradscope inspect: --custom-objects shop_layers:Dubler: the "
        "module has no function 'Dubler' (did you mean 'Doubler'?)"
    )

    from keras.src.backend.common import global_state

    keras.config.enable_unsafe_deserialization()  # a notebook's setting: gradscope stays safe
    try:
        refused = run_cli("inspect", "lambda.keras", "--loss", "mse", cwd=tmp_path)
    finally:
        global_state.set_global_attribute("safe_mode_saving", None)  # Keras' default again
    assert (refused.returncode, refused.stderr) == (2, (
        "gradscope inspect: lambda.keras: layer double (Lambda) holds Python bytecode that "
        "loading would run; gradscope loads with Keras' safe_mode on. If you trust the file as "
        "you trust your own code, --no-safe-mode loads it (Keras' safe_mode=False: the code in "
        "the file runs)\n"
    ))  # fmt: skip
    trusted = run_cli("inspect", "lambda.keras", "--loss", "mse", "--no-safe-mode", "-q",
                      cwd=tmp_path)  # fmt: skip
    assert trusted.returncode == 0, trusted.stderr
