"""The hook's fallback agreement (spotagg.torch._Sender) with real Gloo groups and a scripted
worker in place of the switch, so that a rank fails exactly where each test says: a rank that is
one operation ahead, that cannot send anything more (its main thread waits in another
collective, or its training is over), joins the agreement and hands its result to the rank that
lacks it; no rank hangs and every rank ends with the same values."""

import pytest

import agreement_cases as ac
from ranks import spawn


def expected(ops, switched):
    return [ac.switch_value(k) if k < switched else ac.gloo_value(k) for k in range(ops)]


@pytest.mark.parametrize("failing", [0, 1, 2])
def test_rank_behind_at_a_step_end_while_the_others_wait_in_a_collective(failing):
    # Operation 3 ends step 1: the switch answered it to all but `failing`, whose main thread
    # waits for it while the others' main threads wait in an all-reduce of the default group.
    out = spawn(ac.N, ac.run, [4, 2], {failing: [3]}, timeout=60)
    for r in range(ac.N):
        assert out[r]["values"] == expected(6, 4), (r, out[r])
        assert out[r]["fell_back"], out[r]
    assert [o["switch_ops"] for o in out] == [3 if r == failing else 4 for r in range(ac.N)]


@pytest.mark.parametrize("store", [True, False])
def test_rank_behind_at_the_last_operation(store):
    # The last operation of the training fails at rank 2 only; the others close their senders
    # (found by polling the store, or by close() itself without it).
    out = spawn(ac.N, ac.run, [3, 3], {2: [5]}, store, "nothing", timeout=60)
    for r in range(ac.N):
        assert out[r]["values"] == expected(6, 6), (r, out[r])
        assert out[r]["fell_back"], out[r]


def test_every_rank_fails_at_the_same_operation():
    out = spawn(ac.N, ac.run, [4, 2], {r: [2] for r in range(ac.N)}, timeout=60)
    for r in range(ac.N):
        assert out[r]["values"] == expected(6, 2), (r, out[r])
        assert out[r]["switch_ops"] == 2


def test_no_failure_no_fallback():
    out = spawn(ac.N, ac.run, [4, 2], {}, timeout=60)
    for r in range(ac.N):
        assert out[r]["values"] == expected(6, 6), (r, out[r])
        assert not out[r]["fell_back"] and out[r]["error"] == "None", out[r]
