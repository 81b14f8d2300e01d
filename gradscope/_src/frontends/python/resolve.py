"""From ``module.path:function``, ``path/to/file.py:function`` or an object to a checked Target.

Every way this can fail (no such module, file or function, the user's code raising, a wrong
return value) is a ``TargetError``: one line, exit code 2. The user's own exception is kept as
the error's ``__cause__``, so ``gradscope --traceback`` shows its traceback.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from gradscope._src.errors import TargetError
from gradscope._src.frontends.python import frames
from gradscope._src.frontends.python.ending import TargetEnded
from gradscope._src.frontends.python.precheck import looks_like_pytest_id
from gradscope._src.frontends.python.target import Target, article, coerce, expectations
from gradscope._src.frontends.python.target import _check_callable as check_callable
from gradscope._src.printable import is_printable, printable
from gradscope._src.results.expect import Expectation

_ATTR = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_MODULE = re.compile(rf"^(?P<module>{_ATTR}):(?P<attr>{_ATTR})$")
_FILE = re.compile(rf"^(?P<path>.+\.py):(?P<attr>{_ATTR})$")
_NOT_WORD = re.compile(r"\W")
_TRACEBACK_HINT = "(--traceback shows the traceback)"

Recording = Callable[[], AbstractContextManager[Any]]


@dataclass(frozen=True)
class Resolved:
    """A checked target and where it came from."""

    target: Target
    label: str  # how reports name it: the target string as given
    site: frames.Site | None  # the function that returned it
    lines: tuple[str, ...] = ()  # that function's source, for expectation positions

    @property
    def file(self) -> str:
        """The file problems point into (the target function's), relative when possible."""
        return frames.display_path(self.site.filename) if self.site else self.label

    @property
    def line(self) -> int:
        return self.site.line if self.site else 1

    def expectations(self) -> tuple[Expectation, ...]:
        return expectations(self.target, self.lines, self.line)


def is_target_string(text: str) -> bool:
    """Whether ``text`` names a Python target rather than a spec file.

    A path that exists (as a file, FIFO, anything but a ``.py`` file) is always a spec, and
    so is a name ending in ``.yaml``, ``.yml`` or ``.json``: a spec named
    ``configs/x.py:y.yaml`` (which a glob such as ``configs/*.yaml`` passes on) must never
    run ``configs/x.py``.
    """
    if text.endswith((".yaml", ".yml", ".json")):
        return False
    if os.path.lexists(text) and not text.endswith(".py"):
        return False
    if looks_like_pytest_id(text):  # file.py::fn: a target, spelled as pytest would
        return True
    return bool(_FILE.match(text) or _MODULE.match(text)) or text.endswith((".py", ":"))


def resolve(obj: Any, recording: Recording = nullcontext) -> Resolved:
    """Import and call a target, or check a Target, mapping or callable given directly.

    Args:
        obj: ``"pkg.module:function"``, ``"path/file.py:function"``, a ``Target``, a mapping
            with the same keys, or a zero-argument callable returning one of those.
        recording: a context manager factory wrapped around the import and the call (the
            caller records where variables are created).

    Raises:
        TargetError: anything about the target is wrong; one line, naming the place.
    """
    if isinstance(obj, str):
        if not is_printable(obj):  # shown in every report: a newline could forge lines
            raise TargetError(f"{printable(obj)}: the target has control characters; rename it")
        function, label, path = _load(obj, recording)
        return _call(function, label, path, recording)
    if isinstance(obj, (Target, Mapping)):
        name = obj.name if isinstance(obj, Target) else obj.get("name")
        label = str(name or "<python target>")
        target = coerce(obj, label)
        site = next((s for s in map(frames.of_code, target.losses.values()) if s), None)
        return Resolved(target, label, site)
    if callable(obj):
        module = getattr(obj, "__module__", None) or "<python>"
        label = f"{module}:{getattr(obj, '__qualname__', type(obj).__name__)}"
        return _call(obj, label, None, recording)
    raise TargetError(
        f"expected a spec path, a target string (module:function or file.py:function), a "
        f"gradscope.Target, a mapping or a callable, saw {type(obj).__name__}"
    )


def import_named(text: str) -> Any:
    """The object ``module.path:NAME`` or ``path/to/file.py:NAME`` names (a custom Keras class
    a saved model needs), imported as a target's function is: checked first without running
    anything, then imported from the current directory and ``sys.path``.

    Raises:
        TargetError: no such module, file or name, or the import raised.
    """
    from gradscope._src.frontends.python.precheck import precheck

    precheck(text)
    obj, _label, _directory = _load(text, nullcontext)
    return obj


@contextlib.contextmanager
def _on_sys_path(directory: str) -> Iterator[None]:
    """``directory`` first on ``sys.path`` while the user's module imports its neighbours."""
    added = directory not in sys.path
    if added:
        sys.path.insert(0, directory)
    try:
        yield
    finally:
        if added and directory in sys.path:
            sys.path.remove(directory)


def _load(text: str, recording: Recording) -> tuple[Callable[..., Any], str, str]:
    """The target function named by ``text``, and the directory to keep on ``sys.path``."""
    if text.endswith(":"):
        raise TargetError(f"{text}: name the function after the colon, as {text}build")
    match = _FILE.match(text)
    if match:
        path = Path(match["path"])
        if not path.is_file():
            raise TargetError(f"{text}: no such file: {match['path']}")
        directory = str(path.resolve().parent)
        module = _load_file(text, path, directory, recording)
        return _attribute(text, module, match["attr"]), text, directory
    match = _MODULE.match(text)
    if match is None:
        raise TargetError(f"{text}: name the function that builds the target, as {text}:build")
    directory = os.getcwd()
    module = _import(text, match["module"], directory, recording)
    return _attribute(text, module, match["attr"]), text, directory


def _import(text: str, name: str, directory: str, recording: Recording) -> ModuleType:
    with _on_sys_path(directory), recording():
        try:
            return frames.call_user(lambda: importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                raise TargetError(
                    f"{text}: no module named {exc.name!r} "
                    "(looked in the current directory and on sys.path)"
                ) from exc
            raise _raised(text, f"importing {name!r} raised", exc) from exc
        except (Exception, SystemExit) as exc:
            raise _raised(text, f"importing {name!r} raised", exc) from exc


def _load_file(text: str, path: Path, directory: str, recording: Recording) -> ModuleType:
    """Execute a loose file as a fresh module under a name no other module has."""
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:8]
    stem = _NOT_WORD.sub("_", path.stem)
    name = f"_gradscope_target_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise TargetError(f"{text}: cannot load {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    with _on_sys_path(directory), recording():
        try:
            frames.call_user(lambda: spec.loader.exec_module(module))  # type: ignore[union-attr]
        except (Exception, SystemExit) as exc:
            del sys.modules[name]
            raise _raised(
                text, f"loading {frames.display_path(str(resolved))} raised", exc
            ) from exc
    return module


def _attribute(text: str, module: ModuleType, attr: str) -> Callable[..., Any]:
    try:
        value: Any = functools.reduce(getattr, attr.split("."), module)
    except AttributeError:
        defined = sorted(
            k for k, v in vars(module).items() if callable(v) and not k.startswith("_")
        )
        close = difflib.get_close_matches(attr, defined, n=1)
        hint = (
            f"did you mean {close[0]!r}?" if close else f"it defines {', '.join(defined) or 'none'}"
        )
        raise TargetError(f"{text}: the module has no function {attr!r} ({hint})") from None
    if not callable(value):
        raise TargetError(f"{text}: {attr!r} is {article(type(value).__name__)}, not a function")
    return value  # type: ignore[no-any-return]


def _call(
    function: Callable[..., Any], label: str, directory: str | None, recording: Recording
) -> Resolved:
    check_callable(function, "the target function", label)
    around = _on_sys_path(directory) if directory else nullcontext()
    with around, recording():
        try:
            value = frames.call_user(function)
        except (Exception, SystemExit) as exc:
            raise _raised(label, "raised", exc) from exc
    site = frames.of_code(function)
    try:
        lines, first = inspect.getsourcelines(function)
        if site is not None:
            site = frames.Site(site.filename, first)
    except (OSError, TypeError):
        lines = []
    return Resolved(coerce(value, label), label, site, tuple(lines))


def _raised(label: str, verb: str, exc: BaseException) -> TargetError:
    """``FILE:LINE: label raised Type: message (--traceback shows the traceback)``."""
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f"{frames.display_path(exc.filename)}:{exc.lineno or 1}: "
    else:
        site = frames.of_exception(exc)
        where = f"{site}: " if site else ""
    if isinstance(exc, TargetEnded):  # sys.exit, a BaseException: said as it is
        return exc
    if isinstance(exc, TargetError):  # gradscope's own helper refused (gradscope.keras.targets)
        return TargetError(f"{where}{label}: {exc}", cause=exc)
    message = f"{where}{label} {verb} {frames.first_message_line(exc)} {_TRACEBACK_HINT}"
    return TargetError(message, cause=exc)
