"""The YAML loader: positions, merge keys, and safety against hostile files."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gradscope._src.errors import SpecErrors
from gradscope._src.frontends.yaml.loader import MAX_ALIAS_NODES, load_yaml
from gradscope._src.frontends.yaml.tree import YMap, YScalar, YSeq, plain
from gradscope._src.results.expect import Pos


def _load(write_spec, text: str) -> YMap:
    root = load_yaml(write_spec(text))
    assert isinstance(root, YMap)
    return root


def _error(path: str) -> str:
    with pytest.raises(SpecErrors) as info:
        load_yaml(path)
    assert len(info.value.errors) >= 1
    return str(info.value)


def test_loader_keeps_key_value_and_item_positions(write_spec):
    root = _load(write_spec, "a: 1\nb:\n  - x\n  - {c: true}\n")
    a, b = root.entries
    assert a.key_pos == Pos(1, 1) and a.value.pos == Pos(1, 4)
    assert isinstance(b.value, YSeq)
    assert [item.pos for item in b.value.items] == [Pos(3, 5), Pos(4, 5)]
    assert plain(root) == {"a": 1, "b": ["x", {"c": True}]}


def test_loader_reads_exponent_floats_as_yaml_1_2_does(write_spec):
    root = _load(write_spec, "a: 1e-3\nb: 2E5\nc: 1.5\nd: '1e-3'\n")
    assert plain(root) == {"a": 0.001, "b": 200000.0, "c": 1.5, "d": "1e-3"}


def test_loader_keeps_dates_as_text(write_spec):
    assert plain(_load(write_spec, "a: 2020-01-18\n")) == {"a": "2020-01-18"}


def test_loader_applies_merge_keys_with_explicit_keys_winning(write_spec):
    root = _load(
        write_spec,
        "base: &b {shape: [2], dtype: int32}\nuse:\n  <<: *b\n  dtype: float64\n",
    )
    use = root.get("use")
    assert use is not None and isinstance(use.value, YMap)
    assert plain(use.value) == {"dtype": "float64", "shape": [2]}
    shape = use.value.get("shape")
    assert shape is not None and shape.key_pos == Pos(1, 11)  # where it was written


def test_loader_merges_a_list_of_mappings_first_wins(write_spec):
    root = _load(write_spec, "a: &a {x: 1}\nb: &b {x: 2, y: 3}\nc:\n  <<: [*a, *b]\n")
    c = root.get("c")
    assert c is not None and plain(c.value) == {"x": 1, "y": 3}


def test_loader_reports_every_duplicate_key(write_spec):
    message = _error(write_spec("a: 1\nb: {c: 1, c: 2}\na: 3\n"))
    assert "spec.yaml:2:11: duplicate key 'c', first written at line 2" in message
    assert "spec.yaml:3:1: duplicate key 'a', first written at line 1" in message


def test_loader_refuses_an_alias_bomb_fast(write_spec):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    start = time.monotonic()
    message = _error(write_spec("\n".join(lines)))
    assert time.monotonic() - start < 5
    assert f"aliases expand to more than {MAX_ALIAS_NODES} values" in message


def test_loader_refuses_recursive_aliases(write_spec):
    assert "nested deeper than" in _error(write_spec("a: &x [*x, *x]\n"))


def test_loader_refuses_deep_nesting(write_spec):
    assert "nested deeper than" in _error(write_spec("a: " + "[" * 3000 + "]" * 3000 + "\n"))


@pytest.mark.parametrize(
    "text",
    [
        "a: !!python/object/apply:os.system ['true']\n",
        "a: !!python/name:os.system\n",
        "a: !!binary aGVsbG8=\n",
        "a: !!set {x: null}\n",
        "a: !custom 1\n",
        "!!python/str a: 2\n",
    ],
)
def test_loader_refuses_non_plain_tags(write_spec, text: str):
    assert "is not allowed" in _error(write_spec(text))


def test_loader_accepts_standard_explicit_tags(write_spec):
    assert plain(_load(write_spec, "a: !!str 5\nb: !!float 1\n")) == {"a": "5", "b": 1.0}


def test_loader_reports_invalid_tagged_scalars(write_spec):
    assert "'x' is not a valid !!int" in _error(write_spec("a: !!int x\n"))


def test_loader_reports_integers_too_long_to_read(write_spec):
    assert "is not a valid !!int" in _error(write_spec("a: " + "9" * 5000 + "\n"))


def test_loader_refuses_complex_keys(write_spec):
    assert "a key must be a plain name" in _error(write_spec("? [a, b]\n: 1\n"))


def test_loader_locates_bad_utf8(tmp_path: Path):
    path = tmp_path / "x.yaml"
    path.write_bytes(b"a: 1\nbb: \xff\n")
    assert _error(str(path)) == f"{path}:2:5: not UTF-8 text (binary data?): byte 0xff"


def test_loader_locates_control_characters(tmp_path: Path):
    path = tmp_path / "x.yaml"
    path.write_bytes(b"a: 1\nb: \x00\n")
    assert "x.yaml:2:4: not a text file (binary data?): control character U+0000" in _error(
        str(path)
    )


def test_loader_accepts_a_byte_order_mark(tmp_path: Path):
    path = tmp_path / "x.yaml"
    path.write_bytes("\ufeffa: 1\n".encode())
    assert plain(load_yaml(str(path))) == {"a": 1}


@pytest.mark.parametrize("content", [b"", b"  \n\n", b"# only a comment\n"])
def test_loader_refuses_empty_files(tmp_path: Path, content: bytes):
    path = tmp_path / "x.yaml"
    path.write_bytes(content)
    assert _error(str(path)).startswith(f"{path}:1:1: ")


def test_loader_refuses_a_directory_and_a_missing_file_with_no_line(tmp_path: Path):
    """A file that is not there has no line 1: the message names the file alone."""
    assert _error(str(tmp_path)) == f"{tmp_path}: is a directory, expected a YAML spec file"
    missing = tmp_path / "nope.yaml"
    assert _error(str(missing)) == f"{missing}: no such file"


def test_loader_syntax_error_is_one_located_line(write_spec):
    message = _error(write_spec("a: [1, 2\nb: 3\n"))
    assert "\n" not in message
    assert message.split(": ", 1)[1].startswith("YAML syntax error")


def test_loader_scalar_root_is_a_scalar(write_spec):
    root = load_yaml(write_spec("just text\n"))
    assert isinstance(root, YScalar) and root.value == "just text"
