//! Batched kernel UDP I/O for the worker's [`UdpTransport`](crate::transport::UdpTransport) and
//! the software switch, over quinn-udp.
//!
//! - **Receive**: `recvmmsg` (up to [`quinn_udp::BATCH_SIZE`] buffers a system call) and, where
//!   the kernel has it, UDP GRO (one buffer then holds up to 64 datagrams of one sender, cut at
//!   `stride`): [`Receiver::recv`].
//! - **Send**: datagrams are queued per destination ([`Sender::queue`]); a queue of equal-size
//!   datagrams leaves in one `sendmsg` with UDP GSO (`UDP_SEGMENT`) where the kernel has it, else
//!   one `sendmsg` each. GSO needs one destination per system call: a multicast to n workers is
//!   n queues; results to one worker across slots share one.
//! - **Fallback**: where quinn-udp cannot set the socket up (or with `SPOTAGG_UDP_BATCH=0`), plain
//!   `recv_from`/`send_to`, one datagram a call. A kernel that refuses GSO at send time makes
//!   quinn-udp turn it off; the batch is then sent again one datagram at a time.
//!
//! The socket is non-blocking; [`BatchSocket::wait_readable`] waits with `poll(2)`. Socket buffers
//! are enlarged with [`enlarge_buffers`] through socket2.

use socket2::SockRef;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

/// Socket buffer size [`BatchSocket`] and `spotagg switch` ask for: a window of 1 KiB
/// datagrams from many workers overflows the default (about 200 KiB on Linux, where each
/// datagram costs twice its size or more).
pub const SOCKET_BUFFER: usize = 4 << 20;

/// Largest datagram the batched receive path expects (a SwitchML message is at most 1034 B).
pub const MAX_DATAGRAM: usize = 2048;

/// Largest sum of bytes in one GSO send (the UDP length field is 16 bits).
const MAX_GSO_BYTES: usize = 65_000;

/// Asks for `bytes` of receive and send buffer on a UDP socket, best effort: the forced size
/// when the process may (`SO_RCVBUFFORCE`/`SO_SNDBUFFORCE`, CAP_NET_ADMIN, on Linux), else the
/// limit of `net.core.rmem_max`/`wmem_max` (`SO_RCVBUF`/`SO_SNDBUF`).
pub fn enlarge_buffers(socket: &UdpSocket, bytes: usize) {
    let s = SockRef::from(socket);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::fd::AsRawFd;
        let v: libc::c_int = bytes.min(libc::c_int::MAX as usize) as libc::c_int;
        let fd = socket.as_raw_fd();
        let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `fd` is an open socket for the duration of the calls; `v` is a c_int whose size
        // is passed.
        let forced =
            |name| unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, name, (&v as *const libc::c_int).cast(), len) };
        if forced(libc::SO_RCVBUFFORCE) != 0 {
            let _ = s.set_recv_buffer_size(bytes);
        }
        if forced(libc::SO_SNDBUFFORCE) != 0 {
            let _ = s.set_send_buffer_size(bytes);
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = s.set_recv_buffer_size(bytes);
        let _ = s.set_send_buffer_size(bytes);
    }
}

/// What the batched socket did: system calls and datagrams each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoStats {
    /// Receive system calls that returned data.
    pub recv_calls: u64,
    /// Datagrams received.
    pub datagrams_in: u64,
    /// Send system calls.
    pub send_calls: u64,
    /// Datagrams sent.
    pub datagrams_out: u64,
    /// Datagrams not sent: a full send buffer after waiting, or an ICMP error (the peer
    /// retransmits).
    pub send_dropped: u64,
}

/// A UDP socket set up for batched I/O (non-blocking).
#[derive(Debug)]
pub struct BatchSocket {
    socket: UdpSocket,
    state: Option<quinn_udp::UdpSocketState>,
}

impl BatchSocket {
    /// Takes `socket`, enlarges its buffers to [`SOCKET_BUFFER`] and sets it up for GSO/GRO and
    /// `recvmmsg` where possible (see the module doc for the fallback).
    pub fn new(socket: UdpSocket) -> io::Result<BatchSocket> {
        enlarge_buffers(&socket, SOCKET_BUFFER);
        let off = std::env::var("SPOTAGG_UDP_BATCH").is_ok_and(|v| v == "0");
        let state = if off { None } else { quinn_udp::UdpSocketState::new((&socket).into()).ok() };
        socket.set_nonblocking(true)?;
        Ok(BatchSocket { socket, state })
    }

    /// Takes `socket` for plain `recv_from`/`send_to`, one datagram a call (the fallback, and
    /// the baseline of the benchmarks).
    pub fn plain(socket: UdpSocket) -> io::Result<BatchSocket> {
        enlarge_buffers(&socket, SOCKET_BUFFER);
        socket.set_nonblocking(true)?;
        Ok(BatchSocket { socket, state: None })
    }

    /// The socket.
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    /// True when quinn-udp's batched paths are in use.
    pub fn is_batched(&self) -> bool {
        self.state.is_some()
    }

    /// Datagrams one GSO send may carry now (1: no GSO).
    pub fn gso_segments(&self) -> usize {
        self.state.as_ref().map_or(1, |s| s.max_gso_segments())
    }

    /// Datagrams one receive buffer may hold (1: no GRO).
    pub fn gro_segments(&self) -> usize {
        self.state.as_ref().map_or(1, |s| s.gro_segments())
    }

    /// Waits until the socket is readable or `timeout` passed (rounded up to a millisecond);
    /// true when readable.
    pub fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        self.wait(timeout, false)
    }

    /// Waits until any of `sockets` is readable or `timeout` passed (rounded up to a
    /// millisecond); true when one is readable.
    pub fn wait_readable_any(sockets: &[&BatchSocket], timeout: Duration) -> io::Result<bool> {
        if let [one] = sockets {
            return one.wait_readable(timeout);
        }
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let mut fds: Vec<libc::pollfd> = sockets
                .iter()
                .map(|s| libc::pollfd { fd: s.socket.as_raw_fd(), events: libc::POLLIN, revents: 0 })
                .collect();
            let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
            // SAFETY: `fds.len()` valid pollfds for the duration of the call.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
            }
            Ok(r > 0)
        }
        #[cfg(not(unix))]
        {
            std::thread::sleep(timeout.min(Duration::from_millis(1)));
            Ok(true)
        }
    }

    fn wait(&self, timeout: Duration, write: bool) -> io::Result<bool> {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let events = if write { libc::POLLOUT } else { libc::POLLIN };
            let mut fd = libc::pollfd { fd: self.socket.as_raw_fd(), events, revents: 0 };
            let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
            // SAFETY: one valid pollfd for the duration of the call.
            let r = unsafe { libc::poll(&mut fd, 1, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
            }
            Ok(r > 0)
        }
        #[cfg(not(unix))]
        {
            let _ = write;
            std::thread::sleep(timeout.min(Duration::from_millis(1)));
            Ok(true)
        }
    }
}

/// Receive buffers for [`BatchSocket`].
#[derive(Debug)]
pub struct Receiver {
    bufs: Vec<Vec<u8>>,
    meta: Vec<quinn_udp::RecvMeta>,
}

impl Receiver {
    /// Buffers for the socket's batch and GRO sizes.
    pub fn new(socket: &BatchSocket) -> Receiver {
        let (count, size) = if socket.is_batched() {
            // With GRO every buffer must hold 64 datagrams; fewer buffers then.
            let gro = socket.gro_segments();
            (if gro > 1 { 8 } else { quinn_udp::BATCH_SIZE }, gro * MAX_DATAGRAM)
        } else {
            (1, 65536)
        };
        Receiver { bufs: vec![vec![0; size]; count], meta: vec![quinn_udp::RecvMeta::default(); count] }
    }

    /// Receives what is there without waiting, calling `f(sender, datagram)` for each datagram in
    /// order; returns the datagrams (0 when nothing was waiting). Transient errors (an ICMP error
    /// of an earlier send, an interrupt) read as 0.
    pub fn recv(
        &mut self,
        socket: &BatchSocket,
        stats: &mut IoStats,
        mut f: impl FnMut(SocketAddr, &[u8]),
    ) -> io::Result<usize> {
        let Some(state) = &socket.state else {
            return match socket.socket.recv_from(&mut self.bufs[0]) {
                Ok((n, from)) => {
                    stats.recv_calls += 1;
                    stats.datagrams_in += 1;
                    f(from, &self.bufs[0][..n]);
                    Ok(1)
                }
                Err(e) if transient(&e) => Ok(0),
                Err(e) => Err(e),
            };
        };
        let mut slices: Vec<io::IoSliceMut<'_>> = self.bufs.iter_mut().map(|b| io::IoSliceMut::new(b)).collect();
        let msgs = match state.recv((&socket.socket).into(), &mut slices, &mut self.meta) {
            Ok(m) => m,
            Err(e) if transient(&e) => return Ok(0),
            Err(e) => return Err(e),
        };
        drop(slices);
        stats.recv_calls += 1;
        let mut count = 0;
        for (m, buf) in self.meta[..msgs].iter().zip(&self.bufs) {
            let stride = m.stride.max(1);
            for d in buf[..m.len].chunks(stride) {
                f(m.addr, d);
                count += 1;
            }
        }
        stats.datagrams_in += count as u64;
        Ok(count)
    }
}

fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock
            | io::ErrorKind::TimedOut
            | io::ErrorKind::Interrupted
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
    )
}

#[derive(Debug)]
struct Queue {
    dst: SocketAddr,
    /// Size of every datagram in `bytes` but possibly the last.
    segment: usize,
    count: usize,
    bytes: Vec<u8>,
}

/// Send queues (one per destination) for [`BatchSocket`].
#[derive(Debug, Default)]
pub struct Sender {
    queues: Vec<Queue>,
}

impl Sender {
    /// No queue yet.
    pub fn new() -> Sender {
        Sender::default()
    }

    /// Queues `msg` for `dst`. A queue leaves when it is full (GSO segments or bytes), when a
    /// datagram of another size comes for it, and at [`Sender::flush`].
    pub fn queue(&mut self, socket: &BatchSocket, stats: &mut IoStats, dst: SocketAddr, msg: &[u8]) -> io::Result<()> {
        let max = socket.gso_segments().min(MAX_GSO_BYTES / msg.len().max(1)).max(1);
        if max == 1 {
            return send_one(socket, stats, dst, msg);
        }
        let i = match self.queues.iter().position(|q| q.dst == dst) {
            Some(i) => i,
            None => {
                self.queues.push(Queue { dst, segment: msg.len(), count: 0, bytes: Vec::with_capacity(MAX_GSO_BYTES) });
                self.queues.len() - 1
            }
        };
        if self.queues[i].count > 0 && self.queues[i].segment != msg.len() {
            send_queue(socket, stats, &mut self.queues[i])?;
        }
        let q = &mut self.queues[i];
        if q.count == 0 {
            q.segment = msg.len();
        }
        q.bytes.extend_from_slice(msg);
        q.count += 1;
        if q.count >= max {
            send_queue(socket, stats, q)?;
        }
        Ok(())
    }

    /// Sends every queued datagram.
    pub fn flush(&mut self, socket: &BatchSocket, stats: &mut IoStats) -> io::Result<()> {
        for q in &mut self.queues {
            if q.count > 0 {
                send_queue(socket, stats, q)?;
            }
        }
        Ok(())
    }

    /// True when datagrams wait in a queue.
    pub fn is_pending(&self) -> bool {
        self.queues.iter().any(|q| q.count > 0)
    }
}

/// How long a send waits for room in a full send buffer before the datagrams count as lost.
const SEND_WAIT: Duration = Duration::from_millis(20);

fn send_queue(socket: &BatchSocket, stats: &mut IoStats, q: &mut Queue) -> io::Result<()> {
    let r = send_segments(socket, stats, q.dst, &q.bytes, q.segment, q.count);
    q.bytes.clear();
    q.count = 0;
    r
}

fn send_segments(
    socket: &BatchSocket,
    stats: &mut IoStats,
    dst: SocketAddr,
    bytes: &[u8],
    segment: usize,
    count: usize,
) -> io::Result<()> {
    let Some(state) = &socket.state else {
        for d in bytes.chunks(segment) {
            send_one(socket, stats, dst, d)?;
        }
        return Ok(());
    };
    if count == 1 {
        return send_one(socket, stats, dst, bytes);
    }
    let t =
        quinn_udp::Transmit { destination: dst, ecn: None, contents: bytes, segment_size: Some(segment), src_ip: None };
    let mut waited = false;
    loop {
        match state.try_send((&socket.socket).into(), &t) {
            Ok(()) => {
                stats.send_calls += 1;
                stats.datagrams_out += count as u64;
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && !waited => {
                waited = true;
                socket.wait(SEND_WAIT, true)?;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || lost(&e) => {
                stats.send_dropped += count as u64;
                return Ok(());
            }
            // GSO refused (quinn-udp turned it off): one datagram at a time.
            Err(_) if state.max_gso_segments() == 1 => {
                for d in bytes.chunks(segment) {
                    send_one(socket, stats, dst, d)?;
                }
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
}

fn lost(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::PermissionDenied)
        || e.raw_os_error() == Some(libc::ENOBUFS)
}

fn send_one(socket: &BatchSocket, stats: &mut IoStats, dst: SocketAddr, msg: &[u8]) -> io::Result<()> {
    let mut waited = false;
    loop {
        let r = match &socket.state {
            Some(state) => {
                let t = quinn_udp::Transmit {
                    destination: dst,
                    ecn: None,
                    contents: msg,
                    segment_size: None,
                    src_ip: None,
                };
                state.try_send((&socket.socket).into(), &t)
            }
            None => socket.socket.send_to(msg, dst).map(|_| ()),
        };
        match r {
            Ok(()) => {
                stats.send_calls += 1;
                stats.datagrams_out += 1;
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && !waited => {
                waited = true;
                socket.wait(SEND_WAIT, true)?;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || lost(&e) => {
                stats.send_dropped += 1;
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn pair(batched: bool) -> (BatchSocket, BatchSocket) {
        let make = if batched { BatchSocket::new } else { BatchSocket::plain };
        let a = make(UdpSocket::bind("127.0.0.1:0").unwrap()).unwrap();
        let b = make(UdpSocket::bind("127.0.0.1:0").unwrap()).unwrap();
        (a, b)
    }

    #[test]
    fn batches_arrive_whole_and_in_order() {
        round_trip(true);
    }

    #[test]
    fn the_plain_fallback_carries_the_same() {
        round_trip(false);
    }

    fn round_trip(batched: bool) {
        let (a, b) = pair(batched);
        assert_eq!(a.is_batched(), batched);
        let dst = b.socket().local_addr().unwrap();
        let (mut sa, mut sb) = (IoStats::default(), IoStats::default());
        let mut tx = Sender::new();
        let total = 300;
        for i in 0..total {
            let len = if i == 150 { 100 } else { 1034 };
            let msg: Vec<u8> = (0..len).map(|j| (i + j) as u8).collect();
            tx.queue(&a, &mut sa, dst, &msg).unwrap();
        }
        tx.flush(&a, &mut sa).unwrap();
        assert!(!tx.is_pending());
        assert_eq!(sa.datagrams_out + sa.send_dropped, total as u64);
        if a.gso_segments() > 1 {
            assert!(sa.send_calls < total as u64 / 4, "{sa:?}");
        }
        let mut rx = Receiver::new(&b);
        let mut got: Vec<Vec<u8>> = Vec::new();
        let from = a.socket().local_addr().unwrap();
        for _ in 0..1000 {
            if got.len() == total {
                break;
            }
            if rx
                .recv(&b, &mut sb, |src, d| {
                    assert_eq!(src, from);
                    got.push(d.to_vec());
                })
                .unwrap()
                == 0
            {
                b.wait_readable(Duration::from_millis(10)).unwrap();
            }
        }
        assert_eq!(got.len(), total);
        for (i, d) in got.iter().enumerate() {
            let len = if i == 150 { 100 } else { 1034 };
            assert_eq!(d.len(), len, "datagram {i}");
            assert!(d.iter().enumerate().all(|(j, x)| *x == (i + j) as u8), "datagram {i}");
        }
        assert!(sb.recv_calls <= sb.datagrams_in);
    }

    #[test]
    fn nothing_waiting_is_zero_not_an_error() {
        let (a, _b) = pair(true);
        let mut rx = Receiver::new(&a);
        let mut st = IoStats::default();
        assert_eq!(rx.recv(&a, &mut st, |_, _| panic!("no datagram was sent")).unwrap(), 0);
        assert!(!a.wait_readable(Duration::from_millis(2)).unwrap());
    }
}
