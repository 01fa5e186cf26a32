"""The bodies of the DDP tests, run on each rank by ranks.spawn."""

import warnings

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import spotagg.torch as st


def model(seed=0):
    torch.manual_seed(seed)
    # Six 64x64 layers: with a 20 KB bucket cap, several buckets of equal size, so a bucket sent
    # out of index order on one rank would be summed with another bucket of the other ranks.
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(64, 64), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(64, 10))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)


def train_step(ddp, opt, rank, step):
    x, y = batch(rank, step)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(ddp(x), y).backward()
    opt.step()


def params(m):
    return torch.cat([p.detach().reshape(-1) for p in m.parameters()])


def sgd_ddp(**options):
    """DDP of model() (20 KB buckets; `options` for DDP) and its SGD optimizer."""
    ddp = DDP(model(), bucket_cap_mb=0.02, **options)
    return ddp, torch.optim.SGD(ddp.parameters(), lr=0.1)


def hooked_ddp(switch, job, **options):
    """sgd_ddp() with the spotagg hook registered: the DDP, the hook's state (`options` for
    HookState) and the optimizer."""
    ddp = DDP(model(), bucket_cap_mb=0.02)
    state = st.HookState(switch=switch, job=job, **options)
    ddp.register_comm_hook(state, st.allreduce_hook)
    return ddp, state, torch.optim.SGD(ddp.parameters(), lr=0.1)


def hook_against_default(rank, n, job, switch, steps):
    ref, o1 = sgd_ddp()
    hooked, state, o2 = hooked_ddp(switch, job)
    diffs = []
    for step in range(steps):
        train_step(ref, o1, rank, step)
        train_step(hooked, o2, rank, step)
        diffs.append(float((params(ref) - params(hooked)).abs().max()))
    buckets = state.buckets
    out = dict(diffs=diffs, switch_ops=state.switch_allreduces, fell_back=state.fell_back, buckets=buckets,
               params=params(hooked).numpy(), ref=params(ref).numpy())
    state.close()
    return out


def fallback(rank, n, job, switch, steps, stop_at, stop_event, stopped_event, allow_fallback):
    hooked, state, opt = hooked_ddp(switch, job, fallback=allow_fallback)
    out = dict(caught=None)
    # The default hook's DDP, trained alongside so that its buckets are rebuilt as the hooked
    # one's (Gloo's summation order of an element depends on its offset in the bucket).
    ref, ref_opt = sgd_ddp()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(steps):
            if step == stop_at:
                out["buckets_before_stop"] = len(state.buckets)
                dist.barrier()
                if rank == 0:
                    stop_event.set()
                    stopped_event.wait(30)
                dist.barrier()
                # From here on: the default hook from the same parameters.
                with torch.no_grad():
                    for a, b in zip(ref.parameters(), hooked.parameters()):
                        a.copy_(b)
            try:
                train_step(hooked, opt, rank, step)
            except Exception as e:  # noqa: BLE001 - the fallback=False case reports it
                out["caught"] = f"{type(e).__name__}: {e}"
                out["error"] = repr(state.error)
                break
            train_step(ref, ref_opt, rank, step)
            if step >= stop_at:
                out.setdefault("equal", []).append(bool(torch.equal(params(ref), params(hooked))))
                out.setdefault("maxdiff", []).append(float((params(ref) - params(hooked)).abs().max()))
    out["warnings"] = [str(w.message) for w in caught if "spotagg" in str(w.message)]
    out["fell_back"] = state.fell_back
    out["switch_ops"] = state.switch_allreduces
    if allow_fallback:
        state.close()
    return out


def wrong_world(rank, n, job, switch):
    try:
        st.HookState(switch=switch, job=job)
    except ValueError as e:
        return str(e)
    return None


def backend(rank, n, job, switch):
    import os

    os.environ.update(SPOTAGG_JOB=job, SPOTAGG_SWITCH=switch)
    sw = dist.new_group(backend="spotagg")
    out = {"name": dist.get_backend(sw)}
    # all_reduce through the switch: int32 exact, float32 (SUM).
    t = torch.arange(1000, dtype=torch.int32) * (rank + 1)
    dist.all_reduce(t, group=sw)
    out["int_ok"] = bool(torch.equal(t, torch.arange(1000, dtype=torch.int32) * sum(range(1, n + 1))))
    f = torch.full((3000,), 0.25 * (rank + 1))
    work = dist.all_reduce(f, group=sw, async_op=True)
    work.wait()
    out["float_maxerr"] = float((f - 0.25 * sum(range(1, n + 1))).abs().max())
    # Not through the switch: MAX, broadcast, all_gather, barrier.
    m = torch.tensor([float(rank)])
    dist.all_reduce(m, op=dist.ReduceOp.MAX, group=sw)
    out["max"] = float(m.item())
    b = torch.tensor([rank + 7.0])
    dist.broadcast(b, src=1, group=sw)
    out["broadcast"] = float(b.item())
    g = [torch.zeros(2) for _ in range(n)]
    dist.all_gather(g, torch.tensor([rank, -rank], dtype=torch.float32), group=sw)
    out["gather"] = [x.tolist() for x in g]
    dist.barrier(group=sw)
    # DDP over the spotagg group against DDP over the default (Gloo) group.
    ref, o1 = sgd_ddp()
    spot, o2 = sgd_ddp(process_group=sw)
    diffs = []
    for step in range(5):
        train_step(ref, o1, rank, step)
        train_step(spot, o2, rank, step)
        diffs.append(float((params(ref) - params(spot)).abs().max()))
    out["ddp_diffs"] = diffs
    out["switch_ops"] = sw.sender.switch_ops
    return out


def fallback_mid_step(rank, n, job, switch, steps):
    """Trains while the test process stops the switch at some moment of its own; returns the
    parameters and whether the hook fell back."""
    hooked, state, opt = hooked_ddp(switch, job)
    ref, ref_opt = sgd_ddp()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(steps):
            train_step(hooked, opt, rank, step)
            train_step(ref, ref_opt, rank, step)
    out = dict(params=params(hooked).numpy(), ref=params(ref).numpy(), fell_back=state.fell_back,
               switch_ops=state.switch_allreduces, buckets=len(state.buckets))
    state.close()
    return out


def gradscaler_overflow(rank, n, job, switch, steps, bad_step, bad_rank):
    """SGD under torch.amp.GradScaler (CPU) through the hook; at `bad_step` rank `bad_rank`'s
    loss is made infinite, so its gradients are not finite. Returns per step the scale after it
    and whether the parameters changed, and the hook's state."""
    hooked, state, opt = hooked_ddp(switch, job)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    scales, changed = [], []
    for step in range(steps):
        x, y = batch(rank, step)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(hooked(x), y)
        if step == bad_step and rank == bad_rank:
            loss = loss * float("inf")
        before = params(hooked).clone()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(float(scaler.get_scale()))
        changed.append(bool((params(hooked) != before).any()))
    out = dict(scales=scales, changed=changed, fell_back=state.fell_back, error=repr(state.error),
               params=params(hooked).numpy(), switch_ops=state.switch_allreduces, buckets=len(state.buckets))
    state.close()
    return out


def half_precision(rank, n, job, switch, steps, dtype_name, compression=None):
    """The model in `dtype_name` (float16 or bfloat16 half precision; so are DDP's buckets) through
    the hook with `compression` and through Gloo's default all-reduce; returns both parameter
    vectors (float32), the buckets' dtypes and the hook's counts."""
    dtype = getattr(torch, dtype_name)
    ddp = DDP(model().to(dtype), bucket_cap_mb=0.02)
    state = st.HookState(switch=switch, job=job, compression=compression)
    ddp.register_comm_hook(state, st.allreduce_hook)
    ref = DDP(model().to(dtype), bucket_cap_mb=0.02)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ddp, ref)]
    for step in range(steps):
        x, y = batch(rank, step)
        for m, o in zip((ddp, ref), opts):
            o.zero_grad()
            torch.nn.functional.cross_entropy(m(x.to(dtype)).float(), y).backward()
            o.step()
    out = dict(params=params(ddp).float().numpy(), ref=params(ref).float().numpy(), fell_back=state.fell_back,
               error=repr(state.error), switch_ops=state.switch_allreduces, lanes16_ops=state.lanes16_allreduces,
               buckets=len(state.buckets), dtypes=sorted({str(p.grad.dtype) for p in ddp.parameters()}))
    state.close()
    return out


def lanes16_refused(rank, n, job, switch):
    """HookState(compression="lanes16") on a job without 16-bit lanes: the ValueError's text."""
    try:
        st.HookState(switch=switch, job=job, compression="lanes16")
    except ValueError as e:
        return str(e)
    return None


def hosts_against_default(rank, n, job, switch, steps, local_size, close_at=None):
    """hook_against_default with `local_size` ranks per host (the job lists the hosts); with
    `close_at`, rank 0 sets the test's event there and waits for the switch to be closed, so
    that the ranks fall back in the middle of a step."""
    ref, o1 = sgd_ddp()
    hooked, state, o2 = hooked_ddp(switch, job, local_size=local_size)
    diffs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(steps):
            train_step(ref, o1, rank, step)
            train_step(hooked, o2, rank, step)
            diffs.append(float((params(ref) - params(hooked)).abs().max()))
    out = dict(diffs=diffs, switch_ops=state.switch_allreduces, fell_back=state.fell_back, buckets=len(state.buckets),
               params=params(hooked).numpy(), leader=state.worker is not None)
    state.close()
    return out


def backend_hosts(rank, n, job, switch, local_size):
    """The spotagg backend with LOCAL_WORLD_SIZE ranks per host: int32 exact, float32 and a
    DDP model against the default group's."""
    import os

    os.environ.update(SPOTAGG_JOB=job, SPOTAGG_SWITCH=switch, LOCAL_WORLD_SIZE=str(local_size))
    sw = dist.new_group(backend="spotagg")
    t = torch.arange(1000, dtype=torch.int32) * (rank + 1)
    dist.all_reduce(t, group=sw)
    out = {"int_ok": bool(torch.equal(t, torch.arange(1000, dtype=torch.int32) * sum(range(1, n + 1))))}
    f = torch.full((3000,), 0.25 * (rank + 1))
    dist.all_reduce(f, group=sw)
    out["float_maxerr"] = float((f - 0.25 * sum(range(1, n + 1))).abs().max())
    ref, o1 = sgd_ddp()
    spot, o2 = sgd_ddp(process_group=sw)
    for step in range(4):
        train_step(ref, o1, rank, step)
        train_step(spot, o2, rank, step)
    out["ddp_diff"] = float((params(ref) - params(spot)).abs().max())
    out["params"] = params(spot).numpy()
    return out


def hosts_via_controller(rank, n, controller, steps, local_size):
    """hosts_against_default with no job: each host's leader registers with the controller from
    its own loopback address (127.0.0.60 + host) and takes the job from the answer."""
    host = rank // local_size
    ref, o1 = sgd_ddp()
    ddp = DDP(model(), bucket_cap_mb=0.02)
    state = st.HookState(controller=controller, bind=f"127.0.0.{60 + host}", local_size=local_size)
    ddp.register_comm_hook(state, st.allreduce_hook)
    o2 = torch.optim.SGD(ddp.parameters(), lr=0.1)
    diffs = []
    for step in range(steps):
        train_step(ref, o1, rank, step)
        train_step(ddp, o2, rank, step)
        diffs.append(float((params(ref) - params(ddp)).abs().max()))
    out = dict(diffs=diffs, switch_ops=state.switch_allreduces, fell_back=state.fell_back, buckets=len(state.buckets),
               params=params(ddp).numpy(), leader=state.worker is not None,
               world=state.worker.world_size if state.worker is not None else None)
    state.close()
    return out
