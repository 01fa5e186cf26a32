"""spotagg for PyTorch: a DDP communication hook and a torch.distributed backend.

Hook::

    import spotagg.torch
    state = spotagg.torch.HookState(switch="127.0.0.1:48864", job="job.toml")
    ddp.register_comm_hook(state, spotagg.torch.allreduce_hook)

averages the gradient buckets as DDP's default hook does (divide by the world size, then SUM
all-reduce), through the switch. Rank and world size come from torch.distributed; `job` and
`switch` may come from SPOTAGG_JOB and SPOTAGG_SWITCH.

How it runs: the hook hands each bucket to one sender thread, which all-reduces the buckets one
at a time in ``bucket.index()`` order (within each step) and completes the bucket's
``torch.futures.Future`` from that thread. Every rank thus sends the same bucket sequence to the
switch.

Fallback: when an all-reduce through the switch fails (the switch stopped answering, or any
other error), the bucket's input (kept until its all-reduce completes) is restored and that
bucket and every later one go through Gloo (a group of its own, used only by the sender thread),
with one warning naming the switch. The ranks first agree, with one Gloo all-reduce (MIN), on
how far each got: the switch may have answered the last bucket to some ranks and not to others
(a lost result), so a rank may be one bucket ahead; the lowest rank that is then broadcasts its
switch result of that bucket to the ranks that lack it, and every rank ends with the same
values. A rank that is ahead may have nothing more to send (its step is over, or it waits in a
collective of its own for the rank that failed): the failing rank writes a key in the default
group's store, which an idle sender that may be waited on looks for every 50 ms, and close()
joins the agreement too; ``HookState.close()`` is therefore collective while the switch is in
use. With ``fallback=False`` the error is kept in ``state.error``, the bucket's future is given
the error, and the next call of the hook raises it.

16-bit lanes (docs/switch.md §9, a job with ``lanes16 = true``): float16 and bfloat16 buckets
go through the switch as 16-bit lanes, half the bytes of 32-bit ones; with
``compression="lanes16"`` float32 buckets do too (the in-network counterpart of DDP's
``fp16_compress_hook``: each element of the sum within the 16-bit bound of docs/worker.md,
about 2^-15 · n of the bucket's packet-block maximum, against 2^-31 · n for 32-bit lanes).
Without ``lanes16`` in the job, every bucket goes as 32-bit lanes (float16 and bfloat16
widened), as before.

CUDA buckets (the hook and the backend) go through pinned host buffers, copied on a side stream
while the earlier buckets are on the wire (:class:`_Staging`); the future carries the device, so
DDP's stream waits for the copy back.

Several ranks per host (``local_size``, default ``LOCAL_WORLD_SIZE``): the job lists hosts;
each bucket is reduced over the host's ranks with Gloo to the host's first rank, which
all-reduces it through the switch, and a status word and then the sum are broadcast back; a
failure at the leader reaches its ranks in the status word and they join the agreement with it.

Backend: importing this module registers the torch.distributed backend ``spotagg``;
``dist.new_group(backend="spotagg")`` (with a Gloo default group, and SPOTAGG_JOB /
SPOTAGG_SWITCH set) serves ``all_reduce`` (SUM of float32, int32, float16 and bfloat16 CPU or
CUDA tensors; the 16-bit ones widened to float32 on the host, or as 16-bit lanes) through the
switch,
and broadcast, allgather, barrier and the other reductions through a Gloo group of its own.
"""



import atexit
import os
import queue
import sys
import threading
import warnings
import weakref

import torch
import torch.distributed as dist

from . import SpotaggError, Worker, register

__all__ = ["HookState", "allreduce_hook", "ProcessGroupSpotagg"]

#: What the switch sums: float32 and int32 as they are, float16 and bfloat16 widened to float32
#: on the host and narrowed back (the sum formed in 32 bits and rounded to 16 once).
_SWITCH_DTYPES = (torch.float32, torch.int32, torch.float16, torch.bfloat16)
_WIDENED = (torch.float16, torch.bfloat16)


#: ``compression=`` of HookState: what float32 buckets are sent as.
_COMPRESSIONS = (None, "none", "lanes16")


def _lanes_for(dtype, lanes16: bool, compression) -> int:
    """Bits a coordinate for a bucket of `dtype`: 16 for float16/bfloat16 when the job has 16-bit
    lanes, and for float32 with compression="lanes16"; else 32."""
    if not lanes16:
        return 32
    if dtype in _WIDENED or (dtype == torch.float32 and compression == "lanes16"):
        return 16
    return 32


def _job_and_switch(job, switch, controller=None):
    """(job, switch, controller): the job and switch given or from SPOTAGG_JOB / SPOTAGG_SWITCH;
    without a job, the controller given or SPOTAGG_CONTROLLER (docs/controller.md §7), with job
    and switch None: the hosts' leaders register and take the job from its answer."""
    job = job if job is not None else os.environ.get("SPOTAGG_JOB")
    switch = switch if switch is not None else os.environ.get("SPOTAGG_SWITCH")
    controller = controller if controller is not None else os.environ.get("SPOTAGG_CONTROLLER")
    if not job and controller:
        return None, switch or None, controller
    if not job:
        raise ValueError(
            "spotagg: no job: pass job= (a job TOML path or text) or set SPOTAGG_JOB, "
            "or controller= (\"HOST:PORT\") or SPOTAGG_CONTROLLER"
        )
    if not switch:
        raise ValueError("spotagg: no switch: pass switch= (\"IP:PORT\") or set SPOTAGG_SWITCH")
    return job, switch, None


def _rendezvous_scope() -> int:
    """A number the ranks of this torch.distributed job share and another job's do not: a hash
    of its rendezvous address (MASTER_ADDR:MASTER_PORT, which torchrun sets); 0 without one."""
    import zlib

    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    return zlib.crc32(f"{addr}:{port}".encode()) | 1 << 32 if addr and port else 0


def _route_to(controller: str) -> str:
    """This host's IPv4 address on the kernel's route to `controller` ("HOST:PORT")."""
    import socket

    host, _, port = controller.rpartition(":")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, int(port)))
        return s.getsockname()[0]


# Every live sender, so that the package stops them itself before the process group goes away
# (issue 35, item 5): when the default group is destroyed, and at interpreter exit before
# torch's own teardown (atexit runs its handlers last registered first, and this module is
# imported after torch). A sender thread still inside a Gloo call while the group's C++ objects
# are destroyed is what aborts a process with "terminate called without an active exception".
_SENDERS: "weakref.WeakSet[_Sender]" = weakref.WeakSet()

#: How long the package waits for a sender to finish at exit or group destruction (the other
#: ranks may still be sending their last buckets).
CLOSE_TIMEOUT_S = 30.0


def _close_all():
    for s in list(_SENDERS):
        try:
            s.close(CLOSE_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - at exit: nothing left to tell
            pass


atexit.register(_close_all)

_destroy_process_group = dist.destroy_process_group


def _destroy_then_close(group=None):
    """torch.distributed.destroy_process_group, the package's senders closed first when the
    default group goes (their Gloo groups are the default group's subgroups)."""
    if group is None or group is dist.group.WORLD:
        _close_all()
    return _destroy_process_group(group)


_destroy_then_close.__doc__ = (_destroy_process_group.__doc__ or "") + "\n(spotagg: closes its senders first.)"
dist.destroy_process_group = _destroy_then_close
dist.distributed_c10d.destroy_process_group = _destroy_then_close


class _Staging:
    """CUDA tensors through the host, as Gloo serves them without GPUDirect
    (``AsyncAllreduceCUDAHostWork``): on the caller's thread, an event on its current stream, a
    side stream (one per device) that waits on it and copies the tensor into a pinned host
    buffer with ``non_blocking=True``; on the sender thread, a wait for that copy, the
    all-reduce of the host buffer, a ``non_blocking`` copy back on the side stream, and the
    future completed with the side stream current, so that whoever waits on it (DDP, or
    ``fut.wait()``) has its stream wait for the copy back. Pinned buffers are kept per (size,
    dtype) and reused once their copy back has completed. While one bucket is on the wire, the
    next ones are being copied: they were staged when the hook got them."""

    def __init__(self):
        self._streams = {}
        self._buffers = {}
        self._lock = threading.Lock()

    def _buffer(self, numel: int, dtype):
        with self._lock:
            free = self._buffers.setdefault((numel, dtype), [])
            for b in free:
                if b[1] is None or b[1].query():
                    b[1] = None
                    free.remove(b)
                    return b
        return [torch.empty(numel, dtype=dtype, pin_memory=True), None]

    def release(self, buf, done_event):
        buf[1] = done_event
        with self._lock:
            self._buffers.setdefault((buf[0].numel(), buf[0].dtype), []).append(buf)

    def stage(self, tensor: torch.Tensor) -> "_Staged":
        dev = tensor.device
        side = self._streams.get(dev)
        if side is None:
            side = self._streams[dev] = torch.cuda.Stream(device=dev)
        ready = torch.cuda.Event()
        ready.record(torch.cuda.current_stream(dev))
        buf = self._buffer(tensor.numel(), tensor.dtype)
        with torch.cuda.stream(side):
            side.wait_event(ready)
            # The caching allocator must not hand the bucket's memory to another stream while
            # the side stream still reads or writes it.
            tensor.record_stream(side)
            buf[0].copy_(tensor.reshape(-1), non_blocking=True)
            copied = torch.cuda.Event()
            copied.record(side)
        return _Staged(self, tensor, buf, side, copied)


class _Staged:
    """A CUDA tensor staged in a pinned host buffer (:class:`_Staging`)."""

    def __init__(self, staging, tensor, buf, side, copied):
        self.staging, self.tensor, self.buf, self.side, self.copied = staging, tensor, buf, side, copied

    def host(self) -> torch.Tensor:
        """The host copy, once the device-to-host copy is done (sender thread)."""
        self.copied.synchronize()
        return self.buf[0]

    def finish(self, fut: torch.futures.Future):
        """The host result back to the device on the side stream, and `fut` completed with the
        device tensor while the side stream is current."""
        with torch.cuda.stream(self.side):
            self.tensor.reshape(-1).copy_(self.buf[0], non_blocking=True)
            done = torch.cuda.Event()
            done.record(self.side)
            self.staging.release(self.buf, done)
            fut.set_result(self.tensor)

    def fail(self, fut: torch.futures.Future, e: BaseException):
        self.staging.release(self.buf, None)
        fut.set_exception(e)


class _Sender:
    """One thread that all-reduces tensors in submission order, through the switch while it
    works and through `gloo` after the first failure (see the module doc).

    `store` and `key`: where a rank that fails writes that it did, so that a rank with nothing
    to send (between steps, or blocked in a collective of its own that waits for the failing
    rank) notices and joins the agreement; without a store such a rank joins it only with its
    next operation or at close()."""

    #: how often an idle sender that may be waited on looks for another rank's failure
    POLL_S = 0.05

    def __init__(self, worker, gloo, world_size: int, rank: int, fallback: bool, store=None, key=None,
                 local=None, switch_name=None, lanes16=False, compression=None):
        # `worker`: this rank's Worker, or None on a host's other ranks (`local`: the Gloo group
        # of the host's ranks, its rank 0 the leader, which has the Worker; see the module doc).
        self.worker = worker
        self.local = local
        self.switch_name = switch_name if switch_name is not None else worker.switch
        self.lanes16 = lanes16
        self.compression = compression
        #: Buckets all-reduced through the switch in 16-bit lanes.
        self.lanes16_ops = 0
        self.gloo = gloo
        self.world_size = world_size
        self.rank = rank
        self.fallback = fallback
        self.store = store if fallback else None
        self.key = key
        self.use_gloo = False
        self.error = None
        self.fallbacks = 0
        self.switch_ops = 0
        self._reason = None
        # Operations started (the index of the next one).
        self._seq = 0
        # Switch operations completed since the last agreement: while there are any, another
        # rank may still be waiting for the result of the last one.
        self._since = 0
        # (index, copy of the result) of the last operation completed through the switch.
        self._last_out = None
        self._queue: queue.Queue = queue.Queue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="spotagg-sender", daemon=True)
        self._thread.start()
        _SENDERS.add(self)

    def submit(self, tensor: torch.Tensor, fut: torch.futures.Future, then=None):
        self._queue.put((tensor, fut, then))

    def close(self, timeout=None):
        """Stops the thread after the operations already submitted (collective while the switch
        is in use, see the module doc); idempotent."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
        self._thread.join(timeout)

    def _waited_on(self) -> bool:
        """Whether another rank may need this one in an agreement it has not yet joined."""
        return self.fallback and not self.use_gloo and self._since > 0

    def _peer_failed(self) -> bool:
        try:
            return self.store.check([self.key])
        except Exception:  # noqa: BLE001 - the store is gone (shutdown): nothing to join
            self.store = None
            return False

    def _note(self, e: BaseException):
        if self.error is None:
            self.error = e
        print(f"spotagg: {type(e).__name__}: {e}", file=sys.stderr, flush=True)

    def _run(self):
        while True:
            polling = self.store is not None and self._waited_on()
            try:
                item = self._queue.get(timeout=self.POLL_S if polling else None)
            except queue.Empty:
                if self._peer_failed():
                    try:
                        self._agree(failed=False)
                    except BaseException as e:  # noqa: BLE001 - kept; later operations see it
                        self._note(e)
                continue
            if item is None:
                # close() is collective while the switch is in use: a rank whose last
                # operation failed may be waiting for this one's result.
                if self._waited_on():
                    try:
                        self._agree(failed=False)
                    except BaseException as e:  # noqa: BLE001
                        self._note(e)
                return
            tensor, fut, then = item
            staged = tensor if isinstance(tensor, _Staged) else None
            try:
                if staged is not None:
                    tensor = staged.host()
                self._one(tensor)
                if staged is not None:
                    staged.finish(fut)
                else:
                    if then is not None:
                        then(tensor)
                    fut.set_result(tensor)
            except BaseException as e:  # noqa: BLE001 - handed to the future and kept
                self._note(e)
                if staged is not None:
                    staged.fail(fut, e)
                else:
                    fut.set_exception(e)

    def _one(self, tensor: torch.Tensor):
        try:
            if self.error is not None and not self.fallback:
                raise self.error
            if not self.use_gloo and tensor.dtype in _SWITCH_DTYPES:
                kept = tensor.clone()
                try:
                    self._through_switch(tensor)
                except (SpotaggError, ValueError, OSError) as e:
                    if not self.fallback:
                        raise
                    tensor.copy_(kept)
                    self._reason = e
                    if self._agree(failed=True, current=tensor):
                        return
                else:
                    self.switch_ops += 1
                    self._since += 1
                    self._last_out = (self._seq, tensor.clone())
                    return
            elif self._waited_on():
                # A Gloo operation while another rank may be waiting for the last switch
                # result: agree first, so that the collectives of all ranks match.
                self._agree(failed=False)
            self.gloo.allreduce([tensor]).wait()
        finally:
            self._seq += 1

    def _through_switch(self, tensor: torch.Tensor):
        """The sum of `tensor` over all ranks through the switch, in place: float16 and bfloat16
        widened to float32 on the host; with several ranks per host, a Gloo reduce to the
        leader, the leader's all-reduce, and a broadcast of a status word and of the sum."""
        lanes = _lanes_for(tensor.dtype, self.lanes16, self.compression)
        wide = tensor.float() if tensor.dtype in _WIDENED else tensor
        if self.local is None:
            self.worker.allreduce(wide, lanes=lanes)
        else:
            opts = dist.ReduceOptions()
            opts.rootRank = 0
            opts.reduceOp = dist.ReduceOp.SUM
            self.local.reduce([wide], opts).wait()
            status = torch.zeros(1, dtype=torch.int64)
            err = None
            if self.worker is not None:
                try:
                    self.worker.allreduce(wide, lanes=lanes)
                except (SpotaggError, ValueError, OSError) as e:
                    err = e
                    status[0] = 1
            opts = dist.BroadcastOptions()
            opts.rootRank = 0
            self.local.broadcast([status], opts).wait()
            if int(status[0]):
                raise err if err is not None else SpotaggError(
                    f"spotagg: the all-reduce through the switch {self.switch_name} failed at this host's leader"
                )
            self.local.broadcast([wide], opts).wait()
        if wide is not tensor:
            tensor.copy_(wide)
        if lanes == 16:
            self.lanes16_ops += 1

    def _agree(self, failed: bool, current=None) -> bool:
        """The agreement: one Gloo all-reduce (MIN) in which every rank gives the number of
        operations it completed and whether its current one failed. When none failed, nothing
        changes. When one did, every rank goes over to Gloo; the ranks are then at most one
        operation apart (a result needs every rank's contribution), and when they are, the
        lowest rank that has the result of the operation the others lack broadcasts it, so
        that every rank ends with the same values. True when `current` (the operation that
        failed here) got its result so."""
        w, rank, done = self.world_size, self.rank, self._seq
        if failed and self.store is not None:
            try:
                self.store.set(self.key, str(rank))
            except Exception:  # noqa: BLE001 - the others then join with their next operation
                pass
        t = torch.tensor([done, -(done * w + (w - 1 - rank)), -int(failed)], dtype=torch.int64)
        opts = dist.AllreduceOptions()
        opts.reduceOp = dist.ReduceOp.MIN
        self.gloo.allreduce([t], opts).wait()
        lo, top, any_failed = int(t[0]), -int(t[1]), bool(t[2] < 0)
        hi, src = top // w, w - 1 - top % w
        self._since = 0
        if hi - lo > 1 or (hi != lo and not any_failed):
            raise SpotaggError(
                f"spotagg fallback: the ranks are out of step (rank {rank} completed {done} "
                f"operations, the others between {lo} and {hi})"
            )
        if not any_failed:
            return False
        self.use_gloo = True
        self.fallbacks += 1
        why = f"failed ({self._reason})" if failed else "failed at another rank"
        warnings.warn(
            f"spotagg: the switch {self.switch_name} {why}; rank {rank} falls back to Gloo "
            f"all-reduce from operation {min(done, hi)} on",
            RuntimeWarning,
            stacklevel=2,
        )
        if hi == lo:
            return False
        opts = dist.BroadcastOptions()
        opts.rootRank = src
        if done == hi:
            if self._last_out is None or self._last_out[0] != lo:
                raise SpotaggError(
                    f"spotagg fallback: rank {rank} lacks the result of operation {lo} that "
                    f"another rank needs"
                )
            self.gloo.broadcast([self._last_out[1]], opts).wait()
            self._last_out = None
            return False
        if current is None:
            raise SpotaggError(
                f"spotagg fallback: rank {rank} has no operation {lo} to complete"
            )
        self.gloo.broadcast([current], opts).wait()
        return True


class HookState:
    """State of :func:`allreduce_hook`: a :class:`spotagg.Worker` for this rank, a Gloo group
    for the fallback, the sender thread.

    ``switch``: "IP:PORT", a list of them or one comma-separated string (or SPOTAGG_SWITCH):
    the switches in failover order (the worker moves to the next when the active one stops
    answering, and the stats of each all-reduce say which one served and the failovers' stall);
    ``job``: path or TOML text (or SPOTAGG_JOB);
    ``bind``: the worker's local address (default: the rank's address in the job);
    ``fallback``: fall back to Gloo when the switch fails (else raise);
    ``process_group``: the group DDP uses (default: the default group). Rank and world size are
    the group's; a job with another number of workers is a ValueError here;
    ``local_size``: ranks per host (default: ``LOCAL_WORLD_SIZE``, which torchrun sets, else 1):
    the job lists hosts, ranks ``h*local_size ...`` are host h and its first is the one that
    talks to the switch (see the module doc);
    ``compression``: None (float32 buckets as 32-bit lanes) or ``"lanes16"`` (float32 buckets as
    16-bit lanes: half the bytes, the 16-bit error bound; the job needs ``lanes16 = true``, else
    a ValueError here). float16 and bfloat16 buckets go as 16-bit lanes whenever the job has
    them.
    """

    def __init__(self, switch=None, job=None, bind=None, fallback=True, process_group=None, local_size=None,
                 compression=None, controller=None):
        if not dist.is_initialized():
            raise RuntimeError("spotagg.torch.HookState: call torch.distributed.init_process_group first")
        if compression not in _COMPRESSIONS:
            raise ValueError(f"spotagg: compression = {compression!r}: None or \"lanes16\"")
        job, switch, controller = _job_and_switch(job, switch, controller)
        # A job from the controller takes 16-bit lanes when asked for them (every rank decides
        # alike from its own arguments).
        lanes16 = compression == "lanes16" if controller else _job_lanes16(job)
        if compression == "lanes16" and not lanes16:
            raise ValueError(
                "spotagg: compression = \"lanes16\" needs a job with lanes16 = true (docs/switch.md §9); "
                "the job has none, so its switch would drop 16-bit frames"
            )
        group = process_group if process_group is not None else dist.group.WORLD
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        local_size = int(local_size or os.environ.get("LOCAL_WORLD_SIZE") or 1)
        if local_size < 1 or world % local_size:
            raise ValueError(
                f"spotagg: local_size = {local_size} ranks per host does not divide the world size {world}"
            )
        hosts = world // local_size
        host, local_rank = divmod(rank, local_size)
        self.worker = _host_worker(
            job, switch, bind, host, local_rank, hosts, local_size,
            f"spotagg: the job has {{}} workers but torch.distributed's world size is {world}",
            controller=controller, lanes16=lanes16,
        )
        switch = switch or (self.worker.switch if self.worker is not None else f"controller {controller}")
        ranks = list(range(world)) if process_group is None else dist.get_process_group_ranks(process_group)
        gloo = dist.new_group(ranks=None if process_group is None else ranks, backend="gloo")
        local = None
        if local_size > 1:
            # Every rank makes every host's group, in host order (new_group is collective).
            for h in range(hosts):
                g = dist.new_group(ranks=ranks[h * local_size:(h + 1) * local_size], backend="gloo")
                if h == host:
                    local = _backend_of(g)
                    self._local_group = g
        self.rank, self.world_size, self.local_size = rank, world, local_size
        self._switch = switch if isinstance(switch, str) else ",".join(switch)
        self._gloo_group = gloo
        store, key = _default_store(), f"spotagg/fallback/{_group_name(gloo)}"
        self.compression = None if compression == "none" else compression
        self._sender = _Sender(self.worker, _backend_of(gloo), world, rank, fallback, store, key,
                               local=local, switch_name=self._switch, lanes16=lanes16,
                               compression=self.compression)
        self._pending = {}
        self._next_index = 0
        self._staging = _Staging()
        #: (index, elements) of every bucket the hook was given, in call order.
        self.buckets = []

    @property
    def switch(self) -> str:
        return self.worker.switch if self.worker is not None else self._switch

    @property
    def fell_back(self) -> bool:
        """Whether the hook went over to Gloo."""
        return self._sender.use_gloo

    @property
    def error(self):
        """The error that stopped the switch all-reduces (None while they work)."""
        return self._sender.error

    @property
    def switch_allreduces(self) -> int:
        """Buckets all-reduced through the switch."""
        return self._sender.switch_ops

    @property
    def lanes16_allreduces(self) -> int:
        """Buckets all-reduced through the switch in 16-bit lanes."""
        return self._sender.lanes16_ops

    def close(self):
        self._sender.close()

    def _submit(self, index: int, is_last: bool, tensor, fut):
        # Buckets go to the sender in index order within a step, whatever order they come in.
        self._pending[index] = (is_last, tensor, fut)
        while self._next_index in self._pending:
            last, t, f = self._pending.pop(self._next_index)
            self._sender.submit(t, f)
            self._next_index = 0 if last else self._next_index + 1


def _host_worker(job, switch, bind, host, local_rank, hosts, local_size, mismatch, controller=None, lanes16=False):
    """The Worker of host `host` on its first rank (None on the others), after checking on every
    rank that the job has one worker a host: else a ValueError, `mismatch` with the job's count
    in its {}. With `controller` (and no job) the first rank registers as worker `host` of
    `hosts` from `bind`'s address (default: its address on the route to the controller) and
    takes the job from the answer (docs/controller.md §7)."""
    if controller is not None:
        if local_rank != 0:
            return None
        ip = bind.rpartition(":")[0] if bind and ":" in bind else (bind or _route_to(controller))
        job = register(controller, host, hosts, ip, lanes16=lanes16, scope=_rendezvous_scope())
        import tomllib

        t = tomllib.loads(job)
        switch = switch or f"{t['switch_ip']}:{t['switch_port']}"
        return Worker(job, host, switch, bind if bind and ":" in bind else None)
    workers = _job_workers(job)
    if workers is not None and workers != hosts:
        raise ValueError(
            mismatch.format(workers) + (f" ({hosts} hosts of {local_size} ranks)" if local_size > 1 else "")
        )
    worker = Worker(job, host, switch, bind) if local_rank == 0 else None
    if worker is not None and worker.world_size != hosts:
        raise ValueError(mismatch.format(worker.world_size))
    return worker


def _job_workers(job):
    """The number of [[worker]] entries of a job (a path or TOML text); None if it cannot be
    read here (the Worker then says what is wrong)."""
    try:
        import tomllib

        text = open(job).read() if os.path.exists(job) else job
        return len(tomllib.loads(text).get("worker", []))
    except Exception:  # noqa: BLE001 - the Worker's own parser names the error
        return None


def _job_lanes16(job) -> bool:
    """Whether a job (a path or TOML text) has lanes16 = true, read on every rank (a host's other
    ranks have no Worker) so that all ranks decide alike; False where it cannot be read (the
    Worker then says what is wrong)."""
    try:
        import tomllib

        text = open(job).read() if os.path.exists(job) else job
        return bool(tomllib.loads(text).get("lanes16", False))
    except Exception:  # noqa: BLE001 - the Worker's own parser names the error
        return False


def _default_store():
    """The default group's store (None where this torch does not say)."""
    try:
        return dist.distributed_c10d._get_default_store()
    except Exception:  # noqa: BLE001 - an older or newer torch: no polling
        return None


def _group_name(group) -> str:
    name = getattr(group, "group_name", None)
    return name if isinstance(name, str) and name else str(dist.get_process_group_ranks(group))


def _backend_of(group):
    """The Gloo ProcessGroup object of a group made by dist.new_group."""
    return group._get_backend(torch.device("cpu")) if hasattr(group, "_get_backend") else group


def allreduce_hook(state: "HookState", bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: the bucket averaged over the ranks through the switch (Gloo after
    a failure, see the module doc)."""
    if state._sender.error is not None and not state._sender.fallback:
        raise state._sender.error
    tensor = bucket.buffer()
    state.buckets.append((bucket.index(), tensor.numel()))
    tensor.div_(state.world_size)
    if tensor.is_cuda:
        # Staged now, on the caller's thread and stream: the copy runs while earlier buckets
        # are on the wire (the sender still takes them in bucket order).
        fut = torch.futures.Future(devices=[tensor.device])
        state._submit(bucket.index(), bucket.is_last(), state._staging.stage(tensor), fut)
    else:
        fut = torch.futures.Future()
        state._submit(bucket.index(), bucket.is_last(), tensor, fut)
    return fut.then(lambda f: f.value())


# ---------------------------------------------------------------------------------------------
# The torch.distributed backend "spotagg".


class ProcessGroupSpotagg(dist.ProcessGroup):
    """all_reduce (SUM, float32/int32/float16/bfloat16 CPU) through the switch, everything else
    through Gloo; float16 and bfloat16 as 16-bit lanes when the job has ``lanes16 = true``."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        job, switch, controller = _job_and_switch(None, None)
        bind = os.environ.get("SPOTAGG_BIND") or None
        # A job from the controller takes 16-bit lanes with SPOTAGG_LANES16=1.
        lanes16 = os.environ.get("SPOTAGG_LANES16") == "1" if controller else _job_lanes16(job)
        # Several ranks per host (LOCAL_WORLD_SIZE, as torchrun sets it): the job lists hosts.
        local_size = int(os.environ.get("LOCAL_WORLD_SIZE") or 1)
        if local_size < 1 or size % local_size:
            raise ValueError(f"spotagg backend: LOCAL_WORLD_SIZE = {local_size} does not divide the group's {size} ranks")
        hosts = size // local_size
        host, local_rank = divmod(rank, local_size)
        self.worker = _host_worker(
            job, switch, bind, host, local_rank, hosts, local_size,
            f"spotagg backend: the job has {{}} workers but the group has {size}",
            controller=controller, lanes16=lanes16,
        )
        switch = switch or (self.worker.switch if self.worker is not None else f"controller {controller}")
        # Two Gloo groups: one for the calls of the caller's thread, one for the sender thread's
        # fallback (collectives of two threads on one group could be matched out of order), and
        # the host's own for the local stage (used by the sender thread only).
        self.gloo = dist.ProcessGroupGloo(dist.PrefixStore("spotagg-gloo", store), rank, size, timeout)
        fallback = dist.ProcessGroupGloo(dist.PrefixStore("spotagg-fallback", store), rank, size, timeout)
        local = None
        if local_size > 1:
            local = dist.ProcessGroupGloo(
                dist.PrefixStore(f"spotagg-host-{host}", store), local_rank, local_size, timeout
            )
        switch_name = switch if isinstance(switch, str) else ",".join(switch)
        self._staging = _Staging()
        self.sender = _Sender(self.worker, fallback, size, rank, True, store, "spotagg/fallback",
                              local=local, switch_name=switch_name, lanes16=lanes16)

    def getBackendName(self):
        return "spotagg"

    def allreduce(self, tensors, opts=None):
        op = getattr(opts, "reduceOp", dist.ReduceOp.SUM)
        ok = (
            op == dist.ReduceOp.SUM
            and len(tensors) == 1
            and tensors[0].device.type in ("cpu", "cuda")
            and tensors[0].dtype in _SWITCH_DTYPES
            and tensors[0].is_contiguous()
        )
        if not ok:
            return self.gloo.allreduce(tensors, opts or dist.AllreduceOptions())
        t = tensors[0]
        if t.is_cuda:
            # Through a pinned host buffer, as the hook does (_Staging).
            fut = torch.futures.Future(devices=[t.device])
            self.sender.submit(self._staging.stage(t), fut)
        else:
            fut = torch.futures.Future()
            self.sender.submit(t, fut)
        return _work(fut.then(lambda f: [f.value()]))

    def broadcast(self, tensors, opts):
        return self.gloo.broadcast(tensors, opts)

    def allgather(self, output_tensors, input_tensors, opts=None):
        return self.gloo.allgather(output_tensors, input_tensors, opts or dist.AllgatherOptions())

    def _allgather_base(self, output, input, opts=None):
        return self.gloo._allgather_base(output, input, opts or dist.AllgatherOptions())

    def barrier(self, opts=None):
        return self.gloo.barrier(opts or dist.BarrierOptions())

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        return self.gloo.reduce_scatter(output_tensors, input_tensors, opts or dist.ReduceScatterOptions())


def _work(fut):
    return torch._C._distributed_c10d._create_work_from_future(fut)


def _create_spotagg(store, rank, size, timeout):
    return ProcessGroupSpotagg(store, rank, size, timeout)


if "spotagg" not in dist.Backend.backend_list and hasattr(dist.Backend, "register_backend"):
    # One backend object serves both device types (torch keeps the first a ProcessGroup subclass
    # returns); CUDA tensors go through pinned host buffers (_Staging).
    dist.Backend.register_backend("spotagg", _create_spotagg, devices=["cpu", "cuda"])

