//! Transports: how a worker's SwitchML messages (UDP payloads) reach a switch, and the
//! blocking driver loop over the sans-I/O core of [`crate::worker`].
//!
//! - [`UdpTransport`]: a UDP socket, to an FPGA NIC, a SwitchML switch or `spotagg switch`.
//! - [`InProcessSwitch`] / [`InProcessTransport`]: any [`Engine`] (the reference model, a
//!   simulation) shared by N worker threads; messages are wrapped in the Ethernet/IPv4/UDP frame
//!   a NIC would see ([`frame`]) and the frames the engine emits are routed back to the rank
//!   whose IPv4 address they are sent to.
//! - [`FaultInjector`]: wraps any transport with seeded loss, duplication and reordering.
//!
//! [`drive`] runs an [`AllReduce`] to completion over a transport; [`allreduce_f32`] is the
//! one-call entry point ([`Worker::allreduce_i32`] for an i32 tensor).

use crate::batch::{BatchSocket, Receiver, Sender};
use crate::config::JobConfig;
use crate::counters::Counters;
use crate::engine::Engine;
use crate::wire::switchml::{field::POOL_INDEX, is_switchml_port, Lanes, PoolIndex, PREAMBLE_LEN};
use crate::worker::{AllReduce, Error, Stats, Worker};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// Largest message a transport is asked to carry: SwitchML header, exponents, 1024 B payload,
/// with room to spare.
pub const MAX_MESSAGE: usize = 2048;

/// Moves SwitchML messages (UDP payloads) between one worker and the switch.
pub trait Transport {
    /// Sends one message to the switch (32-bit lanes: the switch's own port).
    fn send(&mut self, msg: &[u8]) -> io::Result<()>;
    /// Sends one message of lane width `lanes` to the switch: a [`Lanes::I16`] message goes to
    /// the 16-bit twin of the switch's port (docs/switch.md §9). The default sends 32-bit
    /// messages with [`Transport::send`] and refuses 16-bit ones (`Unsupported`), so that a
    /// transport that cannot address the twin port never has them summed as 32-bit values.
    fn send_lanes(&mut self, msg: &[u8], lanes: Lanes) -> io::Result<()> {
        match lanes {
            Lanes::I32 => self.send(msg),
            Lanes::I16 => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this transport cannot send 16-bit lanes (docs/switch.md §9): it has no 16-bit switch port",
            )),
        }
    }
    /// Receives one message into `buf`, waiting until `deadline` at the latest. `Ok(None)` when
    /// the deadline passed with nothing received. A message longer than `buf` is truncated.
    /// A batching transport sends what [`Transport::send`] queued before it waits or returns
    /// `None`.
    fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>>;
    /// Sends the messages a batching transport queued (the default: nothing queued).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Sends to (and receives from) switch `index` of the job's `switches` from now on, and
    /// never sends a message handed to it before to that switch. The default: a transport to one
    /// switch, which accepts index 0 only.
    fn select_switch(&mut self, index: usize) -> io::Result<()> {
        single_switch(index)
    }
}

/// [`Transport::select_switch`] of a transport to one switch: index 0 only.
fn single_switch(index: usize) -> io::Result<()> {
    if index == 0 {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("this transport reaches one switch; the worker moved to switch {index} of the job's list"),
        ))
    }
}

/// `Transport` for a pointer to a transport: each method forwards to the pointee.
macro_rules! forward_transport {
    ($($ptr:ty),*) => {$(
        impl<T: Transport + ?Sized> Transport for $ptr {
            fn send(&mut self, msg: &[u8]) -> io::Result<()> {
                (**self).send(msg)
            }
            fn send_lanes(&mut self, msg: &[u8], lanes: Lanes) -> io::Result<()> {
                (**self).send_lanes(msg, lanes)
            }
            fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
                (**self).recv(buf, deadline)
            }
            fn flush(&mut self) -> io::Result<()> {
                (**self).flush()
            }
            fn select_switch(&mut self, index: usize) -> io::Result<()> {
                (**self).select_switch(index)
            }
        }
    )*};
}
forward_transport!(&mut T, Box<T>);

/// Runs an operation to completion over a transport; `progress` is called with the elements
/// done each time a result moves them on. Never blocks past the operation's next deadline, so
/// a silent switch ends in [`Error::Timeout`].
pub fn drive<T: Transport + ?Sized>(
    op: &mut AllReduce<'_>,
    t: &mut T,
    mut progress: impl FnMut(usize),
) -> Result<Stats, Error> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut selected = op.switch_index();
    t.select_switch(selected)?;
    loop {
        if op.switch_index() != selected {
            selected = op.switch_index();
            t.select_switch(selected)?;
        }
        while let Some(m) = op.poll_transmit() {
            t.send_lanes(m.contents, m.lanes)?;
        }
        t.flush()?;
        let Some(deadline) = op.poll_timeout() else {
            return Ok(op.stats());
        };
        let mut next = t.recv(&mut buf, deadline)?;
        // Take in what has arrived already (up to DRAIN messages) before the messages it
        // releases are flushed, so that a batching transport sends them together.
        let mut drained = next.is_none();
        let mut taken = 0;
        while let Some(len) = next {
            let before = op.elements_done();
            op.handle_message(Instant::now(), &buf[..len])?;
            if op.elements_done() != before {
                progress(op.elements_done());
            }
            if op.switch_index() != selected {
                break;
            }
            while let Some(m) = op.poll_transmit() {
                t.send_lanes(m.contents, m.lanes)?;
            }
            taken += 1;
            if taken >= DRAIN || op.is_done() {
                break;
            }
            next = t.recv(&mut buf, Instant::now())?;
            drained = next.is_none();
        }
        // Timers fire once every message that had arrived is taken in: after a stall of this
        // process, results waiting in the socket must not be retransmitted for. (A flood of
        // messages cannot hold the timers off for more than STALL_GRACE.)
        let now = Instant::now();
        if now >= deadline && (drained || now >= deadline + STALL_GRACE) {
            op.handle_timeout(now)?;
        }
    }
}

/// Most messages [`drive`] takes in before it flushes what they released.
const DRAIN: usize = 64;

/// Longest [`drive`] holds the timers off while messages keep arriving.
const STALL_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

impl Worker {
    /// SUM all-reduce of an f32 tensor in place over a transport (blocking).
    pub fn allreduce_f32<T: Transport + ?Sized>(&mut self, t: &mut T, data: &mut [f32]) -> Result<Stats, Error> {
        self.allreduce_f32_lanes(t, data, Lanes::I32)
    }
    /// [`Worker::allreduce_f32`] in lanes of `lanes` bits ([`Worker::start_f32_lanes`]).
    pub fn allreduce_f32_lanes<T: Transport + ?Sized>(
        &mut self,
        t: &mut T,
        data: &mut [f32],
        lanes: Lanes,
    ) -> Result<Stats, Error> {
        let mut op = self.start_f32_lanes(data, lanes, Instant::now())?;
        drive(&mut op, t, |_| {})
    }
    /// SUM all-reduce of an i32 tensor in place (wrap-around) over a transport (blocking).
    pub fn allreduce_i32<T: Transport + ?Sized>(&mut self, t: &mut T, data: &mut [i32]) -> Result<Stats, Error> {
        let mut op = self.start_i32(data, Instant::now())?;
        drive(&mut op, t, |_| {})
    }
}

/// One SUM all-reduce of an f32 tensor by rank `rank` of a freshly configured job (all ranks
/// call it with tensors of the same length). For several operations on one job, or an i32
/// tensor, keep a [`Worker`].
pub fn allreduce_f32<T: Transport + ?Sized>(
    t: &mut T,
    job: &JobConfig,
    rank: usize,
    data: &mut [f32],
) -> Result<Stats, Error> {
    Worker::new(job.clone(), rank)?.allreduce_f32(t, data)
}

pub use crate::wire::frame;

/// The highest SwitchML port (0xBEE0..=0xBEEF) free on every address of `ips`, if any.
pub fn free_worker_port(ips: &[std::net::Ipv4Addr]) -> Option<u16> {
    (crate::wire::switchml::UDP_PORT_BASE..=crate::wire::switchml::UDP_PORT_BASE + 15)
        .rev()
        .find(|&p| ips.iter().all(|ip| UdpSocket::bind(SocketAddrV4::new(*ip, p)).is_ok()))
}

/// [`JobConfig::example`] for processes on one host: worker r at 127.0.0.(`first` + r), and as
/// `worker_port` a SwitchML port free on all of them ([`free_worker_port`]).
pub fn loopback_job(n: usize, payload: crate::wire::PayloadSize, slots: u16, first: u8) -> io::Result<JobConfig> {
    let mut job = JobConfig::example(n, payload, slots);
    for (r, w) in job.workers.iter_mut().enumerate() {
        w.ip = std::net::Ipv4Addr::new(127, 0, 0, first + r as u8);
    }
    let ips: Vec<_> = job.workers.iter().map(|w| w.ip).collect();
    job.worker_port = free_worker_port(&ips).ok_or_else(|| {
        io::Error::new(io::ErrorKind::AddrInUse, format!("no SwitchML port 0xBEE0..=0xBEEF free on all of {ips:?}"))
    })?;
    Ok(job)
}

pub use crate::batch::{enlarge_buffers, IoStats, SOCKET_BUFFER};

/// A UDP socket to the switch, with batched kernel I/O ([`crate::batch`]): the messages that
/// [`Transport::send`] queues leave at [`Transport::flush`] (or before the next wait), those to
/// one switch port in one GSO system call where the kernel has UDP GSO; received datagrams come
/// in with `recvmmsg` (and GRO) and are handed out one by one.
///
/// With `switch_ports` T > 1 (a multi-threaded software switch), the message of slot s goes to
/// the switch address's port + (s mod T).
#[derive(Debug)]
pub struct UdpTransport {
    socket: BatchSocket,
    switch: SocketAddr,
    /// The job's switches in failover order (empty: only `switch`).
    switches: Vec<SocketAddr>,
    ports: u16,
    rx: Receiver,
    tx: Sender,
    /// Received messages not yet handed out: their bytes, and (offset, length) of each.
    ready: Vec<u8>,
    ready_at: VecDeque<(usize, usize)>,
    stats: IoStats,
}

impl UdpTransport {
    /// Binds `local` and sends to `switch`. Messages from any source are accepted (the worker
    /// core checks each one).
    pub fn bind(local: SocketAddr, switch: SocketAddr) -> io::Result<UdpTransport> {
        let socket = BatchSocket::new(UdpSocket::bind(local)?)?;
        let rx = Receiver::new(&socket);
        Ok(UdpTransport {
            socket,
            switch,
            switches: Vec::new(),
            ports: 1,
            rx,
            tx: Sender::new(),
            ready: Vec::new(),
            ready_at: VecDeque::new(),
            stats: IoStats::default(),
        })
    }
    /// Binds rank `rank`'s address of the job (its IPv4 address, `job.worker_port`) and sends
    /// slot s to `switch`'s port + (s mod `job.switch_ports`).
    pub fn for_rank(job: &JobConfig, rank: usize, switch: SocketAddr) -> io::Result<UdpTransport> {
        let w = job.workers.get(rank).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("rank {rank} is not in the job (n = {})", job.n()))
        })?;
        Ok(UdpTransport::bind(SocketAddr::V4(SocketAddrV4::new(w.ip, job.worker_port)), switch)?
            .with_switch_ports(job.switch_ports)
            .with_switches(job.switches.clone()))
    }
    /// The switches of the job in failover order: [`Transport::select_switch`] picks one; from
    /// then on only datagrams from that switch's address (and its ports) are handed out.
    /// The first one becomes the switch sent to.
    pub fn with_switches(mut self, switches: Vec<SocketAddr>) -> UdpTransport {
        if let Some(first) = switches.first() {
            self.switch = *first;
        }
        self.switches = switches;
        self
    }
    /// Sends slot s to the switch address's port + (s mod `ports`) (1: every slot to the port).
    pub fn with_switch_ports(mut self, ports: u16) -> UdpTransport {
        self.ports = ports.max(1);
        self
    }
    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.socket().local_addr()
    }
    /// System calls and datagrams so far.
    pub fn io_stats(&self) -> IoStats {
        self.stats
    }
    /// True when GSO/GRO and `recvmmsg` are in use (false: the plain fallback).
    pub fn is_batched(&self) -> bool {
        self.socket.is_batched()
    }
    fn destination(&self, msg: &[u8], lanes: Lanes) -> SocketAddr {
        let mut a = self.switch;
        if self.ports > 1 && msg.len() >= PREAMBLE_LEN {
            let slot = PoolIndex::from_u16(u16::from_be_bytes([msg[POOL_INDEX.start], msg[POOL_INDEX.start + 1]])).slot;
            a.set_port(self.switch.port().wrapping_add(slot % self.ports));
        }
        if lanes == Lanes::I16 {
            a.set_port(Lanes::I16.port(a.port()));
        }
        a
    }
}

impl Transport for UdpTransport {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.send_lanes(msg, Lanes::I32)
    }
    /// A [`Lanes::I16`] message goes to the 16-bit twin of its port: the switch must be on
    /// SwitchML's ports (0xBEE0 + t; its twin 0xBEF0 + t), else this is `InvalidInput`.
    fn send_lanes(&mut self, msg: &[u8], lanes: Lanes) -> io::Result<()> {
        if lanes == Lanes::I16 && !is_switchml_port(self.switch.port()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "16-bit lanes go to the twin of a SwitchML port (0xBEE0 + t to 0xBEF0 + t); the switch {} is not on one",
                    self.switch
                ),
            ));
        }
        let dst = self.destination(msg, lanes);
        self.tx.queue(&self.socket, &mut self.stats, dst, msg)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.tx.flush(&self.socket, &mut self.stats)
    }
    fn select_switch(&mut self, index: usize) -> io::Result<()> {
        if self.switches.is_empty() {
            return single_switch(index);
        }
        let Some(a) = self.switches.get(index) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("switch {index} is not in the list of {}", self.switches.len()),
            ));
        };
        // What was queued for the switch left goes to it (the destination is fixed at queueing).
        self.switch = *a;
        Ok(())
    }
    fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
        loop {
            if let Some((at, len)) = self.ready_at.pop_front() {
                let n = len.min(buf.len());
                buf[..n].copy_from_slice(&self.ready[at..at + n]);
                if self.ready_at.is_empty() {
                    self.ready.clear();
                }
                return Ok(Some(n));
            }
            let filter = (self.switches.len() > 1).then_some((self.switch, self.ports));
            let UdpTransport { socket, rx, ready, ready_at, stats, .. } = self;
            let got = rx.recv(socket, stats, |from, d| {
                if let Some((sw, ports)) = filter {
                    // Results of 16-bit lanes come from the twin of a SwitchML port.
                    let twin = is_switchml_port(sw.port()) && Lanes::of_port(from.port()).is_some();
                    let port = if twin { Lanes::I32.port(from.port()) } else { from.port() };
                    let p = port.wrapping_sub(sw.port());
                    if from.ip() != sw.ip() || p >= ports {
                        return;
                    }
                }
                ready_at.push_back((ready.len(), d.len()));
                ready.extend_from_slice(d);
            })?;
            if got > 0 {
                continue;
            }
            // Nothing waiting: what is queued leaves before the wait (or the return).
            if self.tx.is_pending() {
                self.flush()?;
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            self.socket.wait_readable(deadline - now)?;
        }
    }
}

struct Mailbox {
    queue: Mutex<VecDeque<Vec<u8>>>,
    ready: Condvar,
}

/// An engine in the same process, shared by the job's worker threads.
pub struct InProcessSwitch {
    engine: Mutex<Box<dyn Engine>>,
    job: JobConfig,
    mailboxes: Vec<Mailbox>,
    unrouted: AtomicU64,
}

impl InProcessSwitch {
    /// Serves `engine` (configured for `job`) to the job's ranks.
    pub fn new(engine: Box<dyn Engine>, job: JobConfig) -> Arc<InProcessSwitch> {
        let mailboxes =
            (0..job.n()).map(|_| Mailbox { queue: Mutex::new(VecDeque::new()), ready: Condvar::new() }).collect();
        Arc::new(InProcessSwitch { engine: Mutex::new(engine), job, mailboxes, unrouted: AtomicU64::new(0) })
    }
    /// The transport of rank `rank` (panics if the rank is not in the job).
    pub fn endpoint(self: &Arc<Self>, rank: usize) -> InProcessTransport {
        assert!(rank < self.job.n(), "rank {rank} is not in the job (n = {})", self.job.n());
        InProcessTransport { hub: Arc::clone(self), rank, frame: Vec::new(), out: Vec::new() }
    }
    /// The engine's counters.
    pub fn counters(&self) -> Counters {
        self.engine.lock().unwrap_or_else(|p| p.into_inner()).counters()
    }
    /// Clock cycles the engine simulated so far (`None` for the reference model).
    pub fn cycles(&self) -> Option<u64> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner()).cycles()
    }
    /// The engine's name.
    pub fn engine_name(&self) -> &'static str {
        self.engine.lock().unwrap_or_else(|p| p.into_inner()).name()
    }
    /// Frames the engine emitted that are not UDP to a rank of the job (dropped).
    pub fn unrouted(&self) -> u64 {
        self.unrouted.load(Ordering::Relaxed)
    }
    /// The job.
    pub fn job(&self) -> &JobConfig {
        &self.job
    }
}

/// Rank r's side of an [`InProcessSwitch`].
pub struct InProcessTransport {
    hub: Arc<InProcessSwitch>,
    rank: usize,
    frame: Vec<u8>,
    out: Vec<Vec<u8>>,
}

impl Transport for InProcessTransport {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.send_lanes(msg, Lanes::I32)
    }
    /// A [`Lanes::I16`] message is framed to the 16-bit twin of the job's `switch_port`.
    fn send_lanes(&mut self, msg: &[u8], lanes: Lanes) -> io::Result<()> {
        let job = &self.hub.job;
        let me = job.workers[self.rank];
        frame::encapsulate(
            frame::Endpoint { mac: me.mac, ip: me.ip, port: job.worker_port },
            frame::Endpoint { mac: job.switch_mac, ip: job.switch_ip, port: lanes.port(job.switch_port) },
            msg,
            &mut self.frame,
        );
        self.out.clear();
        self.hub.engine.lock().unwrap_or_else(|p| p.into_inner()).process(&self.frame, &mut self.out);
        for f in self.out.drain(..) {
            let Some(rank) = frame::decapsulate(&f).and_then(|d| job.rank_of(d.dst.ip).map(|r| (r, d.payload))) else {
                self.hub.unrouted.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let mb = &self.hub.mailboxes[rank.0];
            mb.queue.lock().unwrap_or_else(|p| p.into_inner()).push_back(rank.1.to_vec());
            mb.ready.notify_one();
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
        let mb = &self.hub.mailboxes[self.rank];
        let mut q = mb.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(m) = q.pop_front() {
                let n = m.len().min(buf.len());
                buf[..n].copy_from_slice(&m[..n]);
                return Ok(Some(n));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            q = mb.ready.wait_timeout(q, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

/// Fault probabilities of one direction, each per message.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Faults {
    /// Probability that a message is lost.
    pub loss: f64,
    /// Probability that a message is delivered twice.
    pub duplicate: f64,
    /// Probability that a message is held back and delivered after the next one (or, on
    /// receive, at the deadline when no other comes; on send, before the next wait).
    pub reorder: f64,
}

impl Faults {
    /// Loss only.
    pub fn loss(p: f64) -> Faults {
        Faults { loss: p, ..Faults::default() }
    }
}

/// What a [`FaultInjector`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Messages dropped.
    pub lost: u64,
    /// Extra copies delivered.
    pub duplicated: u64,
    /// Messages held back.
    pub reordered: u64,
}

/// Wraps a transport with seeded loss, duplication and reordering on send and on receive.
pub struct FaultInjector<T: Transport> {
    inner: T,
    send_faults: Faults,
    recv_faults: Faults,
    rng: ChaCha8Rng,
    held_send: Option<(Vec<u8>, Lanes)>,
    held_recv: Option<Vec<u8>>,
    ready: VecDeque<Vec<u8>>,
    scratch: Vec<u8>,
    stats: FaultStats,
}

impl<T: Transport> FaultInjector<T> {
    /// The same faults in both directions.
    pub fn new(inner: T, faults: Faults, seed: u64) -> FaultInjector<T> {
        FaultInjector::with_directions(inner, faults, faults, seed)
    }
    /// Different faults on send and on receive.
    pub fn with_directions(inner: T, send: Faults, recv: Faults, seed: u64) -> FaultInjector<T> {
        FaultInjector {
            inner,
            send_faults: send,
            recv_faults: recv,
            rng: ChaCha8Rng::seed_from_u64(seed),
            held_send: None,
            held_recv: None,
            ready: VecDeque::new(),
            scratch: vec![0; MAX_MESSAGE],
            stats: FaultStats::default(),
        }
    }
    /// What was done so far.
    pub fn stats(&self) -> FaultStats {
        self.stats
    }
    /// The wrapped transport.
    pub fn into_inner(self) -> T {
        self.inner
    }
    fn roll(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.gen_bool(p.min(1.0))
    }
}

impl<T: Transport> Transport for FaultInjector<T> {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.send_lanes(msg, Lanes::I32)
    }

    fn send_lanes(&mut self, msg: &[u8], lanes: Lanes) -> io::Result<()> {
        let f = self.send_faults;
        if self.roll(f.loss) {
            self.stats.lost += 1;
            return Ok(());
        }
        if self.held_send.is_none() && self.roll(f.reorder) {
            self.stats.reordered += 1;
            self.held_send = Some((msg.to_vec(), lanes));
            return Ok(());
        }
        self.inner.send_lanes(msg, lanes)?;
        if self.roll(f.duplicate) {
            self.stats.duplicated += 1;
            self.inner.send_lanes(msg, lanes)?;
        }
        if let Some((h, l)) = self.held_send.take() {
            self.inner.send_lanes(&h, l)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    fn select_switch(&mut self, index: usize) -> io::Result<()> {
        // A message held back for the switch left goes to it, never to the next one; those
        // held on receive came from the switch left.
        if let Some((h, l)) = self.held_send.take() {
            self.inner.send_lanes(&h, l)?;
        }
        self.held_recv = None;
        self.ready.clear();
        self.inner.select_switch(index)
    }

    fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
        if let Some((h, l)) = self.held_send.take() {
            self.inner.send_lanes(&h, l)?;
        }
        let f = self.recv_faults;
        loop {
            if let Some(m) = self.ready.pop_front() {
                let n = m.len().min(buf.len());
                buf[..n].copy_from_slice(&m[..n]);
                return Ok(Some(n));
            }
            let mut scratch = std::mem::take(&mut self.scratch);
            let got = self.inner.recv(&mut scratch, deadline);
            self.scratch = scratch;
            match got? {
                None => match self.held_recv.take() {
                    Some(h) => self.ready.push_back(h),
                    None => return Ok(None),
                },
                Some(n) => {
                    if self.roll(f.loss) {
                        self.stats.lost += 1;
                        continue;
                    }
                    let m = self.scratch[..n].to_vec();
                    if self.held_recv.is_none() && self.roll(f.reorder) {
                        self.stats.reordered += 1;
                        self.held_recv = Some(m);
                        continue;
                    }
                    if self.roll(f.duplicate) {
                        self.stats.duplicated += 1;
                        self.ready.push_back(m.clone());
                    }
                    self.ready.push_back(m);
                    if let Some(h) = self.held_recv.take() {
                        self.ready.push_back(h);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::wire::PayloadSize;
    use std::time::Duration;

    /// The message-level model of the switch as an [`Engine`] on frames, for tests without
    /// the sim crate.
    struct MiniEngine {
        job: JobConfig,
        inner: crate::worker::test::MiniSwitch,
        counters: Counters,
    }

    impl MiniEngine {
        /// An in-process switch of `job`'s workers around the model.
        fn hub(job: &JobConfig) -> std::sync::Arc<InProcessSwitch> {
            let inner = crate::worker::test::MiniSwitch::new(job.n());
            InProcessSwitch::new(
                Box::new(MiniEngine { job: job.clone(), inner, counters: Counters::default() }),
                job.clone(),
            )
        }
    }

    impl Engine for MiniEngine {
        fn process(&mut self, f: &[u8], out: &mut Vec<Vec<u8>>) {
            self.counters.frames_in += 1;
            let d = frame::decapsulate(f).unwrap();
            let rank = self.job.rank_of(d.src.ip).unwrap();
            for (r, msg) in self.inner.contribute(rank, d.payload) {
                let w = self.job.workers[r];
                let mut o = Vec::new();
                frame::encapsulate(
                    frame::Endpoint { mac: self.job.switch_mac, ip: self.job.switch_ip, port: d.dst.port },
                    frame::Endpoint { mac: w.mac, ip: w.ip, port: d.src.port },
                    &msg,
                    &mut o,
                );
                out.push(o);
                self.counters.frames_out += 1;
            }
        }
        fn counters(&self) -> Counters {
            self.counters.clone()
        }
        fn name(&self) -> &'static str {
            "mini"
        }
    }

    #[test]
    fn threads_over_an_in_process_engine_with_faults() {
        let n = 3;
        let mut job = JobConfig { sessions: false, ..JobConfig::example(n, PayloadSize::B256, 8) };
        job.timeout = Duration::from_millis(2);
        job.max_retries = 50;
        let hub = MiniEngine::hub(&job);
        let len = 5000;
        let handles: Vec<_> = (0..n)
            .map(|r| {
                let t = hub.endpoint(r);
                let job = job.clone();
                std::thread::spawn(move || {
                    let faults = Faults { loss: 0.05, duplicate: 0.05, reorder: 0.1 };
                    let mut t = FaultInjector::new(t, faults, 100 + r as u64);
                    let mut w = Worker::new(job, r).unwrap();
                    let mut a: Vec<i32> = (0..len).map(|i| i * (r as i32 + 1)).collect();
                    w.allreduce_i32(&mut t, &mut a).unwrap();
                    let mut b: Vec<f32> = (0..len).map(|i| i as f32 * 0.5).collect();
                    let s = w.allreduce_f32(&mut t, &mut b).unwrap();
                    (a, b, s, t.stats())
                })
            })
            .collect();
        for h in handles {
            let (a, b, s, fs) = h.join().unwrap();
            for i in 0..len as usize {
                assert_eq!(a[i], i as i32 * 6);
                assert!((f64::from(b[i]) - i as f64 * 1.5).abs() <= 1e-3 * (1.0 + i as f64 * 1e-3), "{i}: {}", b[i]);
            }
            assert!(s.packets_sent > 0 && fs.lost > 0);
        }
        assert!(hub.counters().frames_in > 0);
        assert_eq!(hub.unrouted(), 0);
    }

    /// A transport whose process "stalls" once: the first time it is asked to wait, it sleeps
    /// `stall` first (the results of the whole window arrive meanwhile).
    struct StallOnce<T: Transport> {
        inner: T,
        stall: Option<Duration>,
    }

    impl<T: Transport> Transport for StallOnce<T> {
        fn send(&mut self, msg: &[u8]) -> io::Result<()> {
            self.inner.send(msg)
        }
        fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
            if let Some(d) = self.stall.take() {
                std::thread::sleep(d);
            }
            self.inner.recv(buf, deadline)
        }
    }

    #[test]
    fn results_that_wait_in_the_transport_after_a_stall_are_not_retransmitted_for() {
        let n = 1;
        // A window of 128 slots: more results wait than drive takes in at once (DRAIN).
        let mut job = JobConfig { sessions: false, ..JobConfig::example(n, PayloadSize::B256, 128) };
        job.timeout = Duration::from_millis(20);
        let hub = MiniEngine::hub(&job);
        // A stall of 3 timeouts while the 128 results of the first window wait.
        let mut t = StallOnce { inner: hub.endpoint(0), stall: Some(Duration::from_millis(60)) };
        let mut w = Worker::new(job, 0).unwrap();
        let mut a: Vec<i32> = (0..64 * 400).collect();
        let s = w.allreduce_i32(&mut t, &mut a).unwrap();
        assert!(a.iter().enumerate().all(|(i, x)| *x == i as i32));
        assert_eq!(s.retransmissions, 0, "{s:?}");
    }

    #[test]
    fn a_dead_switch_over_udp_is_an_error_not_a_hang() {
        let mut job = JobConfig::example(1, PayloadSize::B256, 2);
        job.timeout = Duration::from_millis(5);
        job.max_retries = 3;
        // A bound socket nobody reads: the switch that never answers.
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), sink.local_addr().unwrap()).unwrap();
        let mut data = vec![1.0f32; 100];
        let t0 = Instant::now();
        let e = allreduce_f32(&mut t, &job, 0, &mut data).unwrap_err();
        assert!(matches!(e, Error::Timeout { attempts: 4, chunk: None, .. }), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(2));
    }
}
