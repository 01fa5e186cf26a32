"""examples/train_digits.py runs end to end (2 ranks, 3 epochs) with spotagg and with Gloo."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_train_digits_spotagg_and_gloo(tmp_path):
    cmd = [sys.executable, os.path.join(ROOT, "examples", "train_digits.py"), "--both", "--ranks", "2",
           "--epochs", "3", "--results", str(tmp_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    a = json.loads((tmp_path / "digits-spotagg.json").read_text())
    b = json.loads((tmp_path / "digits-gloo.json").read_text())
    assert a["switch_allreduces"] > 0 and not a["fell_back"]
    assert a["switch_counters"]["contributions"] > 0
    assert len(a["loss"]) == 3 and a["loss"][-1] < a["loss"][0]
    assert abs(a["accuracy"][-1] - b["accuracy"][-1]) <= 0.01
    assert (tmp_path / "digits-loss.png").stat().st_size > 10_000
    assert "[spotagg] epoch   3" in p.stdout and "[gloo] epoch   3" in p.stdout
