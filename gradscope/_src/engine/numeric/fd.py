"""Central finite differences as plain numbers: steps, tolerances, coordinates and errors.

No TensorFlow here; ``check.py`` evaluates the losses and hands the numbers over.

A central difference ``(f(x + h) - f(x - h)) / 2h`` has a truncation error of order ``h**2``
and a rounding error of order ``eps * |f| / h``; a step of about ``eps ** (1/3)`` balances
the two. The step is scaled by ``max(1, |x|)`` so that ``x + h`` differs from ``x`` in the
variable's own precision, and the difference is divided by the distance between the two
rounded points actually evaluated.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

#: Machine epsilon per floating-point type.
EPS = {"float64": 2.2e-16, "float32": 1.19e-7, "float16": 9.77e-4, "bfloat16": 7.81e-3}

#: The base step per type: about ``eps ** (1/3)``.
STEPS = {"float64": 6e-6, "float32": 5e-3, "float16": 0.1, "bfloat16": 0.2}

#: The largest relative error that still agrees, per type.
TOLERANCES = {"float64": 1e-5, "float32": 2e-2, "float16": 0.2, "bfloat16": 0.3}

#: Multiples of the base step tried on a coordinate that does not agree at the first: a kink
#: (a ReLU) between ``x - h`` and ``x + h`` goes away with a smaller step, rounding noise in
#: float32 with a larger one; a wrong gradient disagrees at every step.
RETRY_STEPS = (0.1, 10.0)

#: Coordinates checked per variable by default; a larger variable is sampled.
DEFAULT_COORDINATES = 16

#: How many times ``eps * |f|`` the rounding error of one loss evaluation is taken to be.
_ROUNDING = 4.0


def _known(dtype: str) -> str:
    return dtype if dtype in EPS else "float32"


def step(dtype: str) -> float:
    """The base step for a variable of ``dtype`` (relative to ``max(1, |x|)``)."""
    return STEPS[_known(dtype)]


def tolerance(dtype: str) -> float:
    """The largest relative error that agrees, for a check run in ``dtype``."""
    return TOLERANCES[_known(dtype)]


def coordinates(
    importance: np.ndarray, count: int, name: str, seed: int = 0
) -> list[tuple[int, ...]]:
    """Which coordinates of a variable to check: all when it has at most ``count``.

    Otherwise half are the coordinates where the gradient is largest (``importance``, the
    variable's shape) and the other half are drawn at random from the rest, seeded by the
    variable's name, so the same run checks the same coordinates.

    Example:
        >>> coordinates(np.array([[0.1, 3.0], [0.2, 0.0]]), 16, "w")
        [(0, 0), (0, 1), (1, 0), (1, 1)]
    """
    size = int(importance.size)
    flat = np.abs(np.asarray(importance, dtype=np.float64)).ravel()
    if size <= count:
        chosen = list(range(size))
    else:
        top = count - count // 2
        order = np.argsort(-flat, kind="stable")
        chosen = [int(i) for i in order[:top]]
        rest = np.setdiff1d(np.arange(size), chosen)
        rng = np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])
        chosen += [int(i) for i in rng.choice(rest, size=count - top, replace=False)]
    shape = importance.shape
    return [tuple(int(k) for k in np.unravel_index(i, shape)) for i in sorted(chosen)]


def central(f_plus: float, f_minus: float, x_plus: float, x_minus: float) -> float:
    """The central difference between two evaluated points."""
    return (f_plus - f_minus) / (x_plus - x_minus)


def floor(dtype: str, values: Sequence[float], width: float, scale: float) -> float:
    """The smallest magnitude an error is measured against, for one coordinate.

    A difference within the rounding noise of the central difference itself
    (``eps * |f| / width``, a few times over) agrees: the floor is that noise divided by
    the tolerance. So an error ``<= tolerance`` reads ``|analytic - numeric| <= tolerance *
    max(|analytic|, |numeric|) + noise``, the usual relative-plus-absolute test.

    Args:
        dtype: the type the losses were evaluated in.
        values: the loss values at the points evaluated (their size sets the rounding error).
        width: the distance between the two points, ``x_plus - x_minus``.
        scale: the largest ``|gradient|`` of the pair: a coordinate far below it is held
            to ``sqrt(eps) * scale`` rather than to its own size.
    """
    eps = EPS[_known(dtype)]
    magnitude = max((abs(v) for v in values), default=0.0)
    noise = _ROUNDING * eps * magnitude / abs(width) if width else math.inf
    return max(noise / tolerance(dtype), math.sqrt(eps) * scale, 1e-300)


def error(analytic: float, numeric: float, at_least: float) -> float:
    """``|analytic - numeric| / max(|analytic|, |numeric|, at_least)``.

    Example:
        >>> error(2.0, 1.0, 1e-9)
        0.5
    """
    if not (math.isfinite(analytic) and math.isfinite(numeric)):
        return math.inf
    return abs(analytic - numeric) / max(abs(analytic), abs(numeric), at_least)
