"""Keras 3 and JAX through the switch (issue 38): spotagg.jax.allreduce of a pytree outside and
inside jax.jit; Keras's Model.fit with DistributedOptimizer and the two callbacks on the JAX,
TensorFlow and torch backends, 2 ranks in processes of their own, against one process training
on the whole batch (the mean of the shards' gradients); and TensorFlow's DistributedGradientTape
in a tf.function loop."""

import multiprocessing as mp
import os

import numpy as np
import pytest

import spotagg
import keras_cases
from conftest import loopback_job, run_ranks

import jax  # scripts/python-env.sh installs it


def test_jax_pytree_allreduce_eager_and_inside_jit():
    import jax.numpy as jnp
    import spotagg.jax as sj

    job = loopback_job(2, slots=32)
    with spotagg.SoftwareSwitch(job) as sw:

        def rank(r):
            w = spotagg.Worker(job, r, sw.address)
            tree = {"a": jnp.arange(300, dtype=jnp.float32) * (r + 1), "b": (jnp.full((4, 5), r + 1, jnp.int32),
                                                                            jnp.ones(7, jnp.bfloat16) * (r + 1))}
            eager = sj.allreduce(tree, w, op="sum")

            @jax.jit
            def step(t):
                g = jax.tree.map(lambda x: x * 2, t)
                return sj.allreduce(g, w)  # the mean

            jitted = step(tree)
            # Rank 0's values everywhere, bit for bit (its float32 leaf and its int32 one).
            b = sj.broadcast({"f": jnp.full(3, 0.1 * (r + 1), jnp.float32), "i": jnp.int32(r + 7)}, w)
            assert np.array_equal(np.asarray(b["f"]), np.full(3, 0.1, np.float32)) and int(b["i"]) == 7
            return eager, jitted

        (e0, j0), (e1, j1) = run_ranks(2, rank)
    assert np.array_equal(np.asarray(e0["b"][0]), np.full((4, 5), 3, np.int32))
    assert np.abs(np.asarray(e0["a"]) - np.arange(300) * 3).max() < 1e-3
    assert np.asarray(e0["b"][1]).dtype == jnp.bfloat16 and np.all(np.asarray(e0["b"][1], np.float32) == 3)
    # Inside jit: the mean of 2·x, so 3·x for float and int alike (int: floor of 6/2).
    assert np.abs(np.asarray(j0["a"]) - np.arange(300) * 3).max() < 1e-3
    assert np.array_equal(np.asarray(j0["b"][0]), np.full((4, 5), 3, np.int32))
    for x, y in zip(jax.tree.leaves(j0), jax.tree.leaves(j1)):
        assert np.array_equal(np.asarray(x, np.float32), np.asarray(y, np.float32)), "ranks disagree"
    with pytest.raises(TypeError, match="leaf 0 has dtype float64"):
        sj.allreduce([np.zeros(3)], None)


@pytest.mark.parametrize("backend", ["jax", "tensorflow", "torch"])
def test_keras_fit_with_distributed_optimizer_matches_one_process(backend):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    job = loopback_job(2, slots=32)
    epochs = 6
    with spotagg.SoftwareSwitch(job) as sw:
        procs = [ctx.Process(target=keras_cases.fit_rank, args=(backend, r, 2, job, sw.address, epochs, q))
                 for r in range(2)]
        procs.append(ctx.Process(target=keras_cases.fit_reference, args=(backend, 2, epochs, q)))
        for p in procs:
            p.start()
        results, tapes = {}, {}
        for _ in range(len(procs) * (2 if backend == "tensorflow" else 1)):
            k, w, h = q.get(timeout=240)
            assert w != "error", h
            if k == "tape":
                tapes[w] = h
            else:
                results[k] = (w, h)
        for p in procs:
            p.join(30)
    if backend == "tensorflow":
        # DistributedGradientTape in a tf.function loop (a None gradient included): the ranks
        # agree and match one process on the whole batch.
        for a, b, r in zip(tapes[0], tapes[1], tapes["ref"]):
            assert np.array_equal(a, b) and np.abs(a - r).max() < 1e-5, (a, b, r)
    (s0, h0), (s1, h1), (sr, hr) = results[0], results[1], results["ref"]
    # After every step (one batch an epoch): the ranks equal bit for bit, and within 1e-5 of the
    # one process (each step's averaged gradient is within the fixed-point bound of the float32
    # mean, docs/worker.md, about 1e-7 here; 1e-5 leaves room for momentum carrying it over 6 steps).
    assert len(s0) == len(s1) == len(sr) == epochs
    for step, (a, b, r) in enumerate(zip(s0, s1, sr)):
        for x, y, z in zip(a, b, r):
            assert np.array_equal(x, y), f"step {step}: the ranks' weights differ"
            assert float(np.abs(x - z).max()) < 1e-5, (step, float(np.abs(x - z).max()))
    # MetricAverageCallback: both ranks report the job's mean loss, the reference's within 1e-4.
    assert np.allclose(h0, h1) and np.allclose(h0, hr, atol=1e-4), (h0, h1, hr)


@pytest.mark.parametrize("backend", ["jax", "tensorflow"])
def test_ranks_with_different_gradient_lists_fail_clearly(backend):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    job = loopback_job(2, slots=32)
    with spotagg.SoftwareSwitch(job) as sw:
        procs = [ctx.Process(target=keras_cases.frozen_rank, args=(backend, r, 2, job, sw.address, q)) for r in range(2)]
        for p in procs:
            p.start()
        out = dict(q.get(timeout=240) for _ in procs)
        for p in procs:
            p.join(30)
        counters = sw.counters()
    for r in range(2):
        assert "list of" in out[r] and "differs from another rank's" in out[r], out[r]
    assert "list of 4 tensors" in out[0] and "list of 2 tensors" in out[1], out
    # Only the signatures were summed: one 3-element int32 all-reduce (one packet) per rank.
    assert counters["contributions"] <= 2 * 2 + 2 * 32 + 2, counters


def test_worker_from_env_names_what_is_missing(monkeypatch):
    for k in ("SPOTAGG_RANK", "RANK", "SPOTAGG_WORLD_SIZE", "WORLD_SIZE", "SPOTAGG_JOB", "SPOTAGG_SWITCH",
              "SPOTAGG_CONTROLLER", "SPOTAGG_BIND"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(ValueError, match="no SPOTAGG_RANK or RANK in the environment"):
        spotagg.worker_from_env()
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("SPOTAGG_WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="SPOTAGG_WORLD_SIZE = 'two' is not a whole number"):
        spotagg.worker_from_env()
    monkeypatch.setenv("SPOTAGG_WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="neither SPOTAGG_JOB .* nor SPOTAGG_CONTROLLER"):
        spotagg.worker_from_env()
    job = loopback_job(2)
    monkeypatch.setenv("SPOTAGG_JOB", job)
    with pytest.raises(ValueError, match="SPOTAGG_SWITCH"):
        spotagg.worker_from_env()
    with spotagg.SoftwareSwitch(job) as sw:
        monkeypatch.setenv("SPOTAGG_SWITCH", sw.address)
        w = spotagg.worker_from_env()
        assert (w.rank, w.world_size) == (1, 2)
