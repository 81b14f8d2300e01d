"""A distributed pass's numbers folded into the one-device facts: each pair shows its
all-reduced gradient and keeps every replica's; cut points stay those of the trace."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from gradscope._src.distribute.replica import KEY, Measurement
from gradscope._src.results.facts import LossFacts, PairFacts, RunFacts
from gradscope._src.results.replicas import (
    Agreement,
    DistributedFacts,
    Distribution,
    ReplicaFacts,
    StepSpread,
)


def merge(facts: RunFacts, measured: Measurement, distribution: Distribution,
          reduced: str = "sum") -> RunFacts:  # fmt: skip
    """``facts`` with every pair's gradient replaced by the all-reduced one (the one
    ``apply_gradients`` uses; ``reduced="mean"`` when every replica ran the whole loss) and
    its replicas attached, plus what the pass compared."""
    pairs: dict[str, Any] = measured["pairs"]
    untraced = set(measured.get("untraced", ()))  # answered eagerly, not run per replica
    losses = tuple(
        loss if loss.name in untraced else _loss(loss, pairs, distribution.replicas)
        for loss in facts.losses
    )
    agreements = tuple(
        Agreement(loss, variable, entry["whole_norm"], entry["error"], entry["scaled_error"])
        for key, entry in pairs.items()
        for loss, variable in [key.split(KEY, 1)]
    )
    spreads = tuple(
        StepSpread(name, float(spread), tuple(int(r) for r in differing))
        for name, (spread, differing) in measured["spreads"].items()
    )
    distributed = DistributedFacts(
        distribution=distribution,
        devices=tuple(_short(d) for d in measured["devices"]),
        agreements=agreements,
        spreads=spreads,
        shards=tuple((name, tuple(rows)) for name, rows in measured["shards"]),
        reduced=reduced,
    )
    return dataclasses.replace(facts, losses=losses, distributed=distributed)


def _loss(loss: LossFacts, pairs: dict[str, Any], replicas: int) -> LossFacts:
    out = []
    for pair in loss.pairs:
        entry = pairs.get(f"{loss.name}{KEY}{pair.variable}")
        out.append(_pair(pair, entry, replicas))
    return dataclasses.replace(loss, pairs=tuple(out))


def _pair(pair: PairFacts, entry: dict[str, Any] | None, replicas: int) -> PairFacts:
    if entry is None:  # no replica got a gradient (or none was asked for: excluded, frozen)
        none = ReplicaFacts(0, False, None, True, False)
        return dataclasses.replace(
            pair, replicas=tuple(dataclasses.replace(none, replica=r) for r in range(replicas))
        )
    each = tuple(from_stats(r, *stats) for r, stats in enumerate(entry["replicas"]))
    reduced = from_stats(0, *entry["reduced"])
    return dataclasses.replace(
        pair, has_gradient=True, norm=reduced.norm, finite=reduced.finite,
        all_zero=reduced.all_zero, replicas=each,
    )  # fmt: skip


def from_stats(replica: int, norm: float, largest: float) -> ReplicaFacts:
    """A gradient's facts from its ``[norm, max |g|]``, as ``engine/pairs.py`` reads them."""
    finite = math.isfinite(largest) and not math.isnan(norm)
    return ReplicaFacts(
        replica=replica,
        has_gradient=True,
        norm=norm if math.isfinite(norm) else None,
        finite=finite,
        all_zero=finite and largest == 0.0,
    )


def _short(device: str) -> str:
    """``/job:worker/replica:0/task:1/device:CPU:0`` as ``worker 1 CPU:0``; local: ``CPU:1``."""
    parts = dict(p.split(":", 1) for p in device.strip("/").split("/") if ":" in p)
    where = parts.get("device", device)
    if parts.get("job") == "worker":
        return f"worker {parts.get('task', '0')} {where}"
    return where
