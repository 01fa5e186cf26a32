"""Shared helpers of the spotagg tests: loopback jobs and running ranks on threads."""

import threading

import pytest

import spotagg


def run_ranks(n, fn, timeout=120.0):
    """Runs fn(rank) for rank 0..n on n threads; returns the results, re-raises the first
    exception. Fails if a rank does not finish within `timeout` seconds."""
    results = [None] * n
    errors = [None] * n

    def body(r):
        try:
            results[r] = fn(r)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors[r] = e

    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        if t.is_alive():
            pytest.fail(f"a rank did not finish within {timeout} s")
    for e in errors:
        if e is not None:
            raise e
    return results


def workers(job, n, switch):
    """n workers of `job`, rank r bound to 127.0.0.(10+r) on an ephemeral port (tests running
    side by side do not collide on the job's fixed worker port)."""
    return [spotagg.Worker(job, r, switch, bind=f"127.0.0.{10 + r}:0") for r in range(n)]
