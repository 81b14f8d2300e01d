"""The devices replicas run on: GPUs when there are enough, else logical CPU devices.

TensorFlow fixes its logical devices when it first initialises them (the first op, the first
variable), so ``configure`` must run before anything else touches TensorFlow's devices: the
pipeline calls it right after importing TensorFlow, and tests before their first TensorFlow use.
"""

from __future__ import annotations

import contextlib
from typing import Any

from gradscope._src.errors import UsageError


def configure(tf: Any, replicas: int) -> list[str]:
    """Make ``replicas`` devices available and return their names (``/device:CPU:0``, ...).

    GPUs are used when at least ``replicas`` are present; otherwise the CPU is split into
    ``replicas`` logical devices (``tf.config.set_logical_device_configuration``).

    Raises:
        UsageError: TensorFlow already initialised fewer CPU devices in this process.
    """
    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) >= replicas:
        return [d.name for d in tf.config.list_logical_devices("GPU")[:replicas]]
    cpu = tf.config.list_physical_devices("CPU")[0]
    wanted = [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)]
    current = tf.config.get_logical_device_configuration(cpu) or []
    if len(current) < replicas:
        # "Virtual devices cannot be modified after being initialized": checked just below
        with contextlib.suppress(RuntimeError):
            tf.config.set_logical_device_configuration(cpu, wanted)
    logical = tf.config.list_logical_devices("CPU")
    if len(logical) < replicas:
        raise UsageError(
            f"--replicas {replicas}: TensorFlow was already running on {len(logical)} CPU "
            "device(s) in this process, and logical devices can only be made before it starts; "
            "run gradscope in a fresh process"
        )
    return [d.name for d in logical[:replicas]]
