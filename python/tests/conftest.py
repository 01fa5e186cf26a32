"""Shared helpers of the spotagg tests: loopback jobs and running ranks on threads."""

import itertools
import os
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


_jobs = itertools.count(1)


def loopback_job(n, **kw):
    """spotagg.example_job with worker addresses of their own, 127.X.Y.10 + rank (X from the
    process id, Y a counter), so that no two jobs of the tests, nor of tests running side by
    side, bind the same address and port (every rank binds the job's worker_port: the switch
    answers all ranks at the port of the round's last contribution)."""
    return spotagg.example_job(n, first_worker_ip=f"127.{100 + os.getpid() % 100}.{next(_jobs) % 250}.10", **kw)


def switch_bind(job):
    """An address of the job's own for its switch (127.X.Y.1, port 0): a job with lanes16 binds
    a SwitchML port and its twin there, apart from every other test's."""
    import tomllib

    a, b, c, _ = tomllib.loads(job)["worker"][0]["ip"].split(".")
    return f"{a}.{b}.{c}.1:0"


def workers(job, n, switch):
    """The n workers of `job`, each bound to its rank's address in the job."""
    return [spotagg.Worker(job, r, switch) for r in range(n)]
