"""spotagg for Keras 3: gradients averaged through the switch before the optimizer applies them.

::

    import spotagg, spotagg.keras
    worker = spotagg.Worker(job, rank, switch)
    opt = spotagg.keras.DistributedOptimizer(keras.optimizers.SGD(0.1), worker)
    model.compile(optimizer=opt, loss=...)
    model.fit(x_shard, y_shard, callbacks=[spotagg.keras.BroadcastGlobalVariablesCallback(worker),
                                           spotagg.keras.MetricAverageCallback(worker)])

``DistributedOptimizer(optimizer, worker)`` wraps any Keras 3 optimizer: its ``apply`` (which
``apply_gradients``, ``Model.fit``'s train step and the JAX backend's ``stateless_apply`` all go
through) first replaces the gradients by their mean over the ranks, so that clipping, weight
decay and the update see averaged gradients, as DDP does. Every rank must present the same
ordered gradient list: a ``None`` gradient is sent as zeros and given back as ``None``.

Backends: JAX (inside the jitted train step the all-reduce is an ordered ``io_callback``,
:mod:`spotagg.jax`), TensorFlow (``tf.numpy_function(stateful=True)`` inside the train step's
``tf.function``, :mod:`spotagg.tensorflow`; XLA cannot run it, so both callbacks turn the
model's ``jit_compile`` off when they are given the model, before ``fit`` builds its train
function: Keras turns it on by itself on hosts with a GPU; without the callbacks, compile with
``jit_compile=False``) and torch (the gradients summed on the host).

Callbacks, as Horovod's: :class:`BroadcastGlobalVariablesCallback` makes every rank start from
rank 0's weights and optimizer state (when training begins), :class:`MetricAverageCallback` averages the epoch's logs over the ranks; write
checkpoints on rank 0 only (``worker.rank == 0``).
"""

import numpy as np

import keras

from ._frameworks import host_allreduce, worker_from_env

__all__ = ["DistributedOptimizer", "BroadcastGlobalVariablesCallback", "MetricAverageCallback"]


def _mean_numpy(worker, arrays, lanes):
    """The mean over the ranks of a list of numpy arrays (_frameworks.host_allreduce)."""
    return host_allreduce(worker, "spotagg.keras", arrays, "mean", lanes)


def _averaged(worker, grads, variables, lanes):
    """`grads` averaged over the ranks, in the backend's tensors; None stays None (sent as zeros)."""
    backend = keras.backend.backend()
    filled = []
    for g, v in zip(grads, variables):
        if g is None:
            filled.append(keras.ops.zeros(v.shape, dtype=v.dtype))
        else:
            filled.append(g)
    if backend == "jax":
        import spotagg.jax

        out = spotagg.jax.allreduce(list(filled), worker, op="mean", lanes=lanes)
    elif backend == "tensorflow":
        import spotagg.tensorflow

        out = spotagg.tensorflow.allreduce(list(filled), worker, op="mean", lanes=lanes)
    elif backend == "torch":
        import torch

        arrays = [g.detach().cpu().numpy() for g in filled]
        out = [torch.as_tensor(a, device=g.device) for a, g in zip(_mean_numpy(worker, arrays, lanes), filled)]
    else:
        raise RuntimeError(f"spotagg.keras: the {backend} backend is not supported (jax, tensorflow, torch)")
    return [None if g is None else o for g, o in zip(grads, out)]


def DistributedOptimizer(optimizer, worker=None, lanes: int = 32):
    """`optimizer` (a Keras 3 optimizer) whose gradients are averaged over the ranks of
    `worker`'s job first (default: :func:`spotagg.worker_from_env`); `lanes=16` sends them as
    16-bit lanes (a job with ``lanes16``). A rank whose gradient list differs from the others'
    (a layer frozen on one rank only) is a SpotaggError on every rank at the first step."""
    worker = worker if worker is not None else worker_from_env()
    base = type(optimizer)

    class _Distributed(base):
        def apply(self, grads, trainable_variables=None):
            grads = list(grads)
            variables = trainable_variables if trainable_variables is not None else self._trainable_variables
            grads = _averaged(worker, grads, list(variables), lanes)
            return super().apply(grads, trainable_variables)

    _Distributed.__name__ = f"Distributed{base.__name__}"
    optimizer.__class__ = _Distributed
    optimizer._spotagg_worker = worker
    return optimizer


def _no_xla(model):
    """TensorFlow backend: the model's train step without XLA (it cannot run the host call)."""
    if keras.backend.backend() == "tensorflow" and getattr(model, "jit_compile", False):
        model.jit_compile = False


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Rank `root`'s model weights and optimizer variables on every rank when training begins
    (the optimizer is built first if it is not yet), bit for bit: an int32 all-reduce of their
    bytes in which the other ranks send zeros."""

    def __init__(self, worker, root: int = 0):
        super().__init__()
        self.worker, self.root = worker, root

    def _broadcast(self, variables):
        for v in variables:
            a = np.array(keras.ops.convert_to_numpy(v.value), copy=True, order="C").reshape(-1)
            raw = a.view(np.uint8).reshape(-1)
            words = np.zeros((raw.size + 3) // 4, dtype=np.int32)
            if self.worker.rank == self.root:
                words.view(np.uint8)[: raw.size] = raw
            self.worker.allreduce(words)
            v.assign(words.view(np.uint8)[: raw.size].view(a.dtype).reshape(tuple(v.shape)))

    def set_model(self, model):
        super().set_model(model)
        _no_xla(model)

    def on_train_begin(self, logs=None):
        self._broadcast(self.model.weights)
        opt = self.model.optimizer
        if opt is not None:
            if not opt.built:
                opt.build(self.model.trainable_variables)
            self._broadcast(opt.variables)


class MetricAverageCallback(keras.callbacks.Callback):
    """The epoch's logs (loss and metrics) averaged over the ranks at each epoch's end, so that
    every rank reports, and callbacks after it see, the job's figures."""

    def __init__(self, worker):
        super().__init__()
        self.worker = worker

    def set_model(self, model):
        super().set_model(model)
        _no_xla(model)

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        keys = sorted(k for k, v in logs.items() if isinstance(v, (int, float, np.floating, np.integer)))
        vals = np.array([float(logs[k]) for k in keys], dtype=np.float32)
        self.worker.allreduce(vals)
        for k, v in zip(keys, vals / self.worker.world_size):
            logs[k] = float(v)
