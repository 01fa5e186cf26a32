"""Bodies of the Keras and JAX tests (test_keras_jax.py), run in processes of their own (the
Keras backend is chosen when keras is first imported: KERAS_BACKEND is set before)."""

import os

import numpy as np


def data(seed=0, n=64):
    g = np.random.default_rng(seed)
    x = g.standard_normal((n, 8)).astype(np.float32)
    w = g.standard_normal((8, 3)).astype(np.float32)
    y = np.argmax(x @ w, axis=1)
    return x, y


def _steps_recorder():
    """A callback that keeps the model's weights after every training step (batch)."""
    import keras

    class Steps(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.weights = []

        def on_train_batch_end(self, batch, logs=None):
            self.weights.append([np.array(w) for w in self.model.get_weights()])

    return Steps()


def _model():
    import keras

    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(3)])


def fit_rank(backend, rank, n, job, switch, epochs, queue):
    """Model.fit of the rank's shard with DistributedOptimizer (SGD with momentum, clipnorm) and
    both callbacks; puts (rank, final weights, history) on `queue`."""
    os.environ["KERAS_BACKEND"] = backend
    try:
        import keras
        import spotagg
        import spotagg.keras

        worker = spotagg.Worker(job, rank, switch)
        x, y = data()
        xs, ys = x[rank::n], y[rank::n]
        m = _model()
        if rank != 0:
            # Another start, which the broadcast callback must replace by rank 0's.
            m.set_weights([w + 1.0 for w in m.get_weights()])
        opt = spotagg.keras.DistributedOptimizer(keras.optimizers.SGD(0.1, momentum=0.5, clipnorm=5.0), worker)
        # jit_compile=True as Keras chooses on a GPU host: the callbacks turn it off for TensorFlow
        # (XLA cannot run the host call); JAX jits the step whatever this says.
        m.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=backend != "torch")
        steps = _steps_recorder()
        cbs = [spotagg.keras.BroadcastGlobalVariablesCallback(worker), spotagg.keras.MetricAverageCallback(worker), steps]
        h = m.fit(xs, ys, batch_size=len(xs), epochs=epochs, shuffle=False, verbose=0, callbacks=cbs)
        queue.put((rank, steps.weights, h.history["loss"]))
        if backend == "tensorflow":
            tape_rank(worker, rank, n, queue)
    except BaseException as e:  # noqa: BLE001 - reported to the test
        import traceback

        queue.put((rank, "error", traceback.format_exc() + repr(e)))


def fit_reference(backend, n, epochs, queue):
    """The same training on one process: each step the mean of the n shards' gradients (the
    shards have equal size, so it is the gradient of the whole batch), ranks starting at rank 0's
    weights."""
    os.environ["KERAS_BACKEND"] = backend
    try:
        import keras

        x, y = data()
        m = _model()
        m.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.5, clipnorm=5.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        # Rank order of the shards, so that the batch is the ranks' shards in sequence.
        order = np.concatenate([np.arange(r, len(x), n) for r in range(n)])
        steps = _steps_recorder()
        h = m.fit(x[order], y[order], batch_size=len(x), epochs=epochs, shuffle=False, verbose=0, callbacks=[steps])
        queue.put(("ref", steps.weights, h.history["loss"]))
        if backend == "tensorflow":
            queue.put(("tape", "ref", tape_reference(n)))
    except BaseException as e:  # noqa: BLE001
        import traceback

        queue.put(("ref", "error", traceback.format_exc() + repr(e)))


def tape_rank(worker, rank, n, queue):
    """spotagg.tensorflow.DistributedGradientTape in a custom loop (a tf.function step): the
    rank's shard, 5 steps of SGD; puts ("tape", rank, weights)."""
    import tensorflow as tf
    import spotagg.tensorflow as stf

    x, y = data()
    xs, ys = tf.constant(x[rank::n]), tf.constant(y[rank::n])
    w = tf.Variable(tf.zeros((8, 3)))
    b = tf.Variable(tf.zeros(3))
    unused = tf.Variable(tf.zeros(2))  # its gradient is None on every rank

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            logits = xs @ w + b
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(ys, logits))
        grads = stf.DistributedGradientTape(tape, worker).gradient(loss, [w, b, unused])
        assert grads[2] is None
        w.assign_sub(0.5 * grads[0])
        b.assign_sub(0.5 * grads[1])
        return loss

    for _ in range(5):
        step()
    queue.put(("tape", rank, [w.numpy(), b.numpy()]))


def tape_reference(n):
    """tape_rank's training on one process over the whole batch."""
    import tensorflow as tf

    x, y = data()
    order = np.concatenate([np.arange(r, len(x), n) for r in range(n)])
    xs, ys = tf.constant(x[order]), tf.constant(y[order])
    w = tf.Variable(tf.zeros((8, 3)))
    b = tf.Variable(tf.zeros(3))
    for _ in range(5):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(ys, xs @ w + b))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.5 * gw)
        b.assign_sub(0.5 * gb)
    return [w.numpy(), b.numpy()]


def frozen_rank(backend, rank, n, job, switch, queue):
    """Model.fit where rank 1 froze the first layer (its gradient list is shorter): puts (rank,
    the error's text) on `queue`; every rank must fail with the check's message."""
    os.environ["KERAS_BACKEND"] = backend
    try:
        import keras
        import spotagg
        import spotagg.keras

        worker = spotagg.Worker(job, rank, switch)
        x, y = data()
        m = _model()
        if rank == 1:
            m.layers[0].trainable = False
        opt = spotagg.keras.DistributedOptimizer(keras.optimizers.SGD(0.1), worker)
        m.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        m.fit(x, y, batch_size=len(x), epochs=1, verbose=0)
        queue.put((rank, "no error"))
    except BaseException as e:  # noqa: BLE001 - the error is the result
        queue.put((rank, f"{type(e).__name__}: {e}"))
