"""examples/train_digits.py runs end to end (2 ranks, 3 epochs) with spotagg in 32-bit and in
16-bit lanes, with Gloo and with Gloo's fp16_compress_hook (`--all`); examples/keras_digits.py
with the JAX loop."""

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_train_digits_every_method(tmp_path):
    cmd = [sys.executable, os.path.join(ROOT, "examples", "train_digits.py"), "--all", "--ranks", "2",
           "--epochs", "3", "--results", str(tmp_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    a = json.loads((tmp_path / "digits-spotagg.json").read_text())
    b = json.loads((tmp_path / "digits-gloo.json").read_text())
    assert a["switch_allreduces"] > 0 and not a["fell_back"]
    assert a["switch_counters"]["contributions"] > 0
    assert len(a["loss"]) == 3 and a["loss"][-1] < a["loss"][0]
    assert abs(a["accuracy"][-1] - b["accuracy"][-1]) <= 0.01
    assert a["lanes16_allreduces"] == 0
    h = json.loads((tmp_path / "digits-spotagg16.json").read_text())
    assert h["lanes16_allreduces"] == h["switch_allreduces"] > 0 and not h["fell_back"]
    assert h["switch_counters"]["contributions"] > 0 and "lane_mismatch" not in h["switch_counters"]
    f = json.loads((tmp_path / "digits-gloo-fp16.json").read_text())
    for other in (h, f):
        assert abs(other["accuracy"][-1] - b["accuracy"][-1]) <= 0.02
    assert (tmp_path / "digits-loss.png").stat().st_size > 10_000
    for mode in ("spotagg", "spotagg16", "gloo", "gloo-fp16"):
        assert f"[{mode}] epoch   3" in p.stdout, mode
    assert "| spotagg switch, 16-bit lanes |" in p.stdout


def test_keras_digits_jax_matches_one_process():
    """examples/keras_digits.py with the JAX loop on 2 processes: the ranks equal bit for bit,
    the same test accuracy as one process with the global batch."""
    cmd = [sys.executable, os.path.join(ROOT, "examples", "keras_digits.py"), "--framework", "jax", "--ranks", "2", "--epochs", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"test accuracy ([0-9.]+)% through spotagg, ([0-9.]+)% on one process.*largest weight difference ([0-9.e+-]+); ranks equal", p.stdout)
    assert m and m.group(1) == m.group(2) and float(m.group(3)) < 1e-5, p.stdout
