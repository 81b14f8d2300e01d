"""A cut point: where the last paths from a variable to a loss were cut (contract section 2)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CutPoint:
    """Where the last paths from a variable to a loss were cut (contract section 2)."""

    node: str
    op: str
    kind: str  # "stopped" | "assign" | "nondifferentiable"
    source: str  # FILE:LINE
