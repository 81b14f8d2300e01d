"""What a distributed run found, as plain data: every replica's gradient and their all-reduce."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gradscope._src.results.status import Status

#: The strategies ``--strategy`` names (contract section 8).
STRATEGIES = ("default", "mirrored", "multiworker")


@dataclass(frozen=True)
class Distribution:
    """How a run is distributed: a ``tf.distribute`` strategy and its number of replicas."""

    strategy: str = "default"
    replicas: int = 1

    @property
    def active(self) -> bool:
        """Whether the run goes through a strategy other than TensorFlow's default one."""
        return self.strategy != "default"


@dataclass(frozen=True)
class ReplicaFacts:
    """One replica's gradient of one pair: the numbers ``PairFacts`` holds for the pair."""

    replica: int
    has_gradient: bool
    norm: float | None
    finite: bool
    all_zero: bool


@dataclass(frozen=True)
class Agreement:
    """A pair's all-reduced gradient against the one-device gradient of the whole batch.

    ``error`` is ``|reduced - whole| / |whole|`` (L2 norms, ``|whole|`` floored so an all-zero
    gradient compares absolutely); ``scaled_error`` is the same against ``replicas * whole``:
    near zero when every replica averaged its loss over its own batch instead of the global one.
    """

    loss: str
    variable: str
    whole_norm: float | None
    error: float | None
    scaled_error: float | None


@dataclass(frozen=True)
class StepSpread:
    """A variable after one step of plain gradient descent with the all-reduced gradient:
    the largest difference between two replicas' copies (0.0 when they are identical)."""

    variable: str
    spread: float
    replicas: tuple[int, ...]  # the replicas whose copy differs from replica 0's


@dataclass(frozen=True)
class DistributedFacts:
    """What the distributed pass measured beyond each pair's replicas."""

    distribution: Distribution
    devices: tuple[str, ...]
    agreements: tuple[Agreement, ...] = ()
    spreads: tuple[StepSpread, ...] = ()
    #: per input, how many rows each replica got (the first axis, split in order)
    shards: tuple[tuple[str, tuple[int, ...]], ...] = ()
    #: how the pairs' gradients are all-reduced: ``sum`` (a split batch, as
    #: ``apply_gradients`` does) or ``mean`` (every replica ran the whole loss: a Python target)
    reduced: str = "sum"

    def to_dict(self) -> dict[str, Any]:
        """How a ``--strategy`` run was distributed: the strategy, its replicas' devices, and
        how many rows of each input every replica got."""
        return {
            "strategy": self.distribution.strategy,
            "replicas": self.distribution.replicas,
            "devices": list(self.devices),
            "shards": {name: list(rows) for name, rows in self.shards},
            "reduced": self.reduced,
        }


@dataclass(frozen=True)
class ReplicaResult:
    """One replica's status and norm for a pair, as reports show it."""

    replica: int
    status: Status
    norm: float | None

    def to_dict(self) -> dict[str, Any]:
        """One replica's gradient of a pair (``--strategy``, contract section 8)."""
        finite = self.norm is not None and math.isfinite(self.norm)
        return {"replica": self.replica, "status": str(self.status),
                "norm": self.norm if finite else None}  # fmt: skip
