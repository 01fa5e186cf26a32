//! `spotagg demo`: the whole path in one process, no setup. An engine (the reference switch
//! by default) serves the embedded example job; N worker threads all-reduce seeded f32
//! tensors of M elements through it (each over its own fault injector when `--loss` is
//! given); the result is checked against the exact sum, and the throughput and the engine's
//! counters are printed. A wrong result exits non-zero.

use super::worker::{tensor, verify};
use crate::engines::EngineKind;
use crate::units::si;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use spotagg_driver::transport::{drive, FaultInjector, Faults, InProcessSwitch};
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::{JobConfig, Stats, Worker};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `spotagg demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Worker threads, n (1..=32).
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Elements of each worker's tensor [default: 2^20 with the model engine, 2^14 with the
    /// simulated hardware, which runs about a thousand times slower].
    #[arg(long)]
    elements: Option<usize>,
    /// Payload bytes per packet (256: k = 64, 1024: k = 256; 128 and 512 also work)
    /// [default: 1024 with the model, 256 with a simulated core].
    #[arg(long)]
    payload: Option<usize>,
    /// Slots in use (the window) [default: 32 with the model, 4 with a simulated core].
    #[arg(long)]
    slots: Option<u16>,
    /// Probability of losing a message, in each direction, per worker.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Seed of the tensors and of the faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The switch implementation.
    #[arg(long, value_enum, default_value = "rtl")]
    engine: EngineKind,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let n = args.workers;
    anyhow::ensure!((1..=spotagg_driver::config::MAX_WORKERS).contains(&n), "--workers {n} is outside 1..=32");
    anyhow::ensure!((0.0..1.0).contains(&args.loss), "--loss {} is not a probability in 0..1", args.loss);
    // Defaults: the model runs a large job; a simulated core (milliseconds per frame) a small one.
    let model = args.engine == EngineKind::Model;
    let slots = args.slots.unwrap_or(if model { 32 } else { 4 });
    let payload_bytes = args.payload.unwrap_or(if model { 1024 } else { 256 });
    anyhow::ensure!(slots >= 1, "--slots must be at least 1");
    let payload = PayloadSize::from_bytes(payload_bytes)
        .with_context(|| format!("--payload {payload_bytes} must be 128, 256, 512 or 1024"))?;
    let mut job = JobConfig::example(n, payload, slots);
    // In-process round trips take microseconds through the model: retransmit lost packets
    // quickly. A simulated core takes milliseconds per frame (every worker's frames queue for
    // one simulator), so its first timeout is a second.
    job.timeout = Duration::from_millis(if args.engine == EngineKind::Model { 5 } else { 1000 });
    job.max_retries = 20;
    // Every engine has sessions (docs/switch.md §2.1): the workers open one first (the default).
    let engine = args.engine.build(&job)?;
    let hub = InProcessSwitch::new(engine, job.clone());
    let m = args.elements.unwrap_or(if args.engine == EngineKind::Model { 1 << 20 } else { 1 << 14 });

    let tensors: Vec<Vec<f32>> = (0..n).map(|r| tensor(args.seed, r, m)).collect();
    println!(
        "spotagg demo: {n} workers × {m} f32 elements, {} B payload (k = {}), {} slots, loss {}, {} engine",
        payload.bytes(),
        payload.elements(),
        slots,
        args.loss,
        hub.engine_name()
    );
    let done: Arc<Vec<AtomicUsize>> = Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
    let bar = if args.quiet { ProgressBar::hidden() } else { ProgressBar::new(m as u64) };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} elements ({percent}%)")
            .unwrap(),
    );
    let start = Instant::now();
    let handles: Vec<_> = tensors
        .iter()
        .cloned()
        .enumerate()
        .map(|(r, mut data)| {
            let t = hub.endpoint(r);
            let job = job.clone();
            let done = Arc::clone(&done);
            let seed = args.seed.wrapping_mul(7919).wrapping_add(r as u64);
            let loss = args.loss;
            std::thread::spawn(move || -> Result<(Vec<f32>, Stats)> {
                let mut t = FaultInjector::new(t, Faults::loss(loss), seed);
                let mut w = Worker::new(job, r)?;
                let mut op = w.start_f32(&mut data, Instant::now())?;
                let stats = drive(&mut op, &mut t, |d| done[r].store(d, Ordering::Relaxed))?;
                drop(op);
                Ok((data, stats))
            })
        })
        .collect();
    // On a terminal the bar shows progress; elsewhere (a log, CI) a line every few seconds.
    let lines = !args.quiet && bar.is_hidden();
    let mut last_line = Instant::now();
    while !handles.iter().all(|h| h.is_finished()) {
        let avg = done.iter().map(|d| d.load(Ordering::Relaxed)).sum::<usize>() / n;
        bar.set_position(avg as u64);
        if lines && last_line.elapsed() >= Duration::from_secs(3) {
            last_line = Instant::now();
            let t = start.elapsed().as_secs_f64();
            let cycles =
                hub.cycles().map(|c| format!(", {}", si(c as f64 / t, "cycles/s simulated"))).unwrap_or_default();
            eprintln!(
                "spotagg demo: {:>3.0} % ({avg}/{m} elements per worker) after {t:.1} s, {} of payload per worker{cycles}",
                100.0 * avg as f64 / m as f64,
                si(avg as f64 * 32.0 / t, "b/s")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut results = Vec::with_capacity(n);
    for (r, h) in handles.into_iter().enumerate() {
        let res = h.join().map_err(|_| anyhow::anyhow!("worker {r} panicked"))?;
        results.push(res.with_context(|| format!("worker {r}"))?);
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.set_position(m as u64);
    bar.finish_and_clear();

    let mut ok = true;
    let mut worst = 0.0f64;
    let mut bound = 0.0f64;
    for (r, (data, _)) in results.iter().enumerate() {
        let v = verify(&tensors, data, payload.elements())?;
        worst = worst.max(v.max_error);
        bound = bound.max(v.bound);
        if let Some(i) = v.first_bad {
            ok = false;
            eprintln!("spotagg demo: worker {r}: element {i} is {} — outside the fixed-point bound", data[i]);
        }
    }
    let packets: u64 = results.iter().map(|(_, s)| s.packets_sent).sum();
    let retx: u64 = results.iter().map(|(_, s)| s.retransmissions).sum();
    let bps = m as f64 * 32.0 / seconds;
    let counters = hub.counters();
    println!(
        "all-reduce: {seconds:.3} s, {} of payload per worker ({} in total), {} into the switch, {packets} packets sent, {retx} retransmissions",
        si(bps, "b/s"),
        si(bps * n as f64, "b/s"),
        si(counters.contributions as f64 / seconds, "contributions/s"),
    );
    if let Some(c) = hub.cycles() {
        println!(
            "simulated hardware: {c} clock cycles, {}, {:.1} cycles per contribution",
            si(c as f64 / seconds, "cycles/s"),
            c as f64 / counters.contributions.max(1) as f64
        );
    }
    println!("verification: max error {worst:.3e}, largest bound {bound:.3e}: {}", if ok { "ok" } else { "WRONG" });
    println!("{} engine counters:", hub.engine_name());
    for (k, v) in counters.named() {
        println!("  {k:<22} {v}");
    }
    anyhow::ensure!(ok, "the all-reduce result is wrong");
    Ok(())
}
