//! `spotagg bench`: performance figures, measured in this run.
//!
//! 1. Float-to-fixed conversion (block exponents, quantization into a big-endian SwitchML
//!    payload, dequantization; the same in 16-bit lanes) in GB/s of f32 data, beside a plain
//!    memory copy of the same buffer, and their ratio.
//! 2. Engines in frames/s, fed 4-worker contribution frames: the reference switch by default,
//!    the simulated hardware with `--engines model,rtl[,verilator]` ([`bench_engines`]).
//! 3. A 4-worker all-reduce over UDP on loopback: `spotagg switch`'s serve loop and four
//!    worker threads on 127.0.0.20..23, in Gb/s of payload.
//! 4. The software switch alone (`--switch-alone` runs only this): datagrams/s and Gb/s of
//!    payload through `serve_threads` over loopback UDP, 1024 B payloads, against the load
//!    generator (`spotagg load-generator`) in another process, which plays 4 workers with
//!    preloaded contributions sent batched: plain `recv_from`/`send_to` on one thread, then
//!    batched I/O on T = 1 and 2 threads. Also the system calls per datagram and the switch
//!    process's CPU time per datagram.
//! 5. `--cluster N --rate MBIT`: only the emulated cluster, spotagg against Gloo
//!    (scripts/cluster_bench.sh, which needs root and a Python with torch).

use super::switch::{serve, ServeOptions};
use crate::engines::EngineKind;
use anyhow::{Context, Result};
use spotagg_driver::fixedpoint::{self, Scale};
use spotagg_driver::transport::UdpTransport;
use spotagg_driver::wire::frame;
use spotagg_driver::wire::switchml::PoolIndex;
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::{Engine, JobConfig, Worker};
use std::hint::black_box;
use std::net::UdpSocket;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `spotagg bench`.
#[derive(clap::Args)]
pub struct Args {
    /// Smaller sizes and fewer repetitions (a few seconds in all).
    #[arg(long)]
    quick: bool,
    /// Engines to measure in frames/s, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "model")]
    engines: Vec<EngineKind>,
    /// Also the simulated hardware: the core's cycles per contribution at widths 1 and 4 and
    /// the simulation speed of rust-hdl against Verilator (about a minute).
    #[arg(long)]
    hardware: bool,
    /// Only the switch-alone benchmark (section 4).
    #[arg(long)]
    switch_alone: bool,
    /// Seconds each switch-alone configuration is measured.
    #[arg(long, default_value_t = 2.0)]
    switch_seconds: f64,
    /// Only the emulated-cluster benchmark with N workers (scripts/cluster_bench.sh, as root):
    /// spotagg against Gloo on network namespaces with links shaped to --rate.
    #[arg(long, value_name = "N")]
    cluster: Option<u32>,
    /// Link rate of --cluster in Mb/s.
    #[arg(long, value_name = "MBIT", default_value_t = 100)]
    rate: u32,
    /// Tensor elements of --cluster (default 2.5 M at up to 100 Mb/s, 10 M above).
    #[arg(long)]
    elements: Option<u64>,
    /// Runs of each system for --cluster (the medians are printed).
    #[arg(long, default_value_t = 3)]
    runs: u32,
}

/// Best time of `reps` runs of `f`.
fn best(reps: usize, mut f: impl FnMut()) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn gbytes(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

fn bench_conversion(elements: usize, reps: usize) {
    let src = super::worker::tensor(1, 0, elements);
    let bytes = elements * 4;
    let mut copy = vec![0f32; elements];
    let mut ints = vec![0i32; elements];
    let mut payload = vec![0u8; bytes];
    let mut back = vec![0f32; elements];
    let scale = Scale::new(4, 4);
    let t_copy = best(reps, || {
        copy.copy_from_slice(black_box(&src));
        black_box(&mut copy);
    });
    let t_exp = best(reps, || {
        black_box(fixedpoint::exponents(black_box(&src), 256).unwrap());
    });
    let t_q = best(reps, || {
        fixedpoint::quantize(black_box(&src), &scale, &mut ints);
        black_box(&mut ints);
    });
    let t_qbe = best(reps, || {
        fixedpoint::quantize_be(black_box(&src), &scale, &mut payload);
        black_box(&mut payload);
    });
    let t_dq = best(reps, || {
        fixedpoint::dequantize_be(black_box(&payload), &scale, &mut back);
        black_box(&mut back);
    });
    // 16-bit lanes (docs/switch.md §9): half the payload bytes for the same f32 data.
    let scale16 = Scale::new16(4, 4);
    let mut payload16 = vec![0u8; bytes / 2];
    let t_exp16 = best(reps, || {
        black_box(fixedpoint::exponents(black_box(&src), 512).unwrap());
    });
    let t_q16 = best(reps, || {
        fixedpoint::quantize16_be(black_box(&src), &scale16, &mut payload16);
        black_box(&mut payload16);
    });
    let t_dq16 = best(reps, || {
        fixedpoint::dequantize16_be(black_box(&payload16), &scale16, &mut back);
        black_box(&mut back);
    });
    let mc = gbytes(bytes, t_copy);
    println!("float/fixed conversion, {} MB of f32 ({elements} elements), best of {reps}:", bytes / 1_000_000);
    println!("  {:<44} {:>8.2} GB/s", "memory copy (copy_from_slice)", mc);
    for (name, t) in [
        ("block exponents (max |x| per 256)", t_exp),
        ("quantize f32 -> i32 (native)", t_q),
        ("quantize f32 -> int32 BE payload", t_qbe),
        ("dequantize int32 BE payload -> f32", t_dq),
        ("block exponents (max |x| per 512, 16-bit)", t_exp16),
        ("quantize f32 -> int16 BE lanes", t_q16),
        ("dequantize int16 BE lanes -> f32", t_dq16),
    ] {
        let g = gbytes(bytes, t);
        println!("  {name:<44} {g:>8.2} GB/s  ({:.2} × memcpy)", g / mc);
    }
}

/// Contribution frames of `n` workers for `rounds` rounds of every slot (rounds alternate
/// sets, so that feeding the frames again and again keeps every frame a new contribution when
/// `rounds` is even).
fn contribution_frames(job: &JobConfig, rounds: usize) -> Vec<Vec<u8>> {
    let k = job.payload.elements();
    let mut frames = Vec::new();
    let switch = frame::Endpoint { mac: job.switch_mac, ip: job.switch_ip, port: job.switch_port };
    for round in 0..rounds {
        for slot in 0..job.slots {
            for (rank, w) in job.workers.iter().enumerate() {
                let tsi = (round * usize::from(job.slots) + usize::from(slot)) as u32;
                let pool = PoolIndex { slot, set: (round % 2) as u8 };
                let msg = job.contribution(pool, tsi, (0..k).map(|i| (i * (rank + 1) + round) as i32));
                let mut f = Vec::new();
                frame::encapsulate(
                    frame::Endpoint { mac: w.mac, ip: w.ip, port: job.worker_port },
                    switch,
                    &msg,
                    &mut f,
                );
                frames.push(f);
            }
        }
    }
    frames
}

/// Engines in frames/s: each engine of `kinds` is fed the same 4-worker contribution frames
/// (every one a new contribution) for about `budget`. The simulated hardware engines
/// (`--engines model,rtl,verilator`) are measured the same way as the reference switch: this
/// is where the HDL's figures appear.
fn bench_engines(kinds: &[EngineKind], budget: Duration) {
    println!("engines, fed 4-worker contribution frames (16 slots), about {:.1} s each:", budget.as_secs_f64());
    for &kind in kinds {
        for payload in [PayloadSize::B256, PayloadSize::B1024] {
            let job = JobConfig::example(4, payload, 16);
            let frames = contribution_frames(&job, 16);
            let name = format!("{kind:?}").to_lowercase();
            let mut engine = match kind.build(&job) {
                Ok(e) => e,
                Err(e) => {
                    println!("  {name:<9} unavailable: {e:#}");
                    break;
                }
            };
            let mut out = Vec::with_capacity(8);
            let mut fed = 0u64;
            let t = Instant::now();
            'feed: loop {
                for f in &frames {
                    out.clear();
                    engine.process(black_box(f), &mut out);
                    black_box(&out);
                    fed += 1;
                    if fed.is_multiple_of(16) && t.elapsed() >= budget {
                        break 'feed;
                    }
                }
            }
            let dt = t.elapsed().as_secs_f64();
            let c = engine.counters();
            assert_eq!(c.contributions, fed, "{name}: every bench frame must be a new contribution");
            println!(
                "  {name:<9} {:>4} B payload: {:>12.0} frames/s in ({:.0} frames/s out, {:.3} Gb/s of payload in)",
                payload.bytes(),
                fed as f64 / dt,
                c.frames_out as f64 / dt,
                fed as f64 * payload.bytes() as f64 * 8.0 / dt / 1e9
            );
        }
    }
    if kinds.len() == 1 {
        println!("  (the simulated hardware: spotagg bench --engines model,rtl)");
    }
}

fn bench_loopback(elements: usize) -> Result<()> {
    let n = 4;
    let job = spotagg_driver::transport::loopback_job(n, PayloadSize::B1024, 32, 20)?;
    let socket = UdpSocket::bind("127.0.0.1:0").context("binding the switch")?;
    spotagg_driver::transport::enlarge_buffers(&socket, spotagg_driver::transport::SOCKET_BUFFER);
    let switch_addr = socket.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let job = job.clone();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut engine = spotagg_spec::reference::RefSwitch::new(job.clone());
            serve(&socket, &job, &mut engine, &ServeOptions::default(), &stop).map(|st| (st, engine.counters()))
        })
    };
    let transports: Vec<UdpTransport> =
        (0..n).map(|r| UdpTransport::for_rank(&job, r, switch_addr)).collect::<std::io::Result<_>>()?;
    // Tensors made before the clock starts; the workers start together.
    let tensors: Vec<Vec<f32>> = (0..n).map(|r| super::worker::tensor(2, r, elements)).collect();
    let barrier = Arc::new(std::sync::Barrier::new(n + 1));
    let workers: Vec<_> = transports
        .into_iter()
        .zip(tensors)
        .enumerate()
        .map(|(r, (mut t, mut data))| {
            let job = job.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut w = Worker::new(job, r)?;
                barrier.wait();
                w.allreduce_f32(&mut t, &mut data)
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    let mut stats = Vec::new();
    for h in workers {
        stats.push(h.join().map_err(|_| anyhow::anyhow!("worker panicked"))??);
    }
    let wall = start.elapsed().as_secs_f64();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (_, counters) = server.join().map_err(|_| anyhow::anyhow!("switch panicked"))??;
    let per = elements as f64 * 32.0 / wall / 1e9;
    let retx: u64 = stats.iter().map(|s| s.retransmissions).sum();
    println!(
        "4-worker all-reduce over UDP loopback (reference switch, 1024 B payload, 32 slots, {elements} f32 elements):"
    );
    println!("  {wall:.3} s: {per:.3} Gb/s of payload per worker, {:.3} Gb/s in total; {retx} retransmissions, {} frames through the switch", per * n as f64, counters.frames_in);
    Ok(())
}

/// CPU seconds (user, system) of this process so far.
fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (tv(u.ru_utime), tv(u.ru_stime))
}

/// One switch-alone configuration: `threads` switch threads (batched I/O unless `plain`), the
/// load generator in a child process for `seconds`.
fn switch_alone_once(threads: u16, plain: bool, seconds: f64) -> Result<String> {
    let n = 4;
    let mut job = spotagg_driver::transport::loopback_job(n, PayloadSize::B1024, 64, 50)?;
    job.switch_ports = threads;
    let path = std::env::temp_dir().join(format!("spotagg-bench-{}-{threads}.toml", std::process::id()));
    std::fs::write(&path, job.to_toml()).with_context(|| format!("writing {}", path.display()))?;
    let sockets = super::switch::bind_ports("127.0.0.1:0".parse()?, threads)?;
    let base = sockets[0].local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let (job, stop) = (job.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut engines: Vec<Box<dyn Engine>> = (0..threads)
                .map(|_| Box::new(spotagg_spec::reference::RefSwitch::new(job.clone())) as Box<dyn Engine>)
                .collect();
            let opts = ServeOptions { plain_io: plain, ..ServeOptions::default() };
            spotagg_spec::udp_switch::serve_threads(&sockets, &job, &mut engines, &opts, &stop)
        })
    };
    let exe = std::env::current_exe().context("finding the spotagg executable")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["load-generator", "--config"]).arg(&path).args(["--switch", &base.to_string()]);
    cmd.args(["--seconds", &seconds.to_string()]);
    if plain {
        cmd.env("SPOTAGG_UDP_BATCH", "0");
    }
    let cpu0 = cpu_times();
    let out = cmd.output().context("running the load generator")?;
    let cpu1 = cpu_times();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let st = server.join().map_err(|_| anyhow::anyhow!("switch panicked"))??;
    let _ = std::fs::remove_file(&path);
    anyhow::ensure!(out.status.success(), "load generator failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).context("reading the load generator's JSON")?;
    let secs = v["seconds"].as_f64().unwrap_or(0.0);
    let results = v["results"].as_f64().unwrap_or(0.0);
    let rate = results / secs.max(1e-9);
    let (user, sys) = (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1);
    let cpu_ns = (user + sys) / (st.datagrams_in + st.datagrams_out).max(1) as f64 * 1e9;
    Ok(format!(
        "  {:<22} {:>10.0} datagrams/s in ({:>7.0} per thread), {:>10.0} out, {:>6.2} Gb/s payload in; per system call {:>5.1} in, {:>5.1} out; switch CPU {:.2} s user + {:.2} s system over both directions = {:.0} ns a datagram; stalled slots {}, resent {}, send drops switch {} / generator {}, misrouted {}",
        format!("{} T = {threads}", if plain { "plain," } else { "batched," }),
        rate,
        rate / f64::from(threads),
        rate,
        rate * 1024.0 * 8.0 / 1e9,
        st.datagrams_in as f64 / st.recv_calls.max(1) as f64,
        st.datagrams_out as f64 / st.send_calls.max(1) as f64,
        user,
        sys,
        cpu_ns,
        v["stalled_slots"],
        v["resent"],
        st.send_dropped,
        v["send_dropped"],
        st.misrouted,
    ))
}

/// Section 4: the software switch alone.
fn bench_switch_alone(seconds: f64) -> Result<()> {
    println!(
        "software switch alone over loopback UDP (reference switch, 4 workers played by a load generator in another process, 1024 B payload, 64 slots, {seconds} s each):"
    );
    for (threads, plain) in [(1, true), (1, false), (2, false)] {
        println!("{}", switch_alone_once(threads, plain, seconds)?);
    }
    Ok(())
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    if args.switch_alone {
        return bench_switch_alone(args.switch_seconds);
    }
    if let Some(n) = args.cluster {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster_bench.sh");
        let elements = args.elements.unwrap_or(if args.rate <= 100 { 2_500_000 } else { 10_000_000 });
        let exe = std::env::current_exe().context("finding the spotagg executable")?;
        let status = std::process::Command::new("bash")
            .arg(&script)
            .args([n.to_string(), args.rate.to_string(), elements.to_string(), args.runs.to_string()])
            .env("SPOTAGG_BIN", exe)
            .status()
            .with_context(|| format!("running {}", script.display()))?;
        anyhow::ensure!(status.success(), "{} failed ({status})", script.display());
        return Ok(());
    }
    let (elements, reps, loop_elements) = if args.quick { (1 << 20, 5, 1 << 18) } else { (1 << 22, 20, 1 << 21) };
    bench_conversion(elements, reps);
    bench_engines(&args.engines, Duration::from_millis(if args.quick { 300 } else { 1000 }));
    bench_loopback(loop_elements)?;
    bench_switch_alone(if args.quick { 0.5 } else { args.switch_seconds })?;
    if args.hardware {
        println!();
        print!("{}", spotagg_sim::rtl::bench_report());
        println!();
        match spotagg_sim::verilator_engine::sim_speed_report() {
            Ok(r) => print!("{r}"),
            Err(e) => println!("Verilator speed not measured: {e}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod test {
    #[test]
    fn bench_frames_are_new_contributions() {
        use spotagg_driver::Engine;
        let job = spotagg_driver::JobConfig::example(4, spotagg_driver::wire::PayloadSize::B256, 16);
        let frames = super::contribution_frames(&job, 4);
        let mut e = spotagg_spec::reference::RefSwitch::new(job);
        let mut out = Vec::new();
        for _ in 0..2 {
            for f in &frames {
                e.process(f, &mut out);
            }
        }
        assert_eq!(e.counters().contributions, 2 * frames.len() as u64);
        assert_eq!(out.len(), 2 * frames.len());
    }
}
