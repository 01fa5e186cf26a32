"""HookState hands buckets to its sender in bucket.index() order within a step, whatever order
the hook is called in (DDP calls it in order today; the ranks' switch streams depend on it)."""

import spotagg.torch as st


class Recorder:
    def __init__(self):
        self.sent = []

    def submit(self, tensor, fut, then=None):
        self.sent.append(tensor)


def test_buckets_go_out_in_index_order_step_after_step():
    state = object.__new__(st.HookState)
    state._pending, state._next_index, state._sender = {}, 0, Recorder()
    # Step 1: buckets 0..3 arrive as 2, 0, 3 (last), 1. Step 2: 1, 0 (one bucket fewer: 0, 1 last).
    for index, last in [(2, False), (0, False), (3, True), (1, False)]:
        state._submit(index, last, f"s1b{index}", None)
    assert state._sender.sent == ["s1b0", "s1b1", "s1b2", "s1b3"]
    for index, last in [(1, True), (0, False)]:
        state._submit(index, last, f"s2b{index}", None)
    assert state._sender.sent[4:] == ["s2b0", "s2b1"]
    assert state._pending == {} and state._next_index == 0
