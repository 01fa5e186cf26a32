"""spotagg for JAX: the sum or mean of a pytree of arrays over the job's ranks, through the
switch, outside ``jax.jit`` and inside it.

::

    import spotagg, spotagg.jax
    worker = spotagg.Worker(job, rank, switch)
    grads = spotagg.jax.allreduce(grads, worker)            # mean over the ranks (op="sum": the sum)

    @jax.jit
    def step(params, batch):
        grads = jax.grad(loss)(params, batch)
        grads = spotagg.jax.allreduce(grads, worker)        # inside jit: an ordered io_callback
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

The leaves go as one buffer per kind, in the pytree's leaf order. Every rank must pass the same
leaves (shapes and dtypes, in order): a small all-reduce of their signature goes first, and a
rank that differs is a SpotaggError on every rank, before any gradient is sent (inside ``jit``,
JAX hands it on as its runtime error, with this message). float32, float16 and bfloat16 leaves as one float32 buffer (16-bit leaves widened,
the sum formed in 32-bit fixed point and rounded back once), int32 leaves as one int32 buffer
(exact). Other dtypes are a TypeError. Inside ``jit`` the all-reduce is a
``jax.experimental.io_callback(..., ordered=True)``: JAX neither drops it (its result is used)
nor reorders it against the step's other ordered effects (``pure_callback`` could be either).
With ``lanes=16`` the float buffer goes as 16-bit lanes (the job needs ``lanes16 = true``).
"""

import numpy as np

import jax
import jax.numpy as jnp
from jax.experimental import io_callback

from ._frameworks import host_allreduce

__all__ = ["allreduce", "broadcast"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(jnp.bfloat16))
_INTS = (np.dtype(np.int32),)


def _kinds(leaves):
    for i, x in enumerate(leaves):
        d = np.dtype(x.dtype)
        if d not in _FLOATS and d not in _INTS:
            raise TypeError(
                f"spotagg.jax.allreduce: leaf {i} has dtype {d}: the switch sums float32, float16, "
                "bfloat16 and int32"
            )


def _host(worker, op, lanes, leaves):
    """The all-reduce of numpy leaves on the host (_frameworks.host_allreduce)."""
    return host_allreduce(worker, "spotagg.jax.allreduce", leaves, op, lanes)


def allreduce(tree, worker, op: str = "mean", lanes: int = 32):
    """The sum (``op="sum"``) or mean (``"mean"``, the default; int32 leaves floor-divided) of
    `tree`'s leaves over the ranks of `worker`'s job, as a pytree of the same structure, shapes
    and dtypes. Works eagerly and inside ``jax.jit`` (module doc)."""
    if op not in ("sum", "mean"):
        raise ValueError(f"spotagg.jax.allreduce: op = {op!r}: \"sum\" or \"mean\"")
    leaves, treedef = jax.tree.flatten(tree)
    _kinds(leaves)
    if not leaves:
        return tree
    if any(isinstance(x, jax.core.Tracer) for x in leaves):
        shapes = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in leaves]
        out = io_callback(
            lambda *xs: _host(worker, op, lanes, [np.asarray(x) for x in xs]),
            shapes,
            *leaves,
            ordered=True,
        )
        return jax.tree.unflatten(treedef, list(out))
    out = _host(worker, op, lanes, [np.asarray(x) for x in leaves])
    return jax.tree.unflatten(treedef, [jnp.asarray(x) for x in out])


def broadcast(tree, worker, root: int = 0):
    """Rank `root`'s values of `tree` on every rank, bit for bit: an int32 all-reduce of the
    leaves' bytes where the other ranks send zeros (exact). Eager only (starting state, not a
    training step)."""
    leaves, treedef = jax.tree.flatten(tree)
    out = []
    for x in leaves:
        shape = np.shape(x)
        a = np.array(x, copy=True, order="C").reshape(-1)
        raw = a.view(np.uint8).reshape(-1)
        pad = (-raw.size) % 4
        words = np.zeros((raw.size + pad) // 4, dtype=np.int32)
        if worker.rank == root:
            words.view(np.uint8)[: raw.size] = raw
        worker.allreduce(words)
        back = words.view(np.uint8)[: raw.size].view(a.dtype).reshape(shape)
        out.append(jnp.asarray(back))
    return jax.tree.unflatten(treedef, out)
