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
//! [`drive`] runs an [`AllReduce`] to completion over a transport; [`allreduce_f32`] and
//! [`allreduce_i32`] are the one-call entry points.

use crate::config::JobConfig;
use crate::counters::Counters;
use crate::engine::Engine;
use crate::worker::{AllReduce, Error, Stats, Worker};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Largest message a transport is asked to carry: SwitchML header, exponents, 1024 B payload,
/// with room to spare.
pub const MAX_MESSAGE: usize = 2048;

/// Moves SwitchML messages (UDP payloads) between one worker and the switch.
pub trait Transport {
    /// Sends one message to the switch.
    fn send(&mut self, msg: &[u8]) -> io::Result<()>;
    /// Receives one message into `buf`, waiting until `deadline` at the latest. `Ok(None)` when
    /// the deadline passed with nothing received. A message longer than `buf` is truncated.
    fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>>;
}

impl<T: Transport + ?Sized> Transport for &mut T {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        (**self).send(msg)
    }
    fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
        (**self).recv(buf, deadline)
    }
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        (**self).send(msg)
    }
    fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
        (**self).recv(buf, deadline)
    }
}

/// Runs an operation to completion over a transport; `progress` is called with the elements
/// done each time a result moves them on. Never blocks past the operation's next deadline, so
/// a silent switch ends in [`Error::Timeout`].
pub fn drive<T: Transport + ?Sized>(
    op: &mut AllReduce<'_>,
    t: &mut T,
    mut progress: impl FnMut(usize),
) -> Result<Stats, Error> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    loop {
        while let Some(m) = op.poll_transmit() {
            t.send(m)?;
        }
        let Some(deadline) = op.poll_timeout() else {
            return Ok(op.stats());
        };
        if let Some(len) = t.recv(&mut buf, deadline)? {
            let before = op.elements_done();
            op.handle_message(Instant::now(), &buf[..len])?;
            if op.elements_done() != before {
                progress(op.elements_done());
            }
        }
        let now = Instant::now();
        if now >= deadline {
            op.handle_timeout(now)?;
        }
    }
}

impl Worker {
    /// SUM all-reduce of an f32 tensor in place over a transport (blocking).
    pub fn allreduce_f32<T: Transport + ?Sized>(&mut self, t: &mut T, data: &mut [f32]) -> Result<Stats, Error> {
        let mut op = self.start_f32(data, Instant::now())?;
        drive(&mut op, t, |_| {})
    }
    /// SUM all-reduce of an i32 tensor in place (wrap-around) over a transport (blocking).
    pub fn allreduce_i32<T: Transport + ?Sized>(&mut self, t: &mut T, data: &mut [i32]) -> Result<Stats, Error> {
        let mut op = self.start_i32(data, Instant::now())?;
        drive(&mut op, t, |_| {})
    }
}

/// One SUM all-reduce of an f32 tensor by rank `rank` of a freshly configured job (all ranks
/// call it with tensors of the same length). For several operations on one job, keep a
/// [`Worker`].
pub fn allreduce_f32<T: Transport + ?Sized>(
    t: &mut T,
    job: &JobConfig,
    rank: usize,
    data: &mut [f32],
) -> Result<Stats, Error> {
    Worker::new(job.clone(), rank)?.allreduce_f32(t, data)
}

/// One SUM all-reduce (two's-complement wrap-around) of an i32 tensor; see [`allreduce_f32`].
pub fn allreduce_i32<T: Transport + ?Sized>(
    t: &mut T,
    job: &JobConfig,
    rank: usize,
    data: &mut [i32],
) -> Result<Stats, Error> {
    Worker::new(job.clone(), rank)?.allreduce_i32(t, data)
}

/// Ethernet/IPv4/UDP framing of SwitchML messages with the wire module, as a NIC sees them.
pub mod frame {
    use crate::wire::{ethernet, ipv4, udp};
    use crate::wire::{
        EtherType, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Addr, Ipv4Packet, Ipv4Repr, MacAddr, UdpPacket, UdpRepr,
    };

    /// One end of a UDP flow.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Endpoint {
        /// MAC address.
        pub mac: MacAddr,
        /// IPv4 address.
        pub ip: Ipv4Addr,
        /// UDP port.
        pub port: u16,
    }

    /// Bytes of Ethernet, IPv4 and UDP headers.
    pub const HEADERS_LEN: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN;

    /// Writes into `out` (cleared first) the frame carrying `payload` from `src` to `dst`:
    /// IPv4 TTL 64 with its header checksum, UDP checksum 0.
    pub fn encapsulate(src: Endpoint, dst: Endpoint, payload: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.resize(HEADERS_LEN + payload.len(), 0);
        let mut eth = EthernetFrame::new_unchecked(&mut out[..]);
        EthernetRepr { dst: dst.mac, src: src.mac, ethertype: EtherType::IPV4 }.emit(&mut eth);
        let udp_len = udp::HEADER_LEN + payload.len();
        let mut ip = Ipv4Packet::new_unchecked(eth.payload_mut());
        Ipv4Repr { src: src.ip, dst: dst.ip, protocol: IpProtocol::UDP, payload_len: udp_len, ttl: ipv4::DEFAULT_TTL }
            .emit(&mut ip);
        let mut u = UdpPacket::new_unchecked(ip.payload_mut());
        UdpRepr { src_port: src.port, dst_port: dst.port, payload_len: payload.len() }.emit(&mut u);
        u.payload_mut().copy_from_slice(payload);
    }

    /// A UDP datagram read out of a frame.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Datagram<'a> {
        /// Sender.
        pub src: Endpoint,
        /// Receiver.
        pub dst: Endpoint,
        /// The UDP payload.
        pub payload: &'a [u8],
    }

    /// The UDP datagram of an Ethernet/IPv4/UDP frame (IHL 5, checksum verified, not a
    /// fragment); `None` for anything else (ARP, ICMP, malformed).
    pub fn decapsulate(frame: &[u8]) -> Option<Datagram<'_>> {
        let eth = EthernetFrame::new_checked(frame).ok()?;
        if eth.ethertype() != EtherType::IPV4 {
            return None;
        }
        let eth_repr = EthernetRepr::parse(&eth);
        let ip = Ipv4Packet::new_checked(&frame[ethernet::HEADER_LEN..]).ok()?;
        let ip_repr = Ipv4Repr::parse(&ip).ok()?;
        if ip_repr.protocol != IpProtocol::UDP {
            return None;
        }
        let ip_payload =
            &frame[ethernet::HEADER_LEN + ip.header_len()..ethernet::HEADER_LEN + usize::from(ip.total_len())];
        let u = UdpPacket::new_checked(ip_payload).ok()?;
        let r = UdpRepr::parse(&u);
        let payload = &ip_payload[udp::HEADER_LEN..udp::HEADER_LEN + r.payload_len];
        Some(Datagram {
            src: Endpoint { mac: eth_repr.src, ip: ip_repr.src, port: r.src_port },
            dst: Endpoint { mac: eth_repr.dst, ip: ip_repr.dst, port: r.dst_port },
            payload,
        })
    }
}

/// Socket buffer size [`UdpTransport`] and `spotagg switch` ask for: a window of 1 KiB
/// datagrams from many workers overflows the default (about 200 KiB on Linux, where each
/// datagram costs twice its size or more).
pub const SOCKET_BUFFER: usize = 4 << 20;

/// Asks for `bytes` of receive and send buffer on a UDP socket, best effort: the forced size
/// when the process may (CAP_NET_ADMIN), else the limit of `net.core.rmem_max`/`wmem_max`.
/// Does nothing where the socket options are not known.
pub fn enlarge_buffers(socket: &UdpSocket, bytes: usize) {
    #[cfg(all(
        target_os = "linux",
        any(
            target_arch = "x86_64",
            target_arch = "aarch64",
            target_arch = "x86",
            target_arch = "arm",
            target_arch = "riscv64"
        )
    ))]
    {
        use std::os::fd::AsRawFd;
        extern "C" {
            fn setsockopt(fd: i32, level: i32, name: i32, value: *const core::ffi::c_void, len: u32) -> i32;
        }
        const SOL_SOCKET: i32 = 1;
        const SO_SNDBUF: i32 = 7;
        const SO_RCVBUF: i32 = 8;
        const SO_SNDBUFFORCE: i32 = 32;
        const SO_RCVBUFFORCE: i32 = 33;
        let v: i32 = bytes.min(i32::MAX as usize) as i32;
        let fd = socket.as_raw_fd();
        for (force, plain) in [(SO_RCVBUFFORCE, SO_RCVBUF), (SO_SNDBUFFORCE, SO_SNDBUF)] {
            // SAFETY: `fd` is an open socket for the duration of the call; the value is a
            // valid i32 whose size is passed.
            unsafe {
                let p = (&v as *const i32).cast();
                if setsockopt(fd, SOL_SOCKET, force, p, 4) != 0 {
                    setsockopt(fd, SOL_SOCKET, plain, p, 4);
                }
            }
        }
    }
    #[cfg(not(all(
        target_os = "linux",
        any(
            target_arch = "x86_64",
            target_arch = "aarch64",
            target_arch = "x86",
            target_arch = "arm",
            target_arch = "riscv64"
        )
    )))]
    let _ = (socket, bytes);
}

/// A UDP socket to the switch.
#[derive(Debug)]
pub struct UdpTransport {
    socket: UdpSocket,
    switch: SocketAddr,
    /// The read timeout last set on the socket.
    read_timeout: Option<Duration>,
}

impl UdpTransport {
    /// Binds `local` and sends to `switch`. Messages from any source are accepted (the worker
    /// core checks each one).
    pub fn bind(local: SocketAddr, switch: SocketAddr) -> io::Result<UdpTransport> {
        let socket = UdpSocket::bind(local)?;
        enlarge_buffers(&socket, SOCKET_BUFFER);
        Ok(UdpTransport { socket, switch, read_timeout: None })
    }
    /// Binds rank `rank`'s address of the job (its IPv4 address, `job.worker_port`).
    pub fn for_rank(job: &JobConfig, rank: usize, switch: SocketAddr) -> io::Result<UdpTransport> {
        let w = job.workers.get(rank).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("rank {rank} is not in the job (n = {})", job.n()))
        })?;
        UdpTransport::bind(SocketAddr::V4(SocketAddrV4::new(w.ip, job.worker_port)), switch)
    }
    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }
}

impl Transport for UdpTransport {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        match self.socket.send_to(msg, self.switch) {
            Ok(_) => Ok(()),
            // A full socket buffer or an ICMP error is a lost packet: retransmission covers it.
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused) => Ok(()),
            Err(e) => Err(e),
        }
    }
    fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            // Setting the timeout costs a system call: keep the one set while it ends before
            // the deadline and is not much shorter than the time left.
            let left = deadline - now;
            if !self.read_timeout.is_some_and(|t| t <= left && t >= left / 2) {
                let t = left.max(Duration::from_micros(1));
                self.socket.set_read_timeout(Some(t))?;
                self.read_timeout = Some(t);
            }
            match self.socket.recv_from(buf) {
                Ok((n, _)) => return Ok(Some(n)),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            }
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
        let job = &self.hub.job;
        let me = job.workers[self.rank];
        frame::encapsulate(
            frame::Endpoint { mac: me.mac, ip: me.ip, port: job.worker_port },
            frame::Endpoint { mac: job.switch_mac, ip: job.switch_ip, port: job.switch_port },
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
    held_send: Option<Vec<u8>>,
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
        let f = self.send_faults;
        if self.roll(f.loss) {
            self.stats.lost += 1;
            return Ok(());
        }
        if self.held_send.is_none() && self.roll(f.reorder) {
            self.stats.reordered += 1;
            self.held_send = Some(msg.to_vec());
            return Ok(());
        }
        self.inner.send(msg)?;
        if self.roll(f.duplicate) {
            self.stats.duplicated += 1;
            self.inner.send(msg)?;
        }
        if let Some(h) = self.held_send.take() {
            self.inner.send(&h)?;
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
        if let Some(h) = self.held_send.take() {
            self.inner.send(&h)?;
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
    use crate::wire::{Ipv4Addr, MacAddr, PayloadSize};

    #[test]
    fn frames_round_trip_through_the_wire_module() {
        let src =
            frame::Endpoint { mac: MacAddr([2, 0, 0x5a, 0, 1, 3]), ip: Ipv4Addr::new(192, 0, 2, 13), port: 0xbee0 };
        let dst =
            frame::Endpoint { mac: MacAddr([2, 0, 0x5a, 0, 0, 1]), ip: Ipv4Addr::new(192, 0, 2, 1), port: 0xbee5 };
        let mut f = Vec::new();
        frame::encapsulate(src, dst, &[1, 2, 3, 4, 5], &mut f);
        assert_eq!(f.len(), 42 + 5);
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        assert_eq!(&f[34..42], &[0xbe, 0xe0, 0xbe, 0xe5, 0x00, 0x0d, 0x00, 0x00]);
        assert!(crate::wire::checksum::verify(&f[14..34]));
        let d = frame::decapsulate(&f).unwrap();
        assert_eq!((d.src, d.dst, d.payload), (src, dst, &[1u8, 2, 3, 4, 5][..]));
        f[20] = 0x20; // MF: a fragment
        assert!(frame::decapsulate(&f).is_none());
        assert!(frame::decapsulate(&f[..20]).is_none());
    }

    /// The message-level model of the switch as an [`Engine`] on frames, for tests without
    /// the sim crate.
    struct MiniEngine {
        job: JobConfig,
        inner: crate::worker::test::MiniSwitch,
        counters: Counters,
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
        let mut job = JobConfig::example(n, PayloadSize::B256, 8);
        job.timeout = Duration::from_millis(2);
        job.max_retries = 50;
        let hub = InProcessSwitch::new(
            Box::new(MiniEngine {
                job: job.clone(),
                inner: crate::worker::test::MiniSwitch::new(n),
                counters: Counters::default(),
            }),
            job.clone(),
        );
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
