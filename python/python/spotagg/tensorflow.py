"""spotagg for TensorFlow: gradients averaged over the job's ranks through the switch, in eager
code and inside ``tf.function``.

::

    import spotagg, spotagg.tensorflow
    worker = spotagg.Worker(job, rank, switch)

    @tf.function                      # not jit_compile=True: XLA cannot run the host call
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        tape = spotagg.tensorflow.DistributedGradientTape(tape, worker)
        grads = tape.gradient(loss, model.trainable_variables)      # the mean over the ranks
        opt.apply_gradients(zip(grads, model.trainable_variables))

The tensors go as one float32 buffer (float16, bfloat16 and float64 widened or narrowed to it
and cast back) through ``tf.numpy_function(..., stateful=True)``, which TensorFlow neither
prunes nor reorders against the step's other stateful operations; int32 tensors as one int32
buffer (exact). A ``None`` gradient is sent as zeros and given back as ``None``, so every rank
presents the same list; a rank whose list differs (a layer frozen on one rank only) is a
SpotaggError on every rank, found by a small all-reduce of the list's signature first. Inside ``tf.function(jit_compile=True)`` TensorFlow refuses the host call
(XLA has no PyFunc): compile without XLA.
"""

import numpy as np

import tensorflow as tf

from ._frameworks import host_allreduce

__all__ = ["allreduce", "DistributedGradientTape"]


def _host(worker, op, lanes, arrays):
    return host_allreduce(worker, "spotagg.tensorflow.allreduce", arrays, op, lanes)


_DTYPES = (tf.float32, tf.float16, tf.bfloat16, tf.float64, tf.int32)


def allreduce(tensors, worker, op: str = "mean", lanes: int = 32):
    """The mean (or ``op="sum"``) of each tensor of the list over the ranks, as tensors of the
    same shapes and dtypes; ``None`` entries stay ``None`` (the other ranks must have them at the
    same places)."""
    if op not in ("sum", "mean"):
        raise ValueError(f"spotagg.tensorflow.allreduce: op = {op!r}: \"sum\" or \"mean\"")
    present = [i for i, t in enumerate(tensors) if t is not None]
    ts = [tf.convert_to_tensor(tensors[i]) for i in present]
    for i, t in zip(present, ts):
        if t.dtype not in _DTYPES:
            raise TypeError(f"spotagg.tensorflow.allreduce: tensor {i} has dtype {t.dtype.name}: "
                            "the switch sums float32 (float16, bfloat16, float64 cast) and int32")
    if not ts:
        return list(tensors)
    # bfloat16 has no numpy dtype that numpy_function passes reliably: cast to float32 around it.
    wire = [tf.cast(t, tf.float32) if t.dtype in (tf.bfloat16, tf.float16, tf.float64) else t for t in ts]
    out = tf.numpy_function(lambda *xs: _host(worker, op, lanes, list(xs)), wire, [t.dtype for t in wire],
                            stateful=True)
    out = [tf.cast(tf.reshape(o, tf.shape(t)), t.dtype) for o, t in zip(out, ts)]
    result = [None] * len(tensors)
    for i, o in zip(present, out):
        result[i] = o
    return result


class DistributedGradientTape:
    """A ``tf.GradientTape`` whose ``gradient`` returns the mean over the ranks (a ``None``
    gradient sent as zeros, given back as ``None``); everything else is the tape's."""

    def __init__(self, tape, worker, lanes: int = 32):
        self._tape, self._worker, self._lanes = tape, worker, lanes

    def gradient(self, target, sources, output_gradients=None, **kw):
        grads = self._tape.gradient(target, sources, output_gradients=output_gradients, **kw)
        flat = tf.nest.flatten(sources)
        gflat = tf.nest.flatten(grads, expand_composites=False) if not isinstance(grads, list) else grads
        filled = [tf.zeros_like(s) if g is None else g for g, s in zip(gflat, flat)]
        out = allreduce(filled, self._worker, "mean", self._lanes)
        out = [None if g is None else o for g, o in zip(gflat, out)]
        return tf.nest.pack_sequence_as(sources, out) if not isinstance(sources, list) else out

    def __getattr__(self, name):
        return getattr(self._tape, name)
