"""numpy reading an eager tensor: seen at the user's line, numpy's dispatch untouched.

numpy reads an eager tensor through the buffer protocol (PEP 3118): ``np.tanh(model(x))``,
``np.asarray(t)`` and ``np.mean(w * 2.0)`` run no Python method of the tensor, so nothing
would say that the value left TensorFlow there (and a loss rebuilt from it by
``tf.convert_to_tensor`` gets None). numpy asks for the buffer through the tensor type's
``tp_as_buffer`` slot, before any other protocol (``__array__`` is never called). While
gradscope watches, that slot points at a ``PyBufferProcs`` of gradscope's own whose
``bf_getbuffer`` notes the read (:func:`install`'s ``note``), then calls TensorFlow's own,
which fills the buffer as always. Nothing numpy dispatches on changes (no
``__array_ufunc__``, no ``__array_function__``, no priority): ``a + t``, ``a.__add__(t)``,
``sum([a, t])``, masked arrays, ``ndarray`` subclasses and pandas compute exactly what they
compute unwatched; only the reads numpy makes are seen.

One thing a ctypes callback cannot do is hand TensorFlow's own refusal back with its
exception: a buffer TensorFlow refuses (a resource handle's, a writable one) fails as it
does unwatched, without the ``BufferError``; numpy clears it and reads the tensor another way,
as it does unwatched, and only a direct ``memoryview(handle)`` sees a ``SystemError``.

The slot is set only where its layout is checked first: CPython, the type's own name, basic
size, item size and flags read where ``PyTypeObject`` keeps them (:func:`_layout`); anywhere
else nothing is patched and numpy's reads are not seen (:data:`UNSEEN` says so in the
report). What the program called is read from its line: the call the user's frame runs
(``np.tanh()``, ``pd.Series()``), through the positions CPython keeps per instruction.
"""

from __future__ import annotations

import _thread
import ctypes
import functools
import importlib.util
import linecache
import os
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from gradscope._src.frontends.python import frames

#: The report's note when the slot cannot be patched here.
UNSEEN = ("numpy's reads of a tensor (np.asarray, np.tanh(t), ...) are not seen on this Python "
          "interpreter: a value that leaves TensorFlow there is not named")  # fmt: skip

_POINTER = ctypes.sizeof(ctypes.c_void_p)
#: ``PyTypeObject``'s fields, in pointer-sized words (CPython 3.8 to 3.13, no Py_TRACE_REFS):
#: ob_refcnt, ob_type, ob_size, tp_name, tp_basicsize, tp_itemsize, ... tp_as_buffer (20),
#: tp_flags (21).
_NAME, _BASICSIZE, _ITEMSIZE, _AS_BUFFER, _FLAGS = 3, 4, 5, 20, 21
_WRITABLE = 0x0001  # PyBUF_WRITABLE


class _BufferProcs(ctypes.Structure):
    _fields_ = [("bf_getbuffer", ctypes.c_void_p), ("bf_releasebuffer", ctypes.c_void_p)]


_GETBUFFER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p, ctypes.c_int)
#: TensorFlow's own getbuffer is called with the GIL held (CFUNCTYPE would release it, and
#: TensorFlow makes a numpy array inside).
_ORIGINAL = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p, ctypes.c_int)


class _Slot:
    """The buffer slot of one type, and gradscope's procs for it (made once, kept alive for
    the process: a thread that read the slot just before it was put back may still call)."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.address = id(cls) + _AS_BUFFER * _POINTER
        self.theirs = ctypes.c_void_p.from_address(self.address).value
        procs = _BufferProcs.from_address(self.theirs)  # type: ignore[arg-type]
        self.original = _ORIGINAL(procs.bf_getbuffer)
        self.note: Callable[[Any, FrameType], None] | None = None
        self.hook = _GETBUFFER(self._getbuffer)
        self.mine = _BufferProcs(ctypes.cast(self.hook, ctypes.c_void_p).value,
                                 procs.bf_releasebuffer)  # fmt: skip
        self.local = threading.local()

    def _getbuffer(self, obj: Any, view: int, flags: int) -> int:
        field = None
        try:
            field = ctypes.c_void_p.from_address(view + _POINTER)  # Py_buffer.obj
            field.value = None  # what a refused export leaves: told apart from a filled one
            self._note(obj, flags)
            return int(self.original(obj, view, flags))
        except BaseException as exc:
            # TensorFlow refused (a writable buffer, a resource tensor): its exception cannot
            # cross a ctypes callback back into C, and the caller gets the failure without
            # it (numpy clears it and reads the tensor another way). Or Ctrl-C came while
            # this ran: the program gets it just after.
            if isinstance(exc, KeyboardInterrupt):
                _thread.interrupt_main()
            return 0 if field is not None and field.value else -1

    def _note(self, obj: Any, flags: int) -> None:
        """``note`` the read (not a request to write; not gradscope's own, while noting)."""
        note = self.note
        if note is None or flags & _WRITABLE or getattr(self.local, "in", False):
            return
        self.local.__dict__["in"] = True
        try:
            note(obj, sys._getframe(2))
        except KeyboardInterrupt:  # Ctrl-C while noting: the program gets it just after
            _thread.interrupt_main()
        except BaseException:  # gradscope's failure never reaches numpy
            pass
        finally:
            self.local.__dict__["in"] = False

    def own(self) -> bool:
        return bool(ctypes.c_void_p.from_address(self.address).value == ctypes.addressof(self.mine))

    def set(self, note: Callable[[Any, FrameType], None]) -> None:
        self.note = note
        ctypes.c_void_p.from_address(self.address).value = ctypes.addressof(self.mine)

    def put_back(self) -> None:
        """TensorFlow's procs back, unless the slot was changed since (then left as it is,
        and gradscope's hook, still reachable, only calls TensorFlow's)."""
        self.note = None
        if self.own():
            ctypes.c_void_p.from_address(self.address).value = self.theirs


_slots: dict[type, _Slot] = {}


def install(cls: type, note: Callable[[Any, FrameType], None]) -> Callable[[], None] | None:
    """Note each buffer read of an instance of ``cls`` (``note(obj, caller_frame)``, in the
    thread that reads, before TensorFlow fills the buffer); returns what puts the slot back,
    or None when the slot cannot be patched safely here (nothing was touched)."""
    if not _layout(cls):
        return None
    slot = _slots.get(cls)
    if slot is None:
        slot = _slots[cls] = _Slot(cls)
    if ctypes.c_void_p.from_address(slot.address).value not in (
        slot.theirs,
        ctypes.addressof(slot.mine),
    ):
        return None  # someone else's procs: left alone  # fmt: skip
    slot.set(note)
    return slot.put_back


def _layout(cls: type) -> bool:
    """Whether ``cls``'s type object reads as ``PyTypeObject`` is laid out here: CPython,
    and its name, sizes and flags where the slot's offset assumes them, with buffer procs."""
    if sys.implementation.name != "cpython" or hasattr(sys, "gettotalrefcount"):
        return False
    if sys.version_info >= (3, 14):  # an interpreter this layout was not checked against
        return False
    base = id(cls)
    try:
        name = ctypes.c_char_p.from_address(base + _NAME * _POINTER).value or b""
        sizes = (ctypes.c_ssize_t.from_address(base + _BASICSIZE * _POINTER).value,
                 ctypes.c_ssize_t.from_address(base + _ITEMSIZE * _POINTER).value)  # fmt: skip
        flags = ctypes.c_ulong.from_address(base + _FLAGS * _POINTER).value
        procs = ctypes.c_void_p.from_address(base + _AS_BUFFER * _POINTER).value
    except (ValueError, OSError):
        return False
    qualified = f"{cls.__module__}.{cls.__qualname__}".encode()
    if name not in (qualified, cls.__name__.encode()):
        return False
    if sizes != (cls.__basicsize__, cls.__itemsize__) or flags != cls.__flags__:
        return False
    return procs is not None and bool(_BufferProcs.from_address(procs).bf_getbuffer)


# -- what the program called ---------------------------------------------------------------

#: Libraries whose own reads of a tensor are not the program's (TensorFlow converting for
#: itself, Keras' logs and progress bar): noted only through ``Recorder.taking``.
_INTERNAL = ("tensorflow", "keras", "tf_keras", "gradscope")


def called(frame: FrameType | None) -> str | None:
    """How the program's line took a tensor's value out through numpy, from the frame that
    made the read (numpy's own frames skipped): ``np.tanh()``, the call the user's frame
    runs (``np.mean()``, ``pd.Series()``), or ``numpy`` when it runs no call (an operator,
    ``a[0] = t``); None when TensorFlow's, Keras' or gradscope's own code made it."""
    while frame is not None:
        code = frame.f_code
        kind = _kind(code)
        if kind == _USER:
            return _call_at(code, frame.f_lasti)
        if kind == _OWN:
            return None
        frame = frame.f_back
    return None


_USER, _LIBRARY, _OWN = 0, 1, 2
_KINDS: dict[CodeType, int] = {}
_CALLS: dict[tuple[CodeType, int], str] = {}


def _kind(code: CodeType) -> int:
    kind = _KINDS.get(code)
    if kind is None:
        if len(_KINDS) > 100_000:
            _KINDS.clear()
        name = code.co_filename
        if frames.is_user_code(name):
            kind = _USER
        elif os.path.realpath(name).startswith(_internal()):
            kind = _OWN
        else:
            kind = _LIBRARY
        _KINDS[code] = kind
    return kind


@functools.cache
def _internal() -> tuple[str, ...]:
    """The folders of the ``_INTERNAL`` packages."""
    found = []
    for name in _INTERNAL:
        try:
            spec = importlib.util.find_spec(name)  # the package, not imported
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            found.append(os.path.dirname(os.path.realpath(spec.origin)) + os.sep)
    return tuple(found)


def _call_at(code: CodeType, lasti: int) -> str:
    key = (code, lasti)
    how = _CALLS.get(key)
    if how is None:
        if len(_CALLS) > 100_000:
            _CALLS.clear()
        how = _CALLS[key] = _callee(code, lasti)
    return how


def _callee(code: CodeType, lasti: int) -> str:
    """The function a call at instruction ``lasti`` of ``code`` names, as written
    (``np.tanh()``), or ``numpy`` when the instruction is no call or its source is unknown."""
    positions = getattr(code, "co_positions", None)
    if positions is None or lasti < 0:
        return "numpy"
    try:
        line, end, start, stop = list(positions())[lasti // 2]
    except (IndexError, ValueError):
        return "numpy"
    if line is None or end is None or start is None or stop is None:
        return "numpy"
    lines = [linecache.getline(code.co_filename, n) for n in range(line, end + 1)]
    if not lines or not lines[-1]:
        return "numpy"
    lines[-1] = lines[-1][:stop]
    lines[0] = lines[0][start:]
    text = "".join(lines).strip()
    if not text.endswith(")") or "(" not in text:
        return "numpy"
    callee = "".join(text[: text.index("(")].split())
    if not callee or len(callee) > 60 or not all(c.isalnum() or c in "._" for c in callee):
        return "numpy"
    return f"{callee}()"
