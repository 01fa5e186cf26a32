//! The software switch: an [`Engine`] (the reference switch, or any other) served over a UDP
//! socket, for hosts without an FPGA, for tests and for the Python package.
//!
//! Each datagram from (ip, port) is wrapped into the Ethernet/IPv4/UDP frame a NIC would see:
//! source MAC and IPv4 of the rank with that IPv4 address (an address not in the job gets the
//! locally administered MAC 02:00:ip, goes through and is counted by the engine as
//! `unknown_source`), destination the switch's MAC and IPv4, UDP source port the sender's and
//! destination port the socket's if it is a SwitchML port, else the job's `switch_port`. Every
//! frame the engine emits is unwrapped and its payload sent by UDP to its destination IPv4
//! address and port, from the socket the datagram came in on. I/O is batched
//! ([`spotagg_driver::batch`]: `recvmmsg` and GRO in, GSO per destination out, where the
//! kernel has them); [`serve_threads`] runs one thread per port.
//!
//! A job with 16-bit lanes (`lanes16`, docs/switch.md §9) is served on a second socket per
//! thread, at the 16-bit twin of each port (0xBEE0 + t and 0xBEF0 + t:
//! [`serve_threads_lanes`]): a datagram to it becomes a frame to the twin port, the engine sums
//! it in 16-bit lanes, and the replies leave from it. The thread polls both sockets and feeds
//! one engine, so a slot's state is one whatever the width.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spotagg_driver::batch::{BatchSocket, IoStats, Receiver, Sender};
use spotagg_driver::wire::frame::{self, Endpoint};
use spotagg_driver::wire::switchml::{field::POOL_INDEX, PREAMBLE_LEN};
use spotagg_driver::wire::{switchml, Lanes, MacAddr, PoolIndex};
use spotagg_driver::{Counters, Engine, JobConfig};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How [`serve`] behaves.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Drop probability of each datagram, in each direction.
    pub loss: f64,
    /// Seed of the drops.
    pub seed: u64,
    /// Return after this long without a datagram.
    pub exit_after_idle: Option<Duration>,
    /// Print the counters on stderr this often.
    pub stats_every: Option<Duration>,
    /// Plain `recv_from`/`send_to`, one datagram a system call, instead of batched I/O (the
    /// benchmarks' baseline).
    pub plain_io: bool,
    /// Where each thread publishes its engine's metrics (every 200 ms and when it stops), for
    /// `--metrics` ([`crate::metrics_http`]).
    pub metrics: Option<std::sync::Arc<crate::metrics_http::MetricsBoard>>,
}

/// What [`serve`] did besides the engine's counters.
/// Summed field by field (`+=`) over the threads of [`serve_threads`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, derive_more::AddAssign)]
pub struct ServeStats {
    /// Datagrams received.
    pub datagrams_in: u64,
    /// Datagrams sent.
    pub datagrams_out: u64,
    /// Datagrams dropped on the way in by `--loss`.
    pub injected_drops_in: u64,
    /// Datagrams dropped on the way out by `--loss`.
    pub injected_drops_out: u64,
    /// Datagrams from IPv6 senders (ignored).
    pub ipv6_ignored: u64,
    /// Frames the engine emitted that are not UDP over IPv4 (not sent).
    pub unsendable: u64,
    /// Datagrams from addresses that are not a rank's (passed to the engine).
    pub unknown_senders: u64,
    /// Contributions to a slot another thread owns (slot mod T ≠ the thread's port index):
    /// dropped, a worker with the wrong `switch_ports`.
    pub misrouted: u64,
    /// Receive system calls that returned data.
    pub recv_calls: u64,
    /// Send system calls.
    pub send_calls: u64,
    /// Datagrams not sent for a full send buffer or an ICMP error (the worker retransmits).
    pub send_dropped: u64,
    /// Sessions opened (docs/switch.md §2.1), each logged on stderr.
    pub sessions: u64,
}

/// Serves `engine` on `socket` until `stop` is set or the idle time passes. The socket is made
/// non-blocking (a duplicate of its descriptor is used for batched I/O).
pub fn serve(
    socket: &UdpSocket,
    job: &JobConfig,
    engine: &mut dyn Engine,
    opts: &ServeOptions,
    stop: &AtomicBool,
) -> io::Result<ServeStats> {
    let idle = Idle::new();
    serve_port(&[socket], job, engine, opts, stop, &idle, (0, 1))
}

/// The multi-threaded software switch: thread t serves `sockets[t]` with `engines[t]`, and owns
/// the slots s with s mod T = t (T = the number of sockets; workers with `switch_ports = T` send
/// slot s to the t-th port). Each engine is a whole switch for the job that only ever sees its
/// thread's slots, so that no lock is taken per frame; a contribution to another thread's slot
/// is dropped and counted in [`ServeStats::misrouted`]. Replies leave from the socket the
/// contribution came in on. The threads stop together (`stop`, or every port idle for
/// `exit_after_idle`); the statistics are summed.
pub fn serve_threads(
    sockets: &[UdpSocket],
    job: &JobConfig,
    engines: &mut [Box<dyn Engine>],
    opts: &ServeOptions,
    stop: &AtomicBool,
) -> io::Result<ServeStats> {
    serve_threads_lanes(sockets, &[], job, engines, opts, stop)
}

/// [`serve_threads`] with a second socket for each thread, `sockets16[t]`, for the 16-bit lanes
/// of docs/switch.md §9 (the twin ports of `sockets`, 0xBEF0 + t): thread t serves both with
/// `engines[t]`. `sockets16` is empty (no 16-bit lanes) or as long as `sockets`.
pub fn serve_threads_lanes(
    sockets: &[UdpSocket],
    sockets16: &[UdpSocket],
    job: &JobConfig,
    engines: &mut [Box<dyn Engine>],
    opts: &ServeOptions,
    stop: &AtomicBool,
) -> io::Result<ServeStats> {
    assert_eq!(sockets.len(), engines.len(), "one engine per socket");
    assert!(sockets16.is_empty() || sockets16.len() == sockets.len(), "one 16-bit socket per socket, or none");
    let t_count = sockets.len();
    let idle = Idle::new();
    let results: Vec<io::Result<ServeStats>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sockets
            .iter()
            .zip(engines.iter_mut())
            .enumerate()
            .map(|(t, (sock, engine))| {
                let idle = &idle;
                let opts = ServeOptions { seed: opts.seed.wrapping_add(t as u64), ..opts.clone() };
                let mut socks = vec![sock];
                socks.extend(sockets16.get(t));
                std::thread::Builder::new()
                    .name(format!("switch-{t}"))
                    .spawn_scoped(scope, move || {
                        let r = serve_port(&socks, job, engine.as_mut(), &opts, stop, idle, (t, t_count));
                        // One thread failing stops the others.
                        idle.failed.store(true, Ordering::Relaxed);
                        r
                    })
                    .expect("spawning a switch thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(io::Error::other("a switch thread panicked"))))
            .collect()
    });
    let mut total = ServeStats::default();
    for r in results {
        total += r?;
    }
    Ok(total)
}

/// The last time any port received (ms since `start`), shared by the threads without a lock.
struct Idle {
    start: Instant,
    last_rx_ms: AtomicU64,
    failed: AtomicBool,
}

impl Idle {
    fn new() -> Idle {
        Idle { start: Instant::now(), last_rx_ms: AtomicU64::new(0), failed: AtomicBool::new(false) }
    }
    fn touch(&self) {
        self.last_rx_ms.store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
    fn idle_for(&self) -> Duration {
        self.start.elapsed().saturating_sub(Duration::from_millis(self.last_rx_ms.load(Ordering::Relaxed)))
    }
}

/// One socket of a thread: its batched I/O and the switch address its datagrams are framed to.
struct PortIo {
    bs: BatchSocket,
    rx: Receiver,
    tx: Sender,
    switch: Endpoint,
    rx_stats: IoStats,
    tx_stats: IoStats,
}

/// Serves `sockets` (one, or a port and its 16-bit twin) with one engine.
fn serve_port(
    sockets: &[&UdpSocket],
    job: &JobConfig,
    engine: &mut dyn Engine,
    opts: &ServeOptions,
    stop: &AtomicBool,
    idle: &Idle,
    (thread, threads): (usize, usize),
) -> io::Result<ServeStats> {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut lose = move |p: f64| p > 0.0 && rng.gen_bool(p.min(1.0));
    let mut st = ServeStats::default();
    let local_port = sockets[0].local_addr()?.port();
    let dst_port = if switchml::is_switchml_port(local_port) { local_port } else { job.switch_port };
    let mut ports = Vec::with_capacity(sockets.len());
    for (i, socket) in sockets.iter().enumerate() {
        // The second socket is the 16-bit twin: its datagrams are framed to the twin port.
        let port = if i == 0 { dst_port } else { Lanes::I16.port(dst_port) };
        let bs = if opts.plain_io {
            BatchSocket::plain(socket.try_clone()?)?
        } else {
            BatchSocket::new(socket.try_clone()?)?
        };
        ports.push(PortIo {
            rx: Receiver::new(&bs),
            bs,
            tx: Sender::new(),
            switch: Endpoint { mac: job.switch_mac, ip: job.switch_ip, port },
            rx_stats: IoStats::default(),
            tx_stats: IoStats::default(),
        });
    }
    let mut frame_buf = Vec::with_capacity(2048);
    let mut out = Vec::new();
    let mut last_print = Instant::now();
    let mut failure: Option<io::Error> = None;
    let multi = threads > 1;
    let label = if multi { format!("spotagg switch [port {local_port}]") } else { "spotagg switch".to_string() };
    let mut last_publish = Instant::now();
    let publish = |engine: &dyn Engine, st: &ServeStats| {
        if let Some(board) = &opts.metrics {
            let mut f = engine.metrics();
            f.extend(serve_families(st));
            board.publish(thread, f);
        }
    };
    let mut epoch = engine.session_epoch();
    while !stop.load(Ordering::Relaxed) && !idle.failed.load(Ordering::Relaxed) {
        if opts.metrics.is_some() && last_publish.elapsed() >= Duration::from_millis(200) {
            last_publish = Instant::now();
            publish(&*engine, &st);
        }
        // The straggler counters' clock (docs/switch.md §7): one reading per receive batch.
        engine.set_clock(idle.start.elapsed().as_micros() as u64);
        if let Some(every) = opts.stats_every {
            if last_print.elapsed() >= every {
                last_print = Instant::now();
                eprintln!("{label}: {}", counters_line(&engine.counters()));
            }
        }
        let mut got = 0;
        for PortIo { bs, rx, tx, switch, rx_stats, tx_stats } in ports.iter_mut() {
            let switch = *switch;
            let n = rx.recv(bs, rx_stats, |from, msg| {
                if failure.is_some() {
                    return;
                }
                st.datagrams_in += 1;
                let SocketAddr::V4(from) = from else {
                    st.ipv6_ignored += 1;
                    return;
                };
                if lose(opts.loss) {
                    st.injected_drops_in += 1;
                    return;
                }
                if multi && msg.len() >= PREAMBLE_LEN {
                    let pool =
                        PoolIndex::from_u16(u16::from_be_bytes([msg[POOL_INDEX.start], msg[POOL_INDEX.start + 1]]));
                    if usize::from(pool.slot) % threads != thread {
                        st.misrouted += 1;
                        return;
                    }
                }
                let mac = match job.rank_of(*from.ip()) {
                    Some(r) => job.workers[r].mac,
                    // The parent switch of a tree (docs/switch.md §6).
                    None if job.parent.is_some_and(|p| p.ip == *from.ip()) => job.parent.unwrap().mac,
                    // A worker of a job that joined while the switch runs (the controller's).
                    None => engine.peer_mac(*from.ip()).unwrap_or_else(|| {
                        st.unknown_senders += 1;
                        let o = from.ip().octets();
                        MacAddr([0x02, 0x00, o[0], o[1], o[2], o[3]])
                    }),
                };
                frame::encapsulate(Endpoint { mac, ip: *from.ip(), port: from.port() }, switch, msg, &mut frame_buf);
                out.clear();
                engine.process(&frame_buf, &mut out);
                if engine.session_epoch() != epoch {
                    epoch = engine.session_epoch();
                    st.sessions += 1;
                    eprintln!(
                    "{label}: session opened by {} workers (epoch {}, every slot cleared), the last join from {from}",
                    job.n(),
                    epoch.unwrap_or(0)
                );
                }
                for f in &out {
                    let Some(d) = frame::decapsulate(f) else {
                        st.unsendable += 1;
                        continue;
                    };
                    if lose(opts.loss) {
                        st.injected_drops_out += 1;
                        continue;
                    }
                    if let Err(e) = tx.queue(bs, tx_stats, SocketAddr::from((d.dst.ip, d.dst.port)), d.payload) {
                        failure = Some(e);
                        return;
                    }
                }
            });
            if let Some(e) = failure.take() {
                return Err(e);
            }
            got += n?;
            tx.flush(bs, tx_stats)?;
        }
        if got > 0 {
            idle.touch();
            continue;
        }
        let all: Vec<&BatchSocket> = ports.iter().map(|p| &p.bs).collect();
        if !BatchSocket::wait_readable_any(&all, Duration::from_millis(50))?
            && opts.exit_after_idle.is_some_and(|limit| idle.idle_for() >= limit)
        {
            break;
        }
    }
    for p in &ports {
        st.recv_calls += p.rx_stats.recv_calls;
        st.send_calls += p.tx_stats.send_calls;
        st.send_dropped += p.tx_stats.send_dropped;
        st.datagrams_out += p.tx_stats.datagrams_out;
    }
    publish(&*engine, &st);
    Ok(st)
}

/// The serve statistics as Prometheus families (`spotagg_switch_udp_*`).
pub fn serve_families(st: &ServeStats) -> Vec<spotagg_driver::metrics::Family> {
    use spotagg_driver::metrics::{Family, Kind};
    let c = |name: &str, help: &str, v: u64| Family::single(name, help, Kind::Counter, v as f64);
    vec![
        c("spotagg_switch_udp_datagrams_in_total", "Datagrams received.", st.datagrams_in),
        c(
            "spotagg_switch_udp_injected_drops_total",
            "Datagrams dropped by --loss, both ways.",
            st.injected_drops_in + st.injected_drops_out,
        ),
        c("spotagg_switch_udp_unknown_senders_total", "Datagrams from addresses not in the job.", st.unknown_senders),
        c("spotagg_switch_udp_misrouted_total", "Contributions to another thread's slot.", st.misrouted),
        c("spotagg_switch_udp_send_dropped_total", "Datagrams not sent (full buffer, ICMP error).", st.send_dropped),
    ]
}

/// The counters on one line, zero drop counters left out.
pub fn counters_line(c: &Counters) -> String {
    c.named()
        .into_iter()
        .enumerate()
        .filter(|(i, (_, v))| *i < 8 || *v != 0)
        .map(|(_, (k, v))| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
