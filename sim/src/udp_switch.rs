//! The software switch: an [`Engine`] (the reference switch, or any other) served over a UDP
//! socket, for hosts without an FPGA, for tests and for the Python package.
//!
//! Each datagram from (ip, port) is wrapped into the Ethernet/IPv4/UDP frame a NIC would see:
//! source MAC and IPv4 of the rank with that IPv4 address (an address not in the job gets the
//! locally administered MAC 02:00:ip, goes through and is counted by the engine as
//! `unknown_source`), destination the switch's MAC and IPv4, UDP source port the sender's and
//! destination port the socket's if it is a SwitchML port, else the job's `switch_port`. Every
//! frame the engine emits is unwrapped and its payload sent by UDP to its destination IPv4
//! address and port.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spotagg_driver::transport::frame::{self, Endpoint};
use spotagg_driver::wire::{switchml, MacAddr};
use spotagg_driver::{Counters, Engine, JobConfig};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
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
}

/// What [`serve`] did besides the engine's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
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
}

/// Serves `engine` on `socket` until `stop` is set or the idle time passes.
pub fn serve(
    socket: &UdpSocket,
    job: &JobConfig,
    engine: &mut dyn Engine,
    opts: &ServeOptions,
    stop: &AtomicBool,
) -> io::Result<ServeStats> {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut lose = move |p: f64| p > 0.0 && rng.gen_bool(p.min(1.0));
    let mut st = ServeStats::default();
    let local_port = socket.local_addr()?.port();
    let dst_port = if switchml::is_switchml_port(local_port) { local_port } else { job.switch_port };
    let switch = Endpoint { mac: job.switch_mac, ip: job.switch_ip, port: dst_port };
    socket.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut buf = vec![0u8; 65536];
    let mut frame_buf = Vec::with_capacity(2048);
    let mut out = Vec::new();
    let mut last_rx = Instant::now();
    let mut last_print = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if let Some(every) = opts.stats_every {
            if last_print.elapsed() >= every {
                last_print = Instant::now();
                eprintln!("spotagg switch: {}", counters_line(&engine.counters()));
            }
        }
        let (len, from) = match socket.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if opts.exit_after_idle.is_some_and(|idle| last_rx.elapsed() >= idle) {
                    break;
                }
                continue;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        last_rx = Instant::now();
        st.datagrams_in += 1;
        let SocketAddr::V4(from) = from else {
            st.ipv6_ignored += 1;
            continue;
        };
        if lose(opts.loss) {
            st.injected_drops_in += 1;
            continue;
        }
        let mac = match job.rank_of(*from.ip()) {
            Some(r) => job.workers[r].mac,
            None => {
                st.unknown_senders += 1;
                let o = from.ip().octets();
                MacAddr([0x02, 0x00, o[0], o[1], o[2], o[3]])
            }
        };
        frame::encapsulate(Endpoint { mac, ip: *from.ip(), port: from.port() }, switch, &buf[..len], &mut frame_buf);
        out.clear();
        engine.process(&frame_buf, &mut out);
        for f in &out {
            let Some(d) = frame::decapsulate(f) else {
                st.unsendable += 1;
                continue;
            };
            if lose(opts.loss) {
                st.injected_drops_out += 1;
                continue;
            }
            match socket.send_to(d.payload, SocketAddr::from((d.dst.ip, d.dst.port))) {
                Ok(_) => st.datagrams_out += 1,
                // A full buffer or an unreachable worker: the worker retransmits.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused | io::ErrorKind::PermissionDenied
                    ) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(st)
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
