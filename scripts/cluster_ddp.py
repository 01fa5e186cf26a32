"""One rank of the emulated cluster's DDP benchmark (scripts/cluster_bench.sh with
SPOTAGG_BENCH=ddp): training steps of a communication-bound model, its gradients averaged by
one of the ways PyTorch users have.

Runs inside a worker's network namespace (GLOO_SOCKET_IFNAME names its interface). The model
is an MLP of 6.8 M float32 parameters (1024-2048-2048-256), batch 8 a rank, SGD; each timed
step is forward, backward (DDP's buckets all-reduced by the --mode's hook) and the optimizer
step, after a barrier. --mode:

- ``gloo``: DDP's default all-reduce (Gloo, float32);
- ``gloo-fp16``: DDP's ``fp16_compress_hook`` over Gloo;
- ``powersgd2``, ``powersgd8``: ``powerSGD_hook`` of rank 2 / 8 over Gloo, with its warm-up
  (``start_powerSGD_iter`` = 2: the first steps are plain all-reduces, not timed) and error
  feedback, the model in one DDP bucket (below);
- ``spotagg``, ``spotagg16``: the spotagg hook through the switch at --switch (--job), in 32-bit
  lanes or with ``compression="lanes16"``.

Rank 0 prints one JSON line: the mode and each timed step's seconds (the slowest rank's).
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

MODES = ["gloo", "gloo-fp16", "powersgd2", "powersgd8", "spotagg", "spotagg16"]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True, help="IPv4 address of rank 0")
    p.add_argument("--port", type=int, default=29519)
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--switch", help="the spotagg switch, IP:PORT")
    p.add_argument("--job", help="the spotagg job TOML")
    a = p.parse_args()
    if "GLOO_SOCKET_IFNAME" not in os.environ:
        raise SystemExit("GLOO_SOCKET_IFNAME must name the namespace's interface")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{a.master}:{a.port}", rank=a.rank, world_size=a.world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
        torch.nn.Linear(2048, 256),
    )
    # PowerSGD over Gloo: one bucket. Its hook starts the second all-reduce of a bucket from the
    # callback of the first, on Gloo's thread, so with two buckets the ranks can issue their
    # collectives in different orders (Gloo: "Received data size doesn't match expected size",
    # seen here with 4 ranks); NCCL orders them on its stream.
    ddp = DDP(model, bucket_cap_mb=100) if a.mode.startswith("powersgd") else DDP(model)
    state = None
    if a.mode == "gloo-fp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif a.mode.startswith("powersgd"):
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook

        ps = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=int(a.mode[len("powersgd"):]), start_powerSGD_iter=2
        )
        ddp.register_comm_hook(ps, powerSGD_hook.powerSGD_hook)
    elif a.mode.startswith("spotagg"):
        import spotagg.torch as st

        state = st.HookState(switch=a.switch, job=a.job, compression="lanes16" if a.mode == "spotagg16" else None)
        ddp.register_comm_hook(state, st.allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(a.rank)
    times = []
    for step in range(a.warmup + a.steps):
        x, y = torch.randn(8, 1024, generator=g), torch.randint(0, 256, (8,), generator=g)
        dist.barrier()
        t = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
        if step >= a.warmup:
            times.append(time.perf_counter() - t)
    slowest = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    out = {"mode": a.mode, "seconds": slowest.tolist(), "params": sum(p.numel() for p in model.parameters())}
    if state is not None:
        out["fell_back"] = state.fell_back
        out["lanes16_allreduces"] = state.lanes16_allreduces
        state.close()
    if a.rank == 0:
        print(json.dumps(out), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
