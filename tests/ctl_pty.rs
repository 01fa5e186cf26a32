//! The control link end to end through a real pseudo-terminal, against the MAC-level board
//! model: [`BoardLogic`] (both MAC ports, FIFOs, core, control link, MDIO master — everything of
//! the board top but the ECP5 primitives) in Verilator, its UART (8 clocks per bit, a
//! simulation-only divisor; the board uses 868 = 115200 baud at its 100 MHz core clock) moved bit by bit
//! between the pins and the master side of a pty pair by a simulation thread, two behavioural
//! PHYs answering its MDIO reads; the driver (`Control`) and the `spotagg ctl` binary on the
//! slave side.
//!
//! The board powers up with a ROM job that is not the test's (another switch MAC, n = 2); the
//! test reads it back, configures its own job over the link, and feeds a troubled trace (loss,
//! duplicates, malformed frames, ARP, pings) as Ethernet frames with preamble and FCS into the
//! GMII receive side of both ports (workers by rank parity), plus one frame with a bad FCS.
//! While the traffic runs it takes counter snapshots: each must equal the reference switch's
//! counters after some prefix of the frames the core took (in the order it took them), i.e.
//! be consistent. Afterwards the counters read by the driver and by
//! `spotagg ctl counters --json` equal the reference's for the same frames, the MAC counters
//! count what went in and out of each port, and the link state read over the link is the
//! PHYs'. A request with a corrupted CRC, a partial request and a misaddressed write are
//! answered with errors and change nothing.
//!
//! Without Verilator the test fails with a message, unless `SPOTAGG_SKIP_VERILATOR=1` says that
//! skipping it is intended.

use spotagg_boards::tops::board_logic::{board_logic_verilog_jobs, BoardLogic, ControlParams};
use spotagg_driver::control::protocol::{self, reg, Status};
use spotagg_driver::control::serialport::{SerialPort, TTYPort};
use spotagg_driver::control::{pack_version, Control, ControlError, CounterSnapshot, DESIGN_VERSION};
use spotagg_driver::wire::{MacAddr, PayloadSize};
use spotagg_driver::{Counters, Engine, JobConfig};
use spotagg_hdl::control_link::ControlIdentity;
use spotagg_hdl::mdio::MdioPhyModel;
use spotagg_hdl::rust_hdl::prelude::*;
use spotagg_hdl::uart::SerialModel;
use spotagg_hdl::CoreConfig;
use spotagg_sim::gmii::{self, padded, wrap as wire};
use spotagg_sim::trace::{generate, TraceSpec};
use spotagg_sim::verilator::{ports_of, BuildOptions, VerilatedModel};
use spotagg_sim::verilator_engine::WAIVERS;
use spotagg_spec::reference::RefSwitch;
use std::io::{Read, Write};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// UART clocks per bit in the simulation.
const DIV: u32 = 8;
/// MDC half period in the simulation.
const MDC_HALF: u32 = 4;
/// Cycles the simulation runs between looks at the pty (well inside the link's frame timeout
/// of 40 bit times, so a request split across pty reads is not cut).
const CHUNK: usize = 128;
/// Idle cycles between frames on a port (a 12-byte gap at least; more to spread the traffic
/// over several counter snapshots).
const GAP: usize = 600;

fn params() -> ControlParams {
    ControlParams {
        identity: ControlIdentity {
            board_id: 0x5a75,
            version: pack_version(DESIGN_VERSION),
            git_hash: 0x5eed_c0de,
            build_date_days: 20_000,
            baud_divisor: DIV,
        },
        mdc_half_period: MDC_HALF,
        eaps_time_div: spotagg_boards::tops::board_logic::EAPS_TIME_DIV,
        phy_addresses: [0, 1],
    }
}

/// What the board did with one batch of traffic.
struct Done {
    /// (port, index in that port's input) of each frame the core took, in order.
    merged: Vec<(usize, usize)>,
    /// Frames sent on each port (preamble and FCS checked and stripped).
    sent: [Vec<Vec<u8>>; 2],
}

enum Cmd {
    /// Wire bytes of each frame into each port; answered when everything is out and idle.
    Traffic([Vec<Vec<u8>>; 2], mpsc::Sender<Done>),
    Stop,
}

struct Pins {
    /// Core, transmit, both receive clocks and the EAPS node's, all from one clock.
    clocks: [u32; 5],
    start: u32,
    rxd: [u32; 2],
    rx_dv: [u32; 2],
    txd: [u32; 2],
    tx_en: [u32; 2],
    uart_rx: u32,
    uart_tx: u32,
    mdc: u32,
    mdio_o: u32,
    mdio_oe: u32,
    mdio_i: u32,
    core_idle: u32,
    merge_start: u32,
    merge_port: u32,
}

/// Decodes one port's GMII transmit bytes into frames.
#[derive(Default)]
struct TxDecoder {
    cur: Vec<u8>,
    frames: Vec<Vec<u8>>,
}

impl TxDecoder {
    fn clock(&mut self, en: bool, d: u8) {
        if en {
            self.cur.push(d);
        } else if !self.cur.is_empty() {
            let w = std::mem::take(&mut self.cur);
            let f = gmii::unwrap(&w).unwrap_or_else(|e| panic!("a sent frame: {e}"));
            self.frames.push(f.to_vec());
        }
    }
}

/// The simulated board: runs until `Cmd::Stop`.
fn board(mut m: VerilatedModel, mut pty: TTYPort, cmds: mpsc::Receiver<Cmd>, mut phys: [MdioPhyModel; 2]) {
    let p = |n: &str| m.port(n);
    let id = Pins {
        clocks: [p("core_clock"), p("tx_clock"), p("eth$0$rx_clock"), p("eth$1$rx_clock"), p("eaps_clock")],
        start: p("start"),
        rxd: [p("eth$0$rxd"), p("eth$1$rxd")],
        rx_dv: [p("eth$0$rx_dv"), p("eth$1$rx_dv")],
        txd: [p("eth$0$txd"), p("eth$1$txd")],
        tx_en: [p("eth$0$tx_en"), p("eth$1$tx_en")],
        uart_rx: p("uart_rx"),
        uart_tx: p("uart_tx"),
        mdc: p("mdc"),
        mdio_o: p("mdio_o"),
        mdio_oe: p("mdio_oe"),
        mdio_i: p("mdio_i"),
        core_idle: p("status$core_idle"),
        merge_start: p("status$merge_start"),
        merge_port: p("status$merge_port"),
    };
    m.set(id.start, 1);
    m.set(id.uart_rx, 1);
    m.set(id.mdio_i, 1);
    m.eval();
    pty.set_timeout(Duration::ZERO).unwrap();
    let mut line = SerialModel::new(DIV);
    let mut streams: [Vec<(bool, u8)>; 2] = [vec![], vec![]];
    let mut t = 0usize;
    let mut dec = [TxDecoder::default(), TxDecoder::default()];
    let mut merged = vec![];
    let mut counts = [0usize; 2];
    let mut reply: Option<mpsc::Sender<Done>> = None;
    let mut quiet = 0usize;
    let mut bus = true;
    let mut buf = [0u8; 1024];
    loop {
        while let Ok(c) = cmds.try_recv() {
            match c {
                Cmd::Traffic(frames, r) => {
                    for (s, fs) in streams.iter_mut().zip(frames) {
                        s.clear();
                        for w in fs {
                            s.extend(w.iter().map(|&x| (true, x)));
                            s.extend(std::iter::repeat_n((false, 0), GAP));
                        }
                    }
                    t = 0;
                    merged.clear();
                    counts = [0, 0];
                    dec = [TxDecoder::default(), TxDecoder::default()];
                    quiet = 0;
                    reply = Some(r);
                }
                Cmd::Stop => return,
            }
        }
        let mut got_input = false;
        if let Ok(n) = pty.read(&mut buf) {
            if n > 0 {
                line.send(&buf[..n]);
                got_input = true;
            }
        }
        let mut out = vec![];
        let traffic = reply.is_some();
        for _ in 0..CHUNK {
            m.set(id.uart_rx, u64::from(line.drive()));
            for (p, stream) in streams.iter().enumerate() {
                let (dv, d) = if traffic { stream.get(t).cloned().unwrap_or((false, 0)) } else { (false, 0) };
                m.set(id.rx_dv[p], u64::from(dv));
                m.set(id.rxd[p], u64::from(d));
            }
            m.eval();
            // MDIO: the master, two PHYs and the pull-up on one wire.
            let mdc = m.get(id.mdc) != 0;
            let master = (m.get(id.mdio_oe) != 0).then(|| m.get(id.mdio_o) != 0);
            let mut level = master.unwrap_or(true);
            for phy in phys.iter_mut() {
                if let Some(d) = phy.step(mdc, bus) {
                    level &= d;
                }
            }
            bus = level;
            m.set(id.mdio_i, u64::from(bus));
            let mut active = false;
            for (p, d) in dec.iter_mut().enumerate() {
                let en = m.get(id.tx_en[p]) != 0;
                active |= en;
                d.clock(en, m.get(id.txd[p]) as u8);
            }
            if m.get(id.merge_start) != 0 {
                let p = m.get(id.merge_port) as usize;
                merged.push((p, counts[p]));
                counts[p] += 1;
            }
            if let Some(b) = line.sample(m.get(id.uart_tx) != 0) {
                out.push(b);
            }
            if traffic {
                let fed = t >= streams[0].len().max(streams[1].len());
                quiet = if fed && !active && m.get(id.core_idle) != 0 { quiet + 1 } else { 0 };
            }
            for c in id.clocks {
                m.set(c, 1);
            }
            m.eval();
            for c in id.clocks {
                m.set(c, 0);
            }
            m.eval();
            t += 1;
        }
        if !out.is_empty() {
            let _ = pty.write_all(&out);
        }
        if quiet > 2000 {
            if let Some(r) = reply.take() {
                let [d0, d1] = std::mem::take(&mut dec);
                let _ = r.send(Done { merged: std::mem::take(&mut merged), sent: [d0.frames, d1.frames] });
            }
            quiet = 0;
        }
        if !got_input && out.is_empty() && !line.sending() && !line.receiving() && reply.is_none() {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

fn build_model(core: CoreConfig, rom_job: &JobConfig) -> VerilatedModel {
    build_model_jobs::<1>(core, rom_job)
}

/// The board logic with `J` cores (docs/switch.md §8), `rom_job` in the first one's ROM.
fn build_model_jobs<const J: usize>(core: CoreConfig, rom_job: &JobConfig) -> VerilatedModel {
    let rom = std::slice::from_ref(rom_job);
    let mut uut = BoardLogic::<J>::with_jobs(core, rom, params());
    uut.connect_all();
    let ports = ports_of(&uut);
    let verilog = board_logic_verilog_jobs::<J>(core, rom, params());
    let opts = BuildOptions {
        trace: false,
        config: Some(format!("{WAIVERS}lint_off -rule UNOPTFLAT -file \"*top.v\"\n")),
        extra_args: vec!["-Wno-fatal".into()],
    };
    VerilatedModel::build(&verilog, &ports, &opts).expect("Verilator build of the board logic")
}

fn ctl(slave: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_spotagg"))
        .args(["ctl", "--serial", slave, "--timeout-ms", "5000"])
        .args(args)
        .output()
        .expect("run spotagg ctl");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// `GET /metrics` from `addr`: the body.
fn scrape(addr: &str) -> String {
    let mut c = std::net::TcpStream::connect(addr).expect("connect to the exporter");
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut r = String::new();
    c.read_to_string(&mut r).unwrap();
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    r.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

/// The port of a worker's MAC: rank parity; other sources by their MAC's last bit.
fn port_of(job: &JobConfig, mac: &[u8]) -> usize {
    job.workers.iter().position(|w| w.mac.0 == mac).map(|r| r % 2).unwrap_or((mac[5] & 1) as usize)
}

#[test]
fn control_link_through_a_pty() {
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator) {
        return;
    }
    let core = CoreConfig::new(4, 8, 256, 32).unwrap().with_stragglers(true);
    let trace = generate(&TraceSpec::new(4, PayloadSize::B256, 8, 24, 11).troubled(0.1));
    let job = trace.job.clone();
    let mut rom_job = JobConfig::example(2, PayloadSize::B256, 4);
    rom_job.switch_mac = MacAddr([0x02, 0x00, 0x5a, 0x00, 0x00, 0x77]);
    rom_job.worker_port = 0xbee5;
    rom_job.job_number = 7;
    assert_ne!(rom_job.switch_mac, job.switch_mac);
    // The test's job must replace the ROM's worker port, or its traffic is dropped.
    assert_ne!((rom_job.worker_port, rom_job.job_number), (job.worker_port, job.job_number));

    let t0 = Instant::now();
    let model = build_model(core, &rom_job);
    let built = t0.elapsed();
    let mut phys = [MdioPhyModel::new(0), MdioPhyModel::new(1)];
    phys[0].set_link(Some(1000));
    phys[1].set_link(Some(100));
    let (master, mut slave) = TTYPort::pair().expect("pty pair");
    let slave_name = slave.name().expect("pty slave name");
    let (cmd_tx, cmd_rx) = mpsc::channel();
    let sim = std::thread::spawn(move || board(model, master, cmd_rx, phys));
    let t1 = Instant::now();

    // The CLI: identity.
    let (ok, out, err) = ctl(&slave_name, &["id", "--json"]);
    assert!(ok, "spotagg ctl id failed: {err}");
    let id = json(&out);
    assert_eq!(id["board"], "colorlight-5a-75b-v8");
    assert_eq!((id["width_bytes"].clone(), id["slots"].clone()), (4.into(), 8.into()));
    assert_eq!((id["max_payload"].clone(), id["max_workers"].clone()), (256.into(), 32.into()));
    assert_eq!(id["git_hash"], 0x5eed_c0de_u32);
    assert_eq!(id["baud_divisor"], DIV);
    assert_eq!(id["counter_registers"], reg::BOARD_COUNTER_COUNT);

    // The ROM job, read back; the PHYs' link state over MDIO.
    // A board of one job has no job select: --job is refused, naming the register.
    let (ok, _, err) = ctl(&slave_name, &["--job", "1", "counters"]);
    assert!(!ok && err.contains("built for one job") && err.contains("0x010f"), "{err}");
    let (ok, out, err) = ctl(&slave_name, &["status", "--json"]);
    assert!(ok, "{err}");
    let st = json(&out);
    assert_eq!(st["job_enabled"], true);
    assert_eq!(st["job_registers"][1], u32::from_be_bytes([0x5a, 0x00, 0x00, 0x77]));
    assert_eq!(st["job_registers"][3], 2);
    assert_eq!((st["worker_port"].clone(), st["job_number"].clone()), (0xbee5.into(), 7.into()));
    assert_eq!(st["link_state"], serde_json::json!([4, 3, 0, 0]), "port 0 up 1G, port 1 up 100M");
    let (ok, out, _) = ctl(&slave_name, &["status"]);
    assert!(ok && out.contains("port 0 link    up 1G") && out.contains("port 1 link    up 100M"), "{out}");

    // The CLI: configure the test's job at run time, then status.
    let dir = tempfile::tempdir().unwrap();
    let job_path = dir.path().join("job.toml");
    std::fs::write(&job_path, job.to_toml()).unwrap();
    let (ok, out, err) = ctl(&slave_name, &["configure", job_path.to_str().unwrap()]);
    assert!(ok, "spotagg ctl configure failed: {err}");
    assert!(out.contains("n = 4"), "{out}");
    let (ok, out, err) = ctl(&slave_name, &["status", "--json"]);
    assert!(ok, "{err}");
    let st = json(&out);
    assert_eq!(st["job_enabled"], true);
    assert_eq!(st["slots_in_use"], 8);
    assert_eq!(st["job_registers"][2], u32::from(job.switch_ip));
    assert_eq!(st["job_registers"][3], 4);
    assert_eq!(st["worker_port"], job.worker_port);
    assert_eq!(st["job_number"], job.job_number);
    let (ok, out, _) = ctl(&slave_name, &["status"]);
    assert!(ok && out.contains(&format!("worker port    {}", job.worker_port)), "{out}");

    // Traffic into both ports as Ethernet frames; one extra copy of a frame with a bad FCS.
    let sw = job.switch_mac.0;
    let mut frames: [Vec<Vec<u8>>; 2] = [vec![], vec![]];
    for f in &trace.frames {
        frames[port_of(&job, &f[6..12])].push(padded(f));
    }
    let mut inputs: [Vec<Vec<u8>>; 2] = [0, 1].map(|p| frames[p].iter().map(|f| wire(f)).collect());
    let mut bad = wire(&frames[0][0]);
    let n = bad.len();
    bad[n - 1] ^= 0x40;
    inputs[0].insert(1, bad);
    let mut c = Control::open(&mut slave, Duration::from_secs(5)).expect("open control link");
    let (done_tx, done_rx) = mpsc::channel();
    cmd_tx.send(Cmd::Traffic(inputs.clone(), done_tx)).unwrap();
    let mut snapshots: Vec<CounterSnapshot> = vec![];
    let done = loop {
        if let Ok(d) = done_rx.try_recv() {
            break d;
        }
        assert!(t1.elapsed() < Duration::from_secs(600), "traffic through the board did not finish");
        snapshots.push(c.snapshot().expect("snapshot during traffic"));
    };

    // The reference switch over the frames the core took, in the order it took them.
    let to_core = |f: &[u8]| f[0..6] == sw || f[0] & 1 == 1;
    let core_frames: [Vec<Vec<u8>>; 2] = [0, 1].map(|p| frames[p].iter().filter(|f| to_core(f)).cloned().collect());
    assert_eq!(done.merged.len(), core_frames[0].len() + core_frames[1].len(), "frames taken by the core");
    let mut reference = RefSwitch::new(job.clone());
    let mut ref_out = vec![];
    let mut prefixes: Vec<Counters> = vec![reference.counters()];
    for &(p, i) in &done.merged {
        reference.process(&core_frames[p][i], &mut ref_out);
        prefixes.push(reference.counters());
    }
    let want = reference.counters();
    assert!(want.dropped_total() > 0 && want.duplicates > 0, "the trace should be troubled: {want:?}");
    let from_switch: usize = done.sent.iter().flatten().filter(|f| f[6..12] == sw).count();
    assert_eq!(from_switch, ref_out.len(), "frames sent by the switch");

    // Every snapshot taken during the traffic is the reference's state after some prefix.
    let mut mid = 0;
    for (i, s) in snapshots.iter().enumerate() {
        assert!(s.quiescent, "snapshot {i} not quiescent");
        let k = prefixes.iter().position(|p| *p == s.core);
        assert!(k.is_some(), "snapshot {i} is no prefix of the reference: {:?}", s.core);
        if s.core.frames_in > 0 && s.core.frames_in < want.frames_in {
            mid += 1;
        }
    }
    assert!(mid >= 1, "no snapshot during the traffic ({} snapshots)", snapshots.len());

    // The driver: counters equal the reference's; MAC counters count each port's frames.
    let snap = c.snapshot().unwrap();
    assert_eq!(snap.core, want, "counters over the control link");
    assert!(snap.quiescent);
    for (p, pc) in snap.ports.iter().enumerate() {
        assert_eq!(pc.good, frames[p].len() as u64, "port {p} good frames");
        assert_eq!(pc.bad_fcs, u64::from(p == 0), "port {p} bad FCS");
        assert_eq!((pc.runts, pc.giants, pc.overflow), (0, 0, 0), "port {p}");
        assert_eq!(pc.sent, done.sent[p].len() as u64, "port {p} frames sent");
    }

    // Bad requests change nothing.
    let before_job = c.read(reg::SWITCH_MAC_HI, 7).unwrap();
    let mut bad = protocol::write_request(reg::WORKERS, &[7]);
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    assert_eq!(c.transact_raw(&bad, "corrupted write").unwrap().status, Status::BadChecksum);
    let mut flipped = protocol::write_request(reg::WORKERS, &[7]);
    flipped[7] ^= 0x01; // a data bit: the CRC no longer matches
    assert_eq!(c.transact_raw(&flipped, "flipped write").unwrap().status, Status::BadChecksum);
    let partial = &protocol::write_request(reg::WORKERS, &[7])[..6];
    assert_eq!(c.transact_raw(partial, "partial write").unwrap().status, Status::Timeout);
    match c.write(reg::MAGIC, &[0]) {
        Err(ControlError::Status { status: Status::UnknownRegister, .. }) => {}
        other => panic!("write to identity: {other:?}"),
    }
    assert_eq!(c.read(reg::SWITCH_MAC_HI, 7).unwrap(), before_job, "job registers unchanged");
    assert_eq!(c.counters().unwrap(), want, "counters unchanged");
    // `c` is not used again: the CLI opens the slave by name from here on.

    // The CLI: counters as JSON equal the reference's; then reset (the core's, not the MACs').
    let (ok, out, err) = ctl(&slave_name, &["counters", "--json"]);
    assert!(ok, "{err}");
    let k = json(&out);
    for (name, v) in want.named() {
        assert_eq!(k[name], v, "counter {name} from spotagg ctl");
    }
    assert_eq!(k["ports"][0]["bad_fcs"], 1);
    assert_eq!(k["quiescent"], true);
    // The tree counters (0x0218..=0x021B; the job has no parent) and the unknown pairs (one job).
    let t = reference.tree_counters();
    let tree = [t.partials_up, t.partials_resent, t.parent_results, t.parent_results_stale];
    assert_eq!(k["tree"], serde_json::json!(tree), "{out}");
    assert_eq!(k["unknown_source_job"], 0, "{out}");
    let (ok, out, _) = ctl(&slave_name, &["counters"]);
    assert!(ok && out.contains("frames_in") && out.contains(&want.frames_in.to_string()), "{out}");
    assert!(out.contains("port 0: good"), "{out}");
    // The Prometheus exporter: one scrape, parsed with a Prometheus text parser, carries the same
    // counters, the MAC ports' and the link state; then the exporter is stopped.
    let mut exporter = Command::new(env!("CARGO_BIN_EXE_spotagg"))
        .args(["ctl", "--serial", &slave_name, "metrics", "--listen", "127.0.0.1:0", "--every", "0.2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run spotagg ctl metrics");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(exporter.stdout.take().unwrap()), &mut line).unwrap();
    let addr = line.split("http://").nth(1).and_then(|r| r.split('/').next()).unwrap_or_else(|| {
        let _ = exporter.kill();
        panic!("no address in {line:?}")
    });
    let text = scrape(addr);
    exporter.kill().unwrap();
    let _ = exporter.wait();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("exposition");
    let value = |name: &str, label: Option<(&str, &str)>| -> f64 {
        let hit =
            scrape.samples.iter().find(|x| x.metric == name && label.is_none_or(|(k, v)| x.labels.get(k) == Some(v)));
        match hit.map(|x| &x.value) {
            Some(prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v)) => *v,
            other => panic!("{name} {label:?}: {other:?} in\n{text}"),
        }
    };
    for (name, v) in want.named() {
        if let Some(reason) = spotagg_driver::DropReason::ALL.iter().find(|r| r.name() == name) {
            assert_eq!(value("spotagg_switch_dropped_total", Some(("reason", reason.name()))), v as f64, "{name}");
        } else {
            assert_eq!(value(&format!("spotagg_switch_{name}_total"), None), v as f64, "{name}\n{text}");
        }
    }
    for (p, pc) in snap.ports.iter().enumerate() {
        let port = p.to_string();
        let got = scrape.samples.iter().find(|x| {
            x.metric == "spotagg_board_port_received_total"
                && x.labels.get("port") == Some(&port)
                && x.labels.get("outcome") == Some("good")
        });
        assert!(
            matches!(got.map(|x| &x.value), Some(prometheus_parse::Value::Counter(v)) if *v == pc.good as f64),
            "port {p} good frames in\n{text}"
        );
        assert_eq!(value("spotagg_board_link_up", Some(("port", &port))), 1.0, "port {p} link\n{text}");
    }
    assert_eq!(value("spotagg_ctl_up", None), 1.0);
    assert_eq!(value("spotagg_switch_tree_partials_up_total", None), t.partials_up as f64);
    assert_eq!(value("spotagg_switch_tree_parent_results_stale_total", None), t.parent_results_stale as f64);
    assert_eq!(value("spotagg_switch_unknown_source_job_total", None), 0.0);
    assert_eq!(value("spotagg_board_job_enabled", None), 1.0);
    // The core's straggler counters over the link: which rank completed each round is the
    // reference's over the same frames in the same order; the lags (cycles at the clock the
    // identity's baud divisor gives at the link's baud rate, the reference has no clock here)
    // are positive exactly for a rank that was last.
    let lags = reference.stragglers();
    assert_eq!(lags.len(), job.n());
    let mut rounds = 0.0;
    for (r, want) in lags.iter().enumerate() {
        let rank = r.to_string();
        let last = value("spotagg_switch_straggler_rounds_last_total", Some(("rank", &rank)));
        let total = value("spotagg_switch_straggler_behind_microseconds_total", Some(("rank", &rank)));
        let max = value("spotagg_switch_straggler_behind_microseconds_max", Some(("rank", &rank)));
        assert_eq!(last, want.rounds_last as f64, "rank {r} rounds last\n{text}");
        assert!(max <= total && (total > 0.0) == (last > 0.0), "rank {r}: lag total {total} max {max} µs");
        rounds += last;
    }
    assert!(rounds >= 8.0, "{rounds} rounds completed");

    let (ok, _, err) = ctl(&slave_name, &["reset-counters"]);
    assert!(ok, "{err}");
    let (ok, out, _) = ctl(&slave_name, &["counters", "--json"]);
    assert!(ok);
    let k = json(&out);
    for (name, _) in want.named() {
        assert_eq!(k[name], 0, "counter {name} after reset-counters: {out}");
    }
    assert_eq!(k["ports"][0]["good"], frames[0].len(), "MAC counters are not reset");

    // EAPS (docs/eaps.md §12): before configuration no domain exists.
    let (ok, out, err) = ctl(&slave_name, &["eaps", "status", "--json"]);
    assert!(ok, "{err}");
    let st = json(&out);
    assert_eq!((st[0]["active"].clone(), st[0]["state"].clone()), (false.into(), "Idle".into()), "{out}");
    // A ring file of the Linux daemon's format with the board's port names: a master domain
    // (primary port 0) and a transit domain; both PHYs report a link.
    let dir = tempfile::tempdir().unwrap();
    let ring = dir.path().join("ring.toml");
    let text = "bridge = \"board\"\n\
        [[domain]]\nname = \"a\"\nrole = \"master\"\nprimary = \"eth0\"\nsecondary = \"eth1\"\n\
        control_vlan = 4000\nprotected_vlans = [100, 101, 102]\nhello_ms = 1000\nfail_ms = 3000\n\
        [[domain]]\nname = \"b\"\nrole = \"transit\"\nprimary = \"1\"\nsecondary = \"0\"\n\
        control_vlan = 4001\nprotected_vlans = [200]\n";
    std::fs::write(&ring, text.replace("eth1", "r1")).unwrap();
    let (ok, _, err) = ctl(&slave_name, &["eaps", "configure", ring.to_str().unwrap()]);
    assert!(!ok && err.contains("ring.toml: domain[0].secondary = \"r1\""), "{err}");
    std::fs::write(&ring, text).unwrap();
    let (ok, out, err) = ctl(&slave_name, &["eaps", "configure", ring.to_str().unwrap()]);
    assert!(ok, "spotagg ctl eaps configure failed: {err}");
    assert!(out.contains("domain a (master): control VLAN 4000, protected 100..=102"), "{out}");
    let (ok, out, err) = ctl(&slave_name, &["eaps", "status", "--json"]);
    assert!(ok, "{err}");
    let st = json(&out);
    // The master: Init, its HEALTH sent, the secondary blocked; the transit: both ports up
    // and waiting as after a link up (Pre-Forwarding, both blocked; docs/eaps.md §6.11).
    let a = &st[0];
    assert_eq!(
        (a["active"].clone(), a["master"].clone(), a["primary_port"].clone()),
        (true.into(), true.into(), 0.into()),
        "{out}"
    );
    assert_eq!(a["state"], "Init", "{out}");
    assert_eq!(a["forwarding"], serde_json::json!([true, false]), "{out}");
    assert!(a["tx"].as_u64().unwrap() >= 1, "{out}");
    assert_eq!(a["transition_cause"], "enabled", "{out}");
    let b = &st[1];
    assert_eq!(
        (b["active"].clone(), b["master"].clone(), b["primary_port"].clone()),
        (true.into(), false.into(), 1.into()),
        "{out}"
    );
    assert_eq!(b["state"], "Pre-Forwarding", "{out}");
    assert_eq!(b["forwarding"], serde_json::json!([false, false]), "{out}");
    let (ok, out, err) = ctl(&slave_name, &["eaps", "status"]);
    assert!(
        ok && out.contains("domain 0       master (primary port 0), Init, port 0 forwarding, port 1 blocking"),
        "{out}{err}"
    );
    eprintln!("ctl_pty: eaps status after configure:\n{out}");

    controller_configures_the_board(&slave_name);

    cmd_tx.send(Cmd::Stop).unwrap();
    sim.join().unwrap();
    eprintln!(
        "ctl_pty: Verilator build {:.1} s, link session {:.1} s, {} frames ({} to the core, {} sent by the switch), \
         {} snapshots during the traffic ({mid} mid-traffic), counters {:?}",
        built.as_secs_f64(),
        t1.elapsed().as_secs_f64(),
        trace.frames.len() + 1,
        done.merged.len(),
        from_switch,
        snapshots.len(),
        want.named()
    );
}

/// `spotagg ctl serve --controller` (docs/controller.md §1) on the simulated board: two workers
/// register (the Rust client, from 127.0.0.80 and .81, as SwitchML's sequence runs); when the
/// second has, the board's core holds their job (read back over the link once the controller is
/// stopped): n = 2, the core's payload and all its slots, SwitchML's worker ports 4000..4016,
/// zero checksums taken, enabled. A size the core was not built for is refused by name.
fn controller_configures_the_board(slave: &str) {
    use std::io::BufRead;
    let mut serve = Command::new(env!("CARGO_BIN_EXE_spotagg"))
        .args(["ctl", "--serial", slave, "--timeout-ms", "5000", "serve", "--controller", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run spotagg ctl serve");
    let mut first = String::new();
    std::io::BufReader::new(serve.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let addr = first
        .strip_prefix("spotagg ctl serve: controller on ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no controller address in {first:?}"))
        .to_string();
    assert!(first.contains("1 core(s) of 8 slots, 256 B payload"), "{first}");
    let reg = |rank: u32, payload| spotagg_controller::client::Registration {
        controller: addr.clone(),
        token: None,
        rank,
        num_workers: 2,
        ip: std::net::Ipv4Addr::new(127, 0, 0, 80 + rank as u8),
        mac: MacAddr([0x02, 0, 0x7f, 0, 0, 80 + rank as u8]),
        payload,
        worker_port: None,
        lanes16: false,
        timeout: Duration::from_secs(30),
        scope: 0x7e57,
    };
    let e = spotagg_controller::client::register(&spotagg_controller::client::Registration {
        num_workers: 1,
        ..reg(0, PayloadSize::B1024)
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("packet_size = Mtu1024: this switch serves 256 B payloads"), "{e}");
    let r1 = reg(1, PayloadSize::B256);
    let one = std::thread::spawn(move || spotagg_controller::client::register(&r1));
    let job0 = spotagg_controller::client::register(&reg(0, PayloadSize::B256)).expect("rank 0 registers");
    let job1 = one.join().unwrap().expect("rank 1 registers");
    assert_eq!(job0, job1);
    let _ = serve.kill();
    let _ = serve.wait();
    let mut log = String::new();
    serve.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert!(log.contains("core 0: job_number 1, 2 workers, 256 B payload, written and enabled"), "{log}");
    let (ok, out, err) = ctl(slave, &["status", "--json"]);
    assert!(ok, "{err}");
    let st = json(&out);
    let regs: Vec<u64> = st["job_registers"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(&regs[3..6], &[2, 1, 8], "n, size code, S: {out}");
    assert_eq!(st["job_enabled"], true, "{out}");
    assert_eq!((st["worker_port"].clone(), st["worker_ports"].clone()), (4000.into(), 16.into()), "{out}");
    assert_eq!(st["job_number"], 1, "{out}");
    assert_eq!((job0.worker_port, job0.worker_ports, job0.slots, job0.zero_ip_checksum), (4000, 16, 8, true));
}

/// Without a board: a missing port and a silent one are clear errors within the timeout, not
/// hangs (no Verilator needed).
#[test]
fn ctl_errors_without_a_board() {
    let (ok, _, err) = ctl("/dev/spotagg-no-such-port", &["id"]);
    assert!(!ok && err.contains("cannot open serial port /dev/spotagg-no-such-port"), "{err}");
    let (_master, slave) = TTYPort::pair().expect("pty pair");
    let name = slave.name().unwrap();
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_spotagg"))
        .args(["ctl", "--serial", &name, "--timeout-ms", "300", "counters"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no response"), "{err}");
    // A hang, not a figure: the 300 ms timeout ends it, however loaded the machine.
    assert!(t.elapsed() < Duration::from_secs(60), "took {:?}", t.elapsed());
    // The exporter: a silent board is an error naming the port (before anything is served); a
    // bad period is refused.
    let out = Command::new(env!("CARGO_BIN_EXE_spotagg"))
        .args(["ctl", "--serial", &name, "--timeout-ms", "300", "metrics", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(&format!("control link on {name}: no response")), "{err}");
    assert!(out.stdout.is_empty(), "nothing served: {:?}", String::from_utf8_lossy(&out.stdout));
    let (ok, _, err) = ctl(&name, &["metrics", "--listen", "127.0.0.1:0", "--every", "0"]);
    assert!(!ok && err.contains("--every 0: the poll period must be between 0.05 and 3600 seconds"), "{err}");
}

/// Two jobs on one board over the control link (docs/switch.md §8): the board logic with two
/// cores (`BoardLogic::<2>`) powers up with one ROM job; `spotagg ctl configure --jobs` writes a
/// switch file of two jobs (their own workers, ports, payload sizes and slots); two seeded
/// traces with loss and duplication, interleaved, with frames of unknown (source, job) pairs,
/// go into port 0; every frame the switch sends is the reference `MultiSwitch`'s, and
/// `spotagg ctl --job J counters --json` gives each job's counters, equal to the reference's,
/// with the unknown pairs counted once, for the switch.
#[test]
fn two_jobs_configured_and_counted_over_the_control_link() {
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator) {
        return;
    }
    // Two cores' worth of Verilog generation: a thread with room for it.
    std::thread::Builder::new().stack_size(256 << 20).spawn(two_jobs_run).unwrap().join().unwrap();
}

fn two_jobs_run() {
    use spotagg_spec::multi_job::MultiSwitch;
    let core = CoreConfig::new(4, 4, 1024, 32).unwrap().with_stragglers(true);
    let lossy = |s: TraceSpec| TraceSpec { loss: 0.05, duplication: 0.05, ..s };
    let a = lossy(TraceSpec::new(3, PayloadSize::B256, 4, 8, 21));
    let b = lossy(TraceSpec::new(2, PayloadSize::B1024, 2, 6, 22)).other_job(0xBEE1, 50);
    let t = spotagg_sim::trace::two_jobs(&a, &b, 23);
    let mut rom_job = JobConfig::example(2, PayloadSize::B256, 4);
    rom_job.worker_port = 0xbee5;
    let model = build_model_jobs::<2>(core, &rom_job);
    let phys = [MdioPhyModel::new(0), MdioPhyModel::new(1)];
    let (master, mut slave) = TTYPort::pair().expect("pty pair");
    let slave_name = slave.name().expect("pty slave name");
    let (cmd_tx, cmd_rx) = mpsc::channel();
    let sim = std::thread::spawn(move || board(model, master, cmd_rx, phys));

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.toml"), t.a.job.to_toml()).unwrap();
    std::fs::write(dir.path().join("b.toml"), t.b.job.to_toml()).unwrap();
    let switch = dir.path().join("switch.toml");
    std::fs::write(
        &switch,
        "[[job]]\nconfig = \"a.toml\"\nslot_base = 0\n\n[[job]]\nconfig = \"b.toml\"\nslot_base = 4\n",
    )
    .unwrap();
    let (ok, out, err) = ctl(&slave_name, &["configure", "--jobs", switch.to_str().unwrap()]);
    assert!(ok, "spotagg ctl configure --jobs failed: {err}");
    assert!(out.contains("configured job 1: n = 2, S = 2, payload 1024 bytes"), "{out}");
    let mut model = MultiSwitch::load(&switch).unwrap();

    let inputs: [Vec<Vec<u8>>; 2] = [t.frames.iter().map(|f| wire(&padded(f))).collect(), vec![]];
    let (done_tx, done_rx) = mpsc::channel();
    cmd_tx.send(Cmd::Traffic(inputs, done_tx)).unwrap();
    let done = done_rx.recv_timeout(Duration::from_secs(600)).expect("traffic through the board");
    assert_eq!(done.merged.len(), t.frames.len(), "frames taken by the cores");
    let mut want = vec![];
    for f in &t.frames {
        model.process(f, &mut want);
    }
    let sw = t.a.job.switch_mac.0;
    let sent: Vec<&Vec<u8>> = done.sent[0].iter().filter(|f| f[6..12] == sw).collect();
    let want: Vec<Vec<u8>> = want.iter().map(|f| padded(f)).collect();
    assert_eq!(sent.len(), want.len(), "frames sent by the switch");
    for (i, (g, w)) in sent.iter().zip(&want).enumerate() {
        assert_eq!(*g, w, "frame {i} sent by the switch");
    }
    for j in 0..2 {
        let (ok, out, err) = ctl(&slave_name, &["--job", &j.to_string(), "counters", "--json"]);
        assert!(ok, "{err}");
        let got = json(&out);
        for (name, v) in model.job(j).counters().named() {
            assert_eq!(got[name], v, "job {j}'s {name}: {out}");
        }
        assert_eq!(got["unknown_source_job"], t.unknown as u64, "{out}");
    }
    let c0 = model.job(0).counters();
    assert_eq!((c0.contributions, model.job(1).counters().contributions), (24, 12));
    // Job 0 is selected again after --job 1: a plain read is job 0's.
    let mut c = Control::open(&mut slave, Duration::from_secs(5)).expect("open control link");
    assert_eq!(c.snapshot().unwrap().core, c0);
    println!(
        "two jobs over the control link: {} frames ({} unknown pairs), {} sent, job 0 {:?}",
        t.frames.len(),
        t.unknown,
        sent.len(),
        c0
    );
    cmd_tx.send(Cmd::Stop).unwrap();
    sim.join().unwrap();
}
