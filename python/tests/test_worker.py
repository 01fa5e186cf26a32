"""spotagg.Worker and spotagg.SoftwareSwitch: all-reduce of numpy arrays and torch tensors
through the reference switch over loopback UDP, and the errors."""

import socket
import threading
import time

import numpy as np
import pytest
import torch

import spotagg
from conftest import loopback_job, run_ranks, switch_bind, workers


@pytest.mark.parametrize("n", [1, 4])
def test_int32_sum_is_exact_with_wraparound(n):
    job = loopback_job(n, slots=16)
    rng = np.random.default_rng(1)
    # 5000 elements: not a multiple of 256, so the last packet is padded.
    inputs = [rng.integers(-(2**31), 2**31, size=5000, dtype=np.int64).astype(np.int32) for _ in range(n)]
    expected = (np.sum(np.stack(inputs).astype(np.int64), axis=0) + 2**31) % 2**32 - 2**31
    data = [a.copy() for a in inputs]
    with spotagg.SoftwareSwitch(job) as sw:
        ws = workers(job, n, sw.address)
        stats = run_ranks(n, lambda r: ws[r].allreduce(data[r]))
        counters = sw.counters()
    for r in range(n):
        np.testing.assert_array_equal(data[r], expected.astype(np.int32))
        assert stats[r].elements == 5000 and stats[r].chunks == 20 and stats[r].packets >= 20
    # 20 packets a worker, plus its session join (docs/switch.md §2.1: joins count as contributions)
    assert counters["contributions"] == 20 * n + n


def test_float32_within_the_fixed_point_bound():
    n = 4
    job = loopback_job(n, slots=32)
    rng = np.random.default_rng(2)
    # Gradient-like values over many magnitudes, zeros, and a 2-element tail.
    inputs = []
    for _ in range(n):
        a = (rng.standard_normal(100_002) * np.exp(rng.uniform(-12, 6, 100_002))).astype(np.float32)
        a[1000:1300] = 0
        inputs.append(a)
    data = [a.copy() for a in inputs]
    with spotagg.SoftwareSwitch(job) as sw:
        ws = workers(job, n, sw.address)
        run_ranks(n, lambda r: ws[r].allreduce(data[r]))
    exact = np.sum(np.stack(inputs).astype(np.float64), axis=0)
    bound = spotagg.error_bounds(inputs, data[0], ws[0].elements_per_packet)
    err = np.abs(data[0].astype(np.float64) - exact)
    assert np.all(err <= bound), f"worst excess {np.max(err - bound)}"
    # The error is small, not just bounded: relative to the sum, below 1e-6 (median).
    big = np.abs(exact) > 1e-3
    assert np.median(err[big] / np.abs(exact[big])) < 1e-6
    for r in range(1, n):
        np.testing.assert_array_equal(data[r], data[0])
    np.testing.assert_array_equal(data[0][1000:1300], 0)


def test_float32_in_16_bit_lanes_within_their_bound_at_half_the_packets():
    """lanes=16 (docs/switch.md §9): the same tensors in half the packets, each element within
    the 16-bit bound, the same on every rank; the switch counts no lane mismatch."""
    n = 4
    job = loopback_job(n, slots=32, lanes16=True)
    rng = np.random.default_rng(3)
    inputs = [(rng.standard_normal(100_002) * np.exp(rng.uniform(-8, 4, 100_002))).astype(np.float32) for _ in range(n)]
    data = [a.copy() for a in inputs]
    with spotagg.SoftwareSwitch(job, bind=switch_bind(job)) as sw:
        ws = workers(job, n, sw.address)
        assert ws[0].lanes16
        stats = run_ranks(n, lambda r: ws[r].allreduce(data[r], lanes=16))
        counters = sw.counters()
    k = ws[0].elements_per_packet
    assert stats[0].chunks == -(-100_002 // (2 * k)), "2k elements a packet"
    exact = np.sum(np.stack(inputs).astype(np.float64), axis=0)
    bound = spotagg.error_bounds(inputs, data[0], k, lanes=16)
    err = np.abs(data[0].astype(np.float64) - exact)
    assert np.all(err <= bound), f"worst excess {np.max(err - bound)}"
    # 16-bit sized: above the 32-bit bound somewhere; relative to the sum, the median error is
    # below 5e-3 (this data spans e^12 within a block of 512 elements, and each element's error
    # is bounded by the block's largest magnitude, not its own).
    assert np.any(err > spotagg.error_bounds(inputs, data[0], k))
    big = np.abs(exact) > 1e-2
    assert np.median(err[big] / np.abs(exact[big])) < 5e-3
    for r in range(1, n):
        np.testing.assert_array_equal(data[r], data[0])
    assert counters["lane_mismatch"] == 0


def test_16_bit_lanes_refused_before_anything_is_sent():
    """A job without lanes16, or an int32 array: a ValueError naming why, and the worker goes on."""
    job = loopback_job(1, slots=8)
    with spotagg.SoftwareSwitch(job) as sw:
        (w,) = workers(job, 1, sw.address)
        assert not w.lanes16
        x = np.ones(1000, dtype=np.float32)
        with pytest.raises(ValueError, match="lanes16 = true"):
            w.allreduce(x, lanes=16)
        with pytest.raises(ValueError, match="16 or 32"):
            w.allreduce(x, lanes=8)
        w.allreduce(x)
        np.testing.assert_array_equal(x, 1.0)
    job = loopback_job(1, slots=8, lanes16=True)
    with spotagg.SoftwareSwitch(job, bind=switch_bind(job)) as sw:
        (w,) = workers(job, 1, sw.address)
        with pytest.raises(ValueError, match="float32"):
            w.allreduce(np.ones(10, dtype=np.int32), lanes=16)
    with pytest.raises(ValueError, match="SwitchML port"):
        spotagg.SoftwareSwitch(job, bind="127.0.0.1:40000")


def test_a_chunk_that_is_not_finite_on_one_rank_is_nan_on_every_rank():
    """docs/switch.md §2.0: exponent 127 through the reference switch (the SoftwareSwitch)."""
    n = 3
    job = loopback_job(n, slots=8)
    with spotagg.SoftwareSwitch(job) as sw:
        ws = workers(job, n, sw.address)
        k = ws[0].elements_per_packet
        data = [np.full(10 * k + 7, r + 1.0, np.float32) for r in range(n)]
        data[1][3 * k + 2] = np.nan
        data[2][10 * k + 1] = -np.inf
        run_ranks(n, lambda r: ws[r].allreduce(data[r]))
        for r in range(n):
            chunk_nan = [bool(np.isnan(data[r][c * k:(c + 1) * k]).all()) for c in range(11)]
            assert chunk_nan == [c in (3, 10) for c in range(11)], (r, chunk_nan)
            finite = np.concatenate([data[r][c * k:(c + 1) * k] for c in range(11) if c not in (3, 10)])
            np.testing.assert_allclose(finite, 6.0, rtol=1e-6)
        # The next operation is exact again, and finite_only refuses such input.
        x = [np.full(100, 1.0, np.float32) for _ in range(n)]
        run_ranks(n, lambda r: ws[r].allreduce(x[r]))
        assert all((a == 3.0).all() for a in x)
    job1 = loopback_job(1)
    with spotagg.SoftwareSwitch(job1) as sw1:
        strict = spotagg.Worker(job1, 0, sw1.address, finite_only=True)
        with pytest.raises(ValueError, match="element 1 is NaN"):
            strict.allreduce(np.array([1.0, np.nan], np.float32))
        # The refusal sent nothing: the same worker sums the next tensor.
        b = np.full(3, 2.0, np.float32)
        strict.allreduce(b)
        np.testing.assert_array_equal(b, 2.0)


def test_many_operations_on_one_worker_and_torch_tensors_in_place():
    n = 2
    job = loopback_job(n, slots=8)
    with spotagg.SoftwareSwitch(job) as sw:
        ws = workers(job, n, sw.address)
        for step, size in enumerate([1, 255, 256, 257, 40_000, 3]):
            ts = [torch.full((size,), float(r + 1 + step), dtype=torch.float32) for r in range(n)]
            ptrs = [t.data_ptr() for t in ts]
            run_ranks(n, lambda r: ws[r].allreduce(ts[r]))
            for r in range(n):
                assert ts[r].data_ptr() == ptrs[r]
                torch.testing.assert_close(ts[r], torch.full((size,), float(3 + 2 * step)), rtol=1e-6, atol=0)
            it = [torch.arange(size, dtype=torch.int32).reshape(-1, 1) * (r + 1) for r in range(n)]
            run_ranks(n, lambda r: ws[r].allreduce(it[r]))
            assert torch.equal(it[0], torch.arange(size, dtype=torch.int32).reshape(-1, 1) * 3)
            # A numpy view of a tensor, 2-D: also in place.
            arr = [np.ones((size, 2), dtype=np.float32) for _ in range(n)]
            run_ranks(n, lambda r: ws[r].allreduce(arr[r]))
            np.testing.assert_array_equal(arr[1], 2)


def test_allreduce_releases_the_gil():
    """While two ranks of a job wait for each other in allreduce, a Python thread keeps running;
    one rank waits for the other, which starts 0.3 s late, so a held GIL would deadlock."""
    job = loopback_job(2, slots=4, timeout_ms=20)
    with spotagg.SoftwareSwitch(job) as sw:
        ws = workers(job, 2, sw.address)
        a, b = np.ones(1000, np.float32), np.ones(1000, np.float32)
        ticks = []
        t = threading.Thread(target=lambda: ws[0].allreduce(a))
        t.start()
        for _ in range(30):
            ticks.append(time.monotonic())
            time.sleep(0.01)
        ws[1].allreduce(b)
        t.join(30)
        assert not t.is_alive()
    assert len(ticks) == 30 and ticks[-1] - ticks[0] < 2.0
    np.testing.assert_array_equal(a, 2)


def test_type_errors_name_the_problem():
    job = loopback_job(1)
    with spotagg.SoftwareSwitch(job) as sw:
        w = spotagg.Worker(job, 0, sw.address)
        with pytest.raises(TypeError, match="not contiguous"):
            w.allreduce(np.ones((4, 4), np.float32)[:, 1])
        with pytest.raises(TypeError, match="dtype is float64"):
            w.allreduce(np.ones(4))
        with pytest.raises(TypeError, match="requires grad"):
            w.allreduce(torch.ones(4, requires_grad=True))
        with pytest.raises(TypeError, match="not contiguous"):
            w.allreduce(torch.ones(4, 4).t())
        with pytest.raises(TypeError, match="torch.float64"):
            w.allreduce(torch.ones(4, dtype=torch.float64))
        with pytest.raises(TypeError, match="numpy.ndarray or a torch.Tensor, not list"):
            w.allreduce([1.0, 2.0])
        ro = np.ones(4, np.float32)
        ro.flags.writeable = False
        with pytest.raises(TypeError, match="not writable"):
            w.allreduce(ro)
        with pytest.raises(ValueError, match="too large"):
            w.allreduce(np.array([1.0, 1e38], np.float32))
        # Refused before anything was sent: the worker goes on (no new Worker, no new session).
        a = np.arange(5, dtype=np.float32)
        w.allreduce(a)
        np.testing.assert_array_equal(a, np.arange(5))
    with pytest.raises(ValueError, match="rank 3 is not in the job"):
        spotagg.Worker(job, 3, "127.0.0.1:1")
    with pytest.raises(ValueError, match="must be the job's worker_port 48864"):
        spotagg.Worker(loopback_job(2), 0, "127.0.0.1:1", bind="127.0.0.10:0")
    with pytest.raises(ValueError, match="not an address"):
        spotagg.Worker(job, 0, "localhost")
    with pytest.raises(ValueError, match="payload_bytes"):
        spotagg.Worker(job.replace("payload_bytes = 1024", "payload_bytes = 1000"), 0, "127.0.0.1:1")
    with pytest.raises(ValueError, match="nope.toml"):
        spotagg.Worker("/nonexistent/nope.toml", 0, "127.0.0.1:1")


def test_job_from_a_file(tmp_path):
    p = tmp_path / "job.toml"
    p.write_text(loopback_job(1))
    for job in (p, str(p)):
        with spotagg.SoftwareSwitch(job) as sw:
            a = np.arange(10, dtype=np.int32)
            spotagg.Worker(job, 0, sw.address).allreduce(a)
            np.testing.assert_array_equal(a, np.arange(10))


def test_switch_unreachable_names_the_switch_and_does_not_hang():
    job = loopback_job(1, timeout_ms=5, max_retries=3)
    sw = spotagg.SoftwareSwitch(job)
    address = sw.address
    w = spotagg.Worker(job, 0, address)
    w.allreduce(np.ones(300, np.float32))
    sw.close()
    assert sw.closed
    t0 = time.monotonic()
    with pytest.raises(spotagg.SwitchUnreachable, match=rf"switch {address}.*slot \d+.*after 4 attempts"):
        w.allreduce(np.ones(300, np.float32))
    assert time.monotonic() - t0 < 5
    assert issubclass(spotagg.SwitchUnreachable, spotagg.SpotaggError)
    with pytest.raises(spotagg.SpotaggError, match="earlier all-reduce of this worker failed"):
        w.allreduce(np.ones(300, np.float32))


def test_protocol_error_from_a_switch_that_lies_about_exponents():
    """A misbehaving switch (a socket that answers each packet with the packet itself, its
    e1 exponent raised by one) makes the worker's exponent check fail: ProtocolError."""
    job = loopback_job(1, timeout_ms=50, max_retries=3)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(0.05)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                msg, addr = s.recvfrom(4096)
            except socket.timeout:
                continue
            m = bytearray(msg)
            m[9] = (m[9] + 1) % 128
            s.sendto(bytes(m), addr)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        w = spotagg.Worker(job, 0, f"127.0.0.1:{s.getsockname()[1]}")
        with pytest.raises(spotagg.ProtocolError, match="protocol error on slot"):
            w.allreduce(np.ones(1000, np.float32))
    finally:
        stop.set()
        t.join()
        s.close()


def test_counters_and_context_manager():
    job = loopback_job(1)
    with spotagg.SoftwareSwitch(job, "127.0.0.1:0") as sw:
        assert sw.address.startswith("127.0.0.1:") and not sw.closed
        spotagg.Worker(job, 0, sw.address).allreduce(np.ones(512, np.int32))
        c = sw.counters()
        # 2 packets and the session join; the join's reply (the session opening) is a multicast too
        assert c["contributions"] == 3 and c["results_multicast"] == 3
    assert sw.closed
    assert sw.counters()["datagrams_in"] >= 2


def test_digits_ship_in_the_package():
    x, y = spotagg.load_digits()
    assert x.shape == (1797, 64) and y.shape == (1797,)
    assert x.min() == 0 and x.max() == 16 and set(np.unique(y)) == set(range(10))
    from sklearn.datasets import load_digits

    ref = load_digits()
    np.testing.assert_array_equal(x, ref.data.astype(np.float32))
    np.testing.assert_array_equal(y, ref.target)
