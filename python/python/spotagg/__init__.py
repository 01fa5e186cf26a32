"""spotagg: in-network gradient aggregation (the SwitchML protocol) from Python.

- :class:`Worker` — one rank of a job; ``worker.allreduce(array)`` sums a float32/int32 numpy
  array or CPU ``torch.Tensor`` over the job's ranks, in place, zero copy, GIL released.
- :class:`SoftwareSwitch` — the reference switch served over UDP by a background thread.
- :func:`example_job` — the TOML text of a job on loopback addresses.
- :func:`error_bounds` — the float32 error bound of driver/src/fixedpoint.rs, per element.
- :func:`worker_from_env` — a Worker from SPOTAGG_RANK / RANK, SPOTAGG_WORLD_SIZE / WORLD_SIZE
  and SPOTAGG_JOB + SPOTAGG_SWITCH or SPOTAGG_CONTROLLER (Keras, TensorFlow, JAX launchers).
- :func:`register` — a worker's registration with the switch's controller (docs/controller.md):
  the job's TOML text, without a job file.
- :mod:`spotagg.torch` — the DDP communication hook and the ``spotagg`` torch.distributed
  backend (imports torch).
- :mod:`spotagg.keras` — ``DistributedOptimizer`` and the broadcast and metric callbacks for
  Keras 3; :mod:`spotagg.jax` — the all-reduce of a pytree, eagerly and inside ``jax.jit``;
  :mod:`spotagg.tensorflow` — ``DistributedGradientTape`` for custom TensorFlow loops.

Errors: :class:`SwitchUnreachable` when the switch stops answering, :class:`ProtocolError` for
an answer that contradicts the protocol, :class:`ControllerError` for a registration refused or
not completed in time; all derive from :class:`SpotaggError`.
"""

from ._native import (
    ControllerError,
    ProtocolError,
    SoftwareSwitch,
    SpotaggError,
    Stats,
    SwitchUnreachable,
    Worker,
    error_bounds,
    example_job,
    register,
)
from ._frameworks import worker_from_env
from .datasets import load_digits

__all__ = [
    "ControllerError",
    "ProtocolError",
    "SoftwareSwitch",
    "SpotaggError",
    "Stats",
    "SwitchUnreachable",
    "Worker",
    "error_bounds",
    "example_job",
    "load_digits",
    "register",
    "worker_from_env",
]
