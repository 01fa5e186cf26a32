"""The digits (spotagg.load_digits) trained on N processes through spotagg with Keras 3
``Model.fit`` (``spotagg.keras.DistributedOptimizer`` and its callbacks) or with a plain JAX
loop (``spotagg.jax.allreduce`` inside ``jax.jit``), against the same model trained on one
process with the global batch, and the cost of the integration per step against the all-reduce
itself.

    python examples/keras_digits.py --framework keras --backend jax --ranks 4
    python examples/keras_digits.py --framework keras --backend tensorflow --ranks 4
    python examples/keras_digits.py --framework jax --ranks 4

A SoftwareSwitch on 127.0.0.1 serves the ranks (127.0.0.30 + rank); each rank learns from its
shard (train[r::N]) with batch B, the single process from the same samples in batches of N·B
(each the ranks' batches of that step). Prints the largest weight difference, both test
accuracies, and per step: the time without spotagg (the rank's own training, the optimizer
unwrapped), with it, and of its parts (the list check, the Worker's all-reduce, the rest of the
host call).
"""

import argparse
import multiprocessing as mp
import os
import time

import numpy as np


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--framework", choices=["keras", "jax"], default="keras")
    p.add_argument("--backend", choices=["jax", "tensorflow", "torch"], default="jax", help="Keras's backend")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--epochs", type=int, default=5, help="at least 2: the first is not timed")
    p.add_argument("--batch", type=int, default=16, help="per rank")
    p.add_argument("--lr", type=float, default=0.1)
    return p.parse_args(argv)


def data(n, b):
    import spotagg

    x, y = spotagg.load_digits()
    x = x / 16.0
    order = np.random.default_rng(0).permutation(len(x))
    n_test = len(x) // 5
    test, train = order[:n_test], order[n_test:]
    steps = len(train) // (n * b)
    train = train[: steps * n * b]
    return (x[train], y[train]), (x[test], y[test]), steps


def global_order(n, b, steps):
    """Indices into the training set so that batch s of N·B is the ranks' batches of step s."""
    idx = np.arange(steps * n * b)
    shards = [idx[r::n] for r in range(n)]
    return np.concatenate([np.concatenate([s[k * b:(k + 1) * b] for s in shards]) for k in range(steps)])


# ---- Keras --------------------------------------------------------------------------------------

def keras_model():
    import keras

    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((64,)), keras.layers.Dense(128, activation="relu"),
                             keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])


def keras_fit(args, x, y, batch, opt, callbacks=()):
    """The model fitted; and the seconds of its epochs after the first (which traces and
    compiles the train step)."""
    import keras

    class Clock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seconds = 0.0

        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            if epoch > 0:
                self.seconds += time.perf_counter() - self.t0

    m = keras_model()
    m.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"], jit_compile=args.backend != "torch")
    clock = Clock()
    m.fit(x, y, batch_size=batch, epochs=args.epochs, shuffle=False, verbose=0, callbacks=[*callbacks, clock])
    return m, clock.seconds


def keras_rank(args, rank, job, switch, q):
    os.environ["KERAS_BACKEND"] = args.backend
    import keras
    import spotagg
    import spotagg.keras as sk
    from spotagg._frameworks import STATS

    n, b = args.ranks, args.batch
    (x, y), (xt, yt), steps = data(n, b)
    xs, ys = x[rank::n], y[rank::n]
    # The rank alone first (no switch): the step time without spotagg.
    _, plain = keras_fit(args, xs, ys, b, keras.optimizers.SGD(args.lr, momentum=0.9))
    worker = spotagg.Worker(job, rank, switch)
    opt = sk.DistributedOptimizer(keras.optimizers.SGD(args.lr, momentum=0.9), worker)
    STATS.update(calls=0, check_s=0.0, allreduce_s=0.0, host_s=0.0)
    STATS["skip"] = steps  # the first epoch's calls are not counted (see _frameworks.STATS)
    m, dist = keras_fit(args, xs, ys, b, opt, [sk.BroadcastGlobalVariablesCallback(worker), sk.MetricAverageCallback(worker)])
    acc = float(m.evaluate(xt, yt, verbose=0)[1])
    q.put((rank, [np.asarray(w) for w in m.get_weights()], acc, plain, dist, dict(STATS), steps * (args.epochs - 1)))


def keras_single(args, q):
    os.environ["KERAS_BACKEND"] = args.backend
    import keras

    n, b = args.ranks, args.batch
    (x, y), (xt, yt), steps = data(n, b)
    o = global_order(n, b, steps)
    m, _ = keras_fit(args, x[o], y[o], n * b, keras.optimizers.SGD(args.lr, momentum=0.9))
    q.put(("single", [np.asarray(w) for w in m.get_weights()], float(m.evaluate(xt, yt, verbose=0)[1])))


# ---- JAX ----------------------------------------------------------------------------------------

def jax_params():
    import jax

    k = jax.random.split(jax.random.PRNGKey(0), 3)
    sizes = [(64, 128), (128, 128), (128, 10)]
    return [(jax.random.normal(kk, s) * (2 / s[0]) ** 0.5, np.zeros(s[1], np.float32)) for kk, s in zip(k, sizes)]


def jax_loss(params, x, y):
    import jax
    import jax.numpy as jnp

    h = x
    for i, (w, c) in enumerate(params):
        h = h @ w + c
        if i < len(params) - 1:
            h = jax.nn.relu(h)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(h), y[:, None], axis=1))


def jax_train(args, x, y, batch, steps, reduce=None):
    import jax

    params = jax_params()

    @jax.jit
    def step(p, xb, yb):
        g = jax.grad(jax_loss)(p, xb, yb)
        if reduce is not None:
            g = reduce(g)
        return jax.tree.map(lambda a, d: a - args.lr * d, p, g)

    seconds = 0.0
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        for s in range(steps):
            params = step(params, x[s * batch:(s + 1) * batch], y[s * batch:(s + 1) * batch])
        jax.block_until_ready(params)
        if epoch > 0:  # the first traces and compiles the step
            seconds += time.perf_counter() - t0
    return params, seconds


def jax_accuracy(params, x, y):
    h = x
    for i, (w, c) in enumerate(params):
        h = np.asarray(h @ w + c)
        if i < len(params) - 1:
            h = np.maximum(h, 0)
    return float((h.argmax(1) == y).mean())


def jax_rank(args, rank, job, switch, q):
    import spotagg
    import spotagg.jax as sj
    from spotagg._frameworks import STATS

    n, b = args.ranks, args.batch
    (x, y), (xt, yt), steps = data(n, b)
    xs, ys = x[rank::n], y[rank::n]
    _, plain = jax_train(args, xs, ys, b, steps)
    worker = spotagg.Worker(job, rank, switch)
    STATS.update(calls=0, check_s=0.0, allreduce_s=0.0, host_s=0.0)
    STATS["skip"] = steps
    params, dist = jax_train(args, xs, ys, b, steps, reduce=lambda g: sj.allreduce(g, worker))
    flat = [np.asarray(a) for layer in params for a in layer]
    q.put((rank, flat, jax_accuracy(params, xt, yt), plain, dist, dict(STATS), steps * (args.epochs - 1)))


def jax_single(args, q):
    n, b = args.ranks, args.batch
    (x, y), (xt, yt), steps = data(n, b)
    o = global_order(n, b, steps)
    params, _ = jax_train(args, x[o], y[o], n * b, steps)
    q.put(("single", [np.asarray(a) for layer in params for a in layer], jax_accuracy(params, xt, yt)))


def main(argv=None):
    args = parse_args(argv)
    if args.epochs < 2:
        raise SystemExit("--epochs must be at least 2 (the first epoch compiles the step and is not timed)")
    import spotagg

    name = f"Keras on {args.backend}" if args.framework == "keras" else "JAX"
    job = spotagg.example_job(args.ranks, payload_bytes=1024, slots=64, first_worker_ip="127.0.0.30")
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    rank_fn, single_fn = (keras_rank, keras_single) if args.framework == "keras" else (jax_rank, jax_single)
    with spotagg.SoftwareSwitch(job) as sw:
        procs = [ctx.Process(target=rank_fn, args=(args, r, job, sw.address, q)) for r in range(args.ranks)]
        procs.append(ctx.Process(target=single_fn, args=(args, q)))
        for p in procs:
            p.start()
        out = {}
        for _ in procs:
            got = q.get(timeout=900)
            out[got[0]] = got[1:]
        for p in procs:
            p.join(60)
    single_w, single_acc = out["single"]
    ranks = [out[r] for r in range(args.ranks)]
    diff = max(float(np.abs(a - c).max()) for r in ranks for a, c in zip(r[0], single_w))
    agree = all(all(np.array_equal(a, c) for a, c in zip(r[0], ranks[0][0])) for r in ranks)
    print(f"{name}, {args.ranks} ranks x batch {args.batch}, {args.epochs} epochs: test accuracy "
          f"{100 * ranks[0][1]:.2f}% through spotagg, {100 * single_acc:.2f}% on one process with the global batch; "
          f"largest weight difference {diff:.2e}; ranks {'equal' if agree else 'DIFFER'}")
    print("| rank | step without spotagg | step with spotagg | list check (with the wait for the slowest rank) | all-reduce | rest of the host call | integration (with minus without minus all-reduce) |")
    print("|---|---|---|---|---|---|---|")
    for r, (_, _, plain, dist, st, steps) in enumerate(ranks):
        ms = lambda s: 1e3 * s / steps  # noqa: E731
        rest = st["host_s"] - st["check_s"] - st["allreduce_s"]
        integ = (dist - plain) - st["allreduce_s"]
        print(f"| {r} | {ms(plain):.2f} ms | {ms(dist):.2f} ms | {ms(st['check_s']):.2f} ms | "
              f"{ms(st['allreduce_s']):.2f} ms | {ms(rest):.2f} ms | {ms(integ):.2f} ms |")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
