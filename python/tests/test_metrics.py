"""spotagg.Stats.prometheus(): a worker's stats in the Prometheus text format, parsed by the
official client's parser (prometheus_client)."""

import numpy as np
import pytest

import spotagg
from conftest import loopback_job, run_ranks, workers

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # pragma: no cover - the message is the point
    text_string_to_metric_families = None


def test_worker_stats_parse_as_prometheus_text():
    if text_string_to_metric_families is None:
        pytest.fail("NOT RUN: prometheus_client is not installed (pip install prometheus_client; "
                    "scripts/python-env.sh installs it)")
    n = 2
    job = loopback_job(n, slots=8)
    data = [np.arange(3000, dtype=np.float32) * (r + 1) for r in range(n)]
    with spotagg.SoftwareSwitch(job) as sw:
        ws = workers(job, n, sw.address)
        stats = run_ranks(n, lambda r: ws[r].allreduce(data[r]))
    for r, st in enumerate(stats):
        fams = {f.name: f for f in text_string_to_metric_families(st.prometheus())}
        # The parser drops the _total suffix from counter family names.
        sent = fams["spotagg_worker_packets_sent"].samples[0]
        assert sent.labels == {"rank": str(r)} and sent.value == st.packets
        assert fams["spotagg_worker_retransmissions"].samples[0].value == st.retransmissions
        rtt = fams["spotagg_worker_rtt_seconds"]
        assert rtt.type == "gauge" and rtt.samples[0].value == pytest.approx(st.srtt_seconds)
        assert st.srtt_seconds > 0 and st.rank == r
