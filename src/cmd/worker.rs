//! `spotagg worker`: one worker process. It all-reduces a deterministic pseudo-random f32
//! tensor derived from (seed, rank) through a switch over UDP and prints one JSON line:
//! `{rank, elements, seconds, gbps, packets, retransmissions, max_error, bound, ok, switch,
//! switch_name, epoch, failovers}` (`failovers`: `[{from, to, reason, detect_ms, stall_ms}]`).
//!
//! `--switch` may be given several times: the switches in failover order (as `switches` in the
//! job, which it overrides); the worker moves to the next when the active one stops answering.
//!
//! With `--verify` it regenerates every rank's tensor, sums them exactly (f64) and checks each
//! element against the documented fixed-point bound
//! ([`spotagg_driver::fixedpoint::error_bound`], with the chunk's largest exponent over all
//! ranks); a wrong result exits non-zero.

use crate::engines::load_job;
use anyhow::{Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spotagg_driver::fixedpoint;
use spotagg_driver::transport::{FaultInjector, Faults, UdpTransport};
use spotagg_driver::wire::Lanes;
use spotagg_driver::{JobConfig, Worker};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;

/// Arguments of `spotagg worker`.
#[derive(clap::Args)]
pub struct Args {
    /// The job configuration (TOML).
    #[arg(long, required_unless_present = "controller", conflicts_with = "controller")]
    config: Option<PathBuf>,
    /// Register with the switch's controller at HOST:PORT instead of reading a job file
    /// (docs/controller.md §7): needs --world and --bind; SPOTAGG_TOKEN is sent if set.
    #[arg(long, requires_all = ["world", "bind"])]
    controller: Option<String>,
    /// Workers of the job (with --controller).
    #[arg(long, requires = "controller")]
    world: Option<u32>,
    /// Payload bytes of a packet (with --controller): 128, 256, 512 or 1024.
    #[arg(long, requires = "controller", default_value_t = 256)]
    payload: u32,
    /// This worker's MAC (with --controller; default: its interface's, or 02:00 and the IPv4
    /// address on loopback).
    #[arg(long, requires = "controller")]
    mac: Option<spotagg_driver::wire::MacAddr>,
    /// This worker's rank (its entry in the job's [[worker]] list).
    #[arg(long)]
    rank: usize,
    /// The switch's UDP address; repeated: the switches in failover order (default: the job's
    /// `switches`).
    #[arg(long)]
    switch: Vec<SocketAddr>,
    /// IPv4 address to bind (default: the rank's address in the job); the port is the job's
    /// `worker_port`.
    #[arg(long)]
    bind: Option<Ipv4Addr>,
    /// Elements of the tensor.
    #[arg(long, default_value_t = 1 << 20)]
    elements: usize,
    /// Seed of the tensors (every rank must use the same).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Check the result against the exact sum of every rank's tensor.
    #[arg(long)]
    verify: bool,
    /// Probability of dropping a message, in each direction (fault injection).
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Bits a coordinate on the wire: 32, or 16 (docs/switch.md §9: the job needs
    /// `lanes16 = true`, and the switch must be on SwitchML's ports).
    #[arg(long, default_value_t = 32, value_parser = lanes_arg)]
    lanes: u32,
    /// The UDP port to send from (default: the job's `worker_port`). With --controller every
    /// worker of the job must give the same (default: the controller's, SwitchML's 4000).
    #[arg(long)]
    worker_port: Option<u16>,
    /// Start the all-reduce at this Unix time (seconds, fractions allowed), after the tensor is
    /// made and the socket bound, so that the workers of a benchmark start together.
    #[arg(long)]
    start_at: Option<f64>,
}

/// `--lanes`: 16 or 32.
fn lanes_arg(s: &str) -> Result<u32, String> {
    match s {
        "16" => Ok(16),
        "32" => Ok(32),
        _ => Err(format!("{s} is not a lane width: 16 or 32")),
    }
}

/// The tensor of rank `rank`: gradient-like values, uniform in ±2^m with the magnitude m
/// changing every 4096 elements (−12..4), from ChaCha8 seeded with `seed`, stream `rank`.
pub fn tensor(seed: u64, rank: usize, len: usize) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(rank as u64);
    let mut mags = ChaCha8Rng::seed_from_u64(seed ^ 0x5107_a66e);
    let mut v = Vec::with_capacity(len);
    let mut m = 1.0f32;
    for i in 0..len {
        if i % 4096 == 0 {
            m = 2f32.powi(mags.gen_range(-12..4));
        }
        v.push((rng.gen::<f32>() * 2.0 - 1.0) * m);
    }
    v
}

/// The outcome of checking a result against the exact sum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verification {
    /// Largest |result − exact sum|.
    pub max_error: f64,
    /// Largest per-element bound.
    pub bound: f64,
    /// Every element within its own bound.
    pub ok: bool,
    /// First element outside its bound.
    pub first_bad: Option<usize>,
}

/// Checks `result` against the exact (f64) sum of `tensors`, element by element, with the
/// bound of the element's chunk (k elements per chunk, its largest exponent over the ranks).
pub fn verify(tensors: &[Vec<f32>], result: &[f32], k: usize) -> Result<Verification> {
    verify_lanes(tensors, result, k, Lanes::I32)
}

/// [`verify`] for a result in lanes of `lanes` bits: chunks of `k` elements (2 × the 32-bit
/// chunk for 16-bit lanes), each with the bound of its scale.
pub fn verify_lanes(tensors: &[Vec<f32>], result: &[f32], k: usize, lanes: Lanes) -> Result<Verification> {
    let n = tensors.len();
    let mut v = Verification { max_error: 0.0, bound: 0.0, ok: true, first_bad: None };
    for (c, out) in result.chunks(k).enumerate() {
        let lo = c * k;
        let mut e_max = fixedpoint::E_ZERO;
        for t in tensors {
            e_max = e_max.max(fixedpoint::exponent(&t[lo..lo + out.len()])?);
        }
        let scale = fixedpoint::Scale::of_lanes(lanes, n, e_max);
        for (i, &y) in out.iter().enumerate() {
            let exact: f64 = tensors.iter().map(|t| f64::from(t[lo + i])).sum();
            let err = (f64::from(y) - exact).abs();
            let b = scale.bound(y);
            v.max_error = v.max_error.max(err);
            v.bound = v.bound.max(b);
            // A NaN error is outside the bound too.
            if err.is_nan() || err > b {
                v.ok = false;
                v.first_bad.get_or_insert(lo + i);
            }
        }
    }
    Ok(v)
}

fn transport(job: &JobConfig, args: &Args) -> Result<UdpTransport> {
    anyhow::ensure!(!job.switches.is_empty(), "no switch: give --switch ADDR (or `switches` in the job)");
    let ip = match args.bind {
        Some(ip) => ip,
        None => {
            job.workers
                .get(args.rank)
                .with_context(|| format!("--rank {} is not in the job (n = {})", args.rank, job.n()))?
                .ip
        }
    };
    let local = SocketAddr::V4(SocketAddrV4::new(ip, args.worker_port.unwrap_or(job.worker_port)));
    Ok(UdpTransport::bind(local, job.switches[0])
        .with_context(|| format!("cannot bind {local}"))?
        .with_switch_ports(job.switch_ports)
        .with_switches(job.switches.clone()))
}

/// The job from the controller (docs/controller.md §7).
fn job_from_controller(args: &Args, controller: &str) -> Result<JobConfig> {
    let ip = args.bind.expect("clap requires --bind with --controller");
    let payload = spotagg_driver::wire::PayloadSize::from_bytes(args.payload as usize)
        .with_context(|| format!("--payload {}: must be 128, 256, 512 or 1024", args.payload))?;
    let reg = spotagg_controller::client::Registration {
        controller: controller.to_string(),
        token: std::env::var("SPOTAGG_TOKEN").ok().filter(|t| !t.is_empty()),
        rank: args.rank as u32,
        num_workers: args.world.expect("clap requires --world with --controller"),
        ip,
        mac: args.mac.unwrap_or_else(|| spotagg_controller::client::mac_of(ip)),
        payload,
        worker_port: args.worker_port,
        lanes16: args.lanes == 16,
        timeout: std::time::Duration::from_secs(60),
        scope: 0,
    };
    Ok(spotagg_controller::client::register(&reg)?)
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let (mut job, source) = match (&args.controller, &args.config) {
        (Some(c), _) => {
            let mut job = job_from_controller(&args, c)?;
            job.switches = vec![SocketAddr::V4(SocketAddrV4::new(job.switch_ip, job.switch_port))];
            (job, format!("the job of controller {c}"))
        }
        (None, Some(p)) => (load_job(p)?, p.display().to_string()),
        (None, None) => unreachable!("clap requires --config or --controller"),
    };
    if !args.switch.is_empty() {
        job.switches = args.switch.clone();
    }
    anyhow::ensure!(
        job.switches.len() < 2 || job.sessions,
        "{} switches but sessions = false in {source}: failover needs sessions",
        job.switches.len(),
    );
    anyhow::ensure!(args.rank < job.n(), "--rank {} is not in the job (n = {})", args.rank, job.n());
    anyhow::ensure!((0.0..=1.0).contains(&args.loss), "--loss {} is not a probability in 0..=1", args.loss);
    let mut data = tensor(args.seed, args.rank, args.elements);
    let udp = transport(&job, &args)?;
    let mut t =
        FaultInjector::new(udp, Faults::loss(args.loss), args.seed.wrapping_mul(1000).wrapping_add(args.rank as u64));
    if let Some(at) = args.start_at {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs_f64();
        if at > now {
            std::thread::sleep(std::time::Duration::from_secs_f64(at - now));
        }
    }
    let lanes = if args.lanes == 16 { Lanes::I16 } else { Lanes::I32 };
    if lanes == Lanes::I16 {
        anyhow::ensure!(
            job.lanes16,
            "--lanes 16 but {source} does not set lanes16 = true: the switch would drop 16-bit frames",
        );
    }
    let stats = Worker::new(job.clone(), args.rank)?
        .allreduce_f32_lanes(&mut t, &mut data, lanes)
        .with_context(|| format!("rank {}: all-reduce failed", args.rank))?;
    let check = if args.verify {
        let all: Vec<Vec<f32>> = (0..job.n()).map(|r| tensor(args.seed, r, args.elements)).collect();
        Some(verify_lanes(&all, &data, lanes.coordinates(job.payload), lanes)?)
    } else {
        None
    };
    let ok = check.is_none_or(|c| c.ok);
    println!(
        "{}",
        serde_json::json!({
            "rank": args.rank,
            "elements": args.elements,
            "lanes": args.lanes,
            "seconds": stats.seconds,
            "gbps": stats.payload_gbps(),
            "packets": stats.packets_sent,
            "retransmissions": stats.retransmissions,
            "spurious_retransmissions": stats.spurious_retransmissions,
            "srtt_ms": stats.srtt_seconds * 1e3,
            "rto_ms": stats.rto_seconds * 1e3,
            "max_error": check.map(|c| c.max_error),
            "bound": check.map(|c| c.bound),
            "ok": ok,
            "switch": stats.switch,
            "switch_name": stats.switch_name,
            "epoch": stats.epoch,
            "failovers": stats.failovers.iter().map(|f| serde_json::json!({
                "from": f.from,
                "to": f.to,
                "reason": f.reason,
                "detect_ms": f.detect_seconds * 1e3,
                "stall_ms": f.stall_seconds * 1e3,
            })).collect::<Vec<_>>(),
        })
    );
    if let Some(Verification { first_bad: Some(i), .. }) = check {
        anyhow::bail!("rank {}: wrong result at element {i}: {} (outside the fixed-point bound)", args.rank, data[i]);
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn tensors_are_deterministic_and_differ_by_rank() {
        assert_eq!(tensor(7, 1, 100), tensor(7, 1, 100));
        assert_ne!(tensor(7, 1, 100), tensor(7, 2, 100));
        assert_eq!(tensor(7, 1, 10000)[..100], tensor(7, 1, 100)[..]);
    }

    #[test]
    fn verification_catches_a_wrong_element() {
        let ts = vec![tensor(1, 0, 300), tensor(1, 1, 300)];
        let mut sum: Vec<f32> = (0..300).map(|i| (f64::from(ts[0][i]) + f64::from(ts[1][i])) as f32).collect();
        assert!(verify(&ts, &sum, 64).unwrap().ok);
        sum[200] += 1e-3;
        let v = verify(&ts, &sum, 64).unwrap();
        assert_eq!((v.ok, v.first_bad), (false, Some(200)));
    }
}
