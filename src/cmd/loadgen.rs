//! `spotagg load-generator` (hidden; started by `spotagg bench`): the other process of the
//! switch-alone benchmark. It plays every worker of a job from one thread, each from its own
//! socket (the rank's IPv4 address, the job's `worker_port`), with preloaded contributions: every
//! slot starts with one contribution of each rank, and each result of slot s in set v releases
//! that rank's contribution to (s, 1 − v), self-clocked as real workers are but with no
//! conversion. A contribution unanswered for [`RESEND_AFTER`] is sent again (the switch answers a
//! duplicate of a complete round with its result): without it, a first burst that overflowed the
//! switch's receive buffer stalled every slot for the whole run (`stalled_slots` 64 in about one
//! run in four of `bench --switch-alone`). Sends are batched per destination port (GSO),
//! receives with `recvmmsg`/GRO ([`spotagg_driver::batch`]). Slot s goes to the switch's port +
//! (s mod `switch_ports`).
//!
//! Prints one JSON line: `{results, contributions, seconds, stalled_slots, resent}` counted after
//! a warm-up of `--warmup` seconds (`resent` over the whole run).

use crate::engines::load_job;
use anyhow::{Context, Result};
use spotagg_driver::batch::{BatchSocket, IoStats, Receiver, Sender};
use spotagg_driver::wire::switchml::{PoolIndex, PREAMBLE_LEN};
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A contribution with no result for this long is sent again.
pub const RESEND_AFTER: Duration = Duration::from_millis(50);

/// Arguments of `spotagg load-generator`.
#[derive(clap::Args)]
pub struct Args {
    /// The job configuration (TOML).
    #[arg(long)]
    config: PathBuf,
    /// The switch's first UDP port's address.
    #[arg(long)]
    switch: SocketAddr,
    /// Seconds to measure.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Seconds before the measurement starts.
    #[arg(long, default_value_t = 0.3)]
    warmup: f64,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let job = load_job(&args.config)?;
    let n = job.n();
    let slots = usize::from(job.slots);
    let t = job.switch_ports.max(1);
    let dst = |slot: usize| {
        let mut a = args.switch;
        a.set_port(args.switch.port() + (slot as u16 % t));
        a
    };
    let socks: Vec<BatchSocket> = job
        .workers
        .iter()
        .map(|w| {
            let a = SocketAddrV4::new(w.ip, job.worker_port);
            BatchSocket::new(UdpSocket::bind(a).with_context(|| format!("cannot bind {a}"))?).map_err(Into::into)
        })
        .collect::<Result<_>>()?;
    // msgs[rank][slot * 2 + set]
    let msgs: Vec<Vec<Vec<u8>>> = (0..n)
        .map(|r| {
            (0..2 * slots)
                .map(|i| {
                    let pool = PoolIndex { slot: (i / 2) as u16, set: (i % 2) as u8 };
                    job.contribution(pool, i as u32, (0..job.payload.elements()).map(|e| (e * (r + 1) + i) as i32))
                })
                .collect()
        })
        .collect();
    let mut rxs: Vec<Receiver> = socks.iter().map(Receiver::new).collect();
    let mut txs: Vec<Sender> = (0..n).map(|_| Sender::new()).collect();
    let mut st = IoStats::default();
    let mut last_result = vec![Instant::now(); slots];
    // Per rank and slot: the message in flight (index into msgs[rank]) and when it was sent.
    let mut in_flight: Vec<Vec<(usize, Instant)>> = vec![(0..slots).map(|s| (2 * s, Instant::now())).collect(); n];
    let mut resent = 0u64;
    let mut last_sweep = Instant::now();
    for r in 0..n {
        for s in 0..slots {
            txs[r].queue(&socks[r], &mut st, dst(s), &msgs[r][2 * s])?;
        }
        txs[r].flush(&socks[r], &mut st)?;
    }
    let start = Instant::now();
    let warm = start + Duration::from_secs_f64(args.warmup);
    let end = warm + Duration::from_secs_f64(args.seconds);
    let (mut results, mut contributions) = (0u64, 0u64);
    let mut measured_from = None;
    let mut pending: Vec<(usize, usize)> = Vec::with_capacity(512);
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        if now >= warm && measured_from.is_none() {
            measured_from = Some(now);
            results = 0;
            contributions = 0;
        }
        let mut got = 0;
        for r in 0..n {
            pending.clear();
            got += rxs[r].recv(&socks[r], &mut st, |_, d| {
                if d.len() >= PREAMBLE_LEN {
                    let p = PoolIndex::from_u16(u16::from_be_bytes([d[6], d[7]]));
                    pending.push((usize::from(p.slot), usize::from(p.set)));
                }
            })?;
            for &(s, v) in &pending {
                if s < slots {
                    results += 1;
                    if r == 0 {
                        last_result[s] = now;
                    }
                    contributions += 1;
                    in_flight[r][s] = (2 * s + (v ^ 1), now);
                    txs[r].queue(&socks[r], &mut st, dst(s), &msgs[r][2 * s + (v ^ 1)])?;
                }
            }
            txs[r].flush(&socks[r], &mut st)?;
        }
        if now.duration_since(last_sweep) >= RESEND_AFTER / 5 {
            last_sweep = now;
            for r in 0..n {
                for (s, (m, sent)) in in_flight[r].iter_mut().enumerate() {
                    if now.duration_since(*sent) >= RESEND_AFTER {
                        *sent = now;
                        resent += 1;
                        txs[r].queue(&socks[r], &mut st, dst(s), &msgs[r][*m])?;
                    }
                }
                txs[r].flush(&socks[r], &mut st)?;
            }
        }
        if got == 0 {
            wait_any(&socks, Duration::from_millis(5));
        }
    }
    let secs = measured_from.map_or(0.0, |t| t.elapsed().as_secs_f64());
    let stalled = last_result.iter().filter(|t| t.elapsed() > Duration::from_millis(200)).count();
    println!(
        "{}",
        serde_json::json!({
            "results": results,
            "contributions": contributions,
            "seconds": secs,
            "stalled_slots": stalled,
            "resent": resent,
            "send_calls": st.send_calls,
            "recv_calls": st.recv_calls,
            "send_dropped": st.send_dropped,
        })
    );
    Ok(())
}

fn wait_any(socks: &[BatchSocket], timeout: Duration) {
    use std::os::fd::AsRawFd;
    let mut fds: Vec<libc::pollfd> =
        socks.iter().map(|s| libc::pollfd { fd: s.socket().as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    // SAFETY: valid pollfds for the duration of the call.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout.as_millis() as libc::c_int) };
}
