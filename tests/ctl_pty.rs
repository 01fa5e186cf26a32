//! The control link end to end through a real pseudo-terminal: the core with its control link
//! (the generated Verilog in Verilator, UART at 8 clocks per bit) on the master side of a pty
//! pair, moved bit by bit between the pty and the UART pins by a simulation thread; the
//! driver (`Control`) and the `spotagg ctl` binary on the slave side.
//!
//! The test configures a job over the link, runs a troubled trace (loss, duplicates, malformed
//! frames, ARP, pings) into the core's receive stream, and checks that the counters read over
//! the link — by the driver and by `spotagg ctl counters --json` — equal the reference switch's
//! for the same frames. A request with a corrupted CRC, a partial request and a misaddressed
//! write are answered with errors and change nothing.
//!
//! Without Verilator the test fails with a message, unless `SPOTAGG_SKIP_VERILATOR=1` says that
//! skipping it is intended.

use spotagg_driver::control::protocol::{self, reg, Status};
use spotagg_driver::control::serialport::{SerialPort, TTYPort};
use spotagg_driver::control::{pack_version, Control, ControlError, DESIGN_VERSION};
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::Engine;
use spotagg_hdl::control_link::ControlIdentity;
use spotagg_hdl::core_with_control::{core_with_control_verilog, CoreWithControl};
use spotagg_hdl::rust_hdl::prelude::*;
use spotagg_hdl::uart::SerialModel;
use spotagg_sim::reference::RefSwitch;
use spotagg_sim::trace::{generate, TraceSpec};
use spotagg_sim::verilator::{ports_of, verilator_available, BuildOptions, VerilatedModel};
use spotagg_sim::verilator_engine::{shared_core, WAIVERS};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// UART clocks per bit in the simulation.
const DIV: u32 = 8;
const WIDTH: usize = 4;

fn identity() -> ControlIdentity {
    ControlIdentity {
        board_id: 0,
        version: pack_version(DESIGN_VERSION),
        git_hash: 0x5eed_c0de,
        build_date_days: 20_000,
        baud_divisor: DIV,
    }
}

enum Cmd {
    /// Frames into the receive stream; the count of frames emitted is sent back when the core
    /// is idle again.
    Traffic(Vec<Vec<u8>>, mpsc::Sender<usize>),
    Stop,
}

/// The simulated board: runs until `Cmd::Stop`.
fn board(mut m: VerilatedModel, mut pty: TTYPort, cmds: mpsc::Receiver<Cmd>) {
    let p = |m: &VerilatedModel, n: &str| m.port(n);
    let (clock, rx_valid, rx_data, rx_last, rx_bytes, rx_ready) = (
        p(&m, "clock"),
        p(&m, "rx_valid"),
        p(&m, "rx_data"),
        p(&m, "rx_last"),
        p(&m, "rx_bytes"),
        p(&m, "rx_ready"),
    );
    let (tx_valid, tx_last, tx_ready, uart_rx, uart_tx, idle) = (
        p(&m, "tx_valid"),
        p(&m, "tx_last"),
        p(&m, "tx_ready"),
        p(&m, "uart_rx"),
        p(&m, "uart_tx"),
        p(&m, "idle"),
    );
    m.set(tx_ready, 1);
    m.set(uart_rx, 1);
    m.eval();
    pty.set_timeout(Duration::ZERO).unwrap();
    let mut line = SerialModel::new(DIV);
    let mut frames: VecDeque<Vec<u8>> = VecDeque::new();
    let mut beat = 0usize;
    let mut emitted = 0usize;
    let mut reply: Option<mpsc::Sender<usize>> = None;
    let mut buf = [0u8; 1024];
    loop {
        while let Ok(c) = cmds.try_recv() {
            match c {
                Cmd::Traffic(f, r) => {
                    frames.extend(f);
                    emitted = 0;
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
        // Run until nothing has moved for two byte times (well inside the link's frame
        // timeout, so a request split across pty reads is not cut), or a few cycles when idle.
        let mut quiet = 0u32;
        let limit = if got_input || !frames.is_empty() || reply.is_some() {
            20 * DIV
        } else {
            64
        };
        let mut out = vec![];
        let mut core_idle = false;
        while quiet < limit {
            m.set(uart_rx, u64::from(line.drive()));
            let (valid, data, last, bytes) = match frames.front() {
                Some(f) => {
                    let start = beat * WIDTH;
                    let end = (start + WIDTH).min(f.len());
                    let mut d = 0u64;
                    for i in 0..WIDTH {
                        d = (d << 8) | u64::from(*f.get(start + i).filter(|_| start + i < end).unwrap_or(&0));
                    }
                    (true, d, end == f.len(), (end - start.min(end)) as u64)
                }
                None => (false, 0, false, 0),
            };
            m.set(rx_valid, u64::from(valid));
            m.set(rx_data, data);
            m.set(rx_last, u64::from(last));
            m.set(rx_bytes, bytes);
            m.eval();
            let mut moved = line.sending() || line.receiving();
            if valid && m.get(rx_ready) != 0 {
                moved = true;
                if last {
                    frames.pop_front();
                    beat = 0;
                } else {
                    beat += 1;
                }
            }
            if m.get(tx_valid) != 0 {
                moved = true;
                if m.get(tx_last) != 0 {
                    emitted += 1;
                }
            }
            core_idle = m.get(idle) != 0;
            if !core_idle {
                moved = true;
            }
            if let Some(b) = line.sample(m.get(uart_tx) != 0) {
                out.push(b);
                moved = true;
            }
            m.tick(clock);
            quiet = if moved { 0 } else { quiet + 1 };
        }
        if !out.is_empty() {
            let _ = pty.write_all(&out);
        }
        if frames.is_empty() && core_idle {
            if let Some(r) = reply.take() {
                let _ = r.send(emitted);
            }
        }
        if !got_input && out.is_empty() {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// The core's own UNOPTFLAT waivers ([`WAIVERS`]) name signals under `top.`; in the wrapper
/// the core is `top.core`. The control link's counter port is one more such false loop: the
/// link's single always block drives `counter_address` and reads the core's combinational
/// `counter_data` back (no real loop: the address does not depend on the data).
const WRAPPER_WAIVERS: &str = "
lint_off -rule UNOPTFLAT -file \"*top.v\" -match \"*top.core.scoreboard$is_new*\"
lint_off -rule UNOPTFLAT -file \"*top.v\" -match \"*top.core.lane_adders$exp_out*\"
lint_off -rule UNOPTFLAT -file \"*top.v\" -match \"*top.core.tx$word_ready*\"
lint_off -rule UNOPTFLAT -file \"*top.v\" -match \"*top.link$counter_address*\"
";

fn build_model() -> VerilatedModel {
    let core = shared_core(WIDTH).unwrap();
    let mut uut = CoreWithControl::<32>::new(core, identity());
    uut.connect_all();
    let ports = ports_of(&uut);
    let verilog = core_with_control_verilog(&core, identity());
    let opts = BuildOptions {
        trace: false,
        config: Some(format!("{WAIVERS}{WRAPPER_WAIVERS}")),
        extra_args: vec![],
    };
    VerilatedModel::build(&verilog, &ports, &opts).expect("Verilator build of the core with control link")
}

fn ctl(slave: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_spotagg"))
        .args(["ctl", "--serial", slave, "--timeout-ms", "3000"])
        .args(args)
        .output()
        .expect("run spotagg ctl");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

#[test]
fn control_link_through_a_pty() {
    if !verilator_available() {
        eprintln!("NOT RUN: verilator is not installed (apt-get install verilator)");
        assert!(
            std::env::var_os("SPOTAGG_SKIP_VERILATOR").is_some(),
            "verilator is missing: install it or set SPOTAGG_SKIP_VERILATOR=1"
        );
        return;
    }
    let t0 = Instant::now();
    let model = build_model();
    let built = t0.elapsed();
    let (master, mut slave) = TTYPort::pair().expect("pty pair");
    let slave_name = slave.name().expect("pty slave name");
    let (cmd_tx, cmd_rx) = mpsc::channel();
    let sim = std::thread::spawn(move || board(model, master, cmd_rx));
    let t1 = Instant::now();

    // The CLI: identity.
    let (ok, out, err) = ctl(&slave_name, &["id", "--json"]);
    assert!(ok, "spotagg ctl id failed: {err}");
    let id = json(&out);
    assert_eq!(id["width_bytes"], 4);
    assert_eq!(id["slots"], 64);
    assert_eq!(id["max_payload"], 1024);
    assert_eq!(id["max_workers"], 32);
    assert_eq!(id["git_hash"], 0x5eed_c0de_u32);
    assert_eq!(id["baud_divisor"], DIV);
    let (ok, out, _) = ctl(&slave_name, &["id"]);
    assert!(
        ok && out.contains("design version 1.0.0") && out.contains("2024-10-04"),
        "{out}"
    );

    // The CLI: configure a job from its TOML, then status.
    let trace = generate(&TraceSpec::new(4, PayloadSize::B256, 8, 24, 11).troubled(0.1));
    let dir = tempfile::tempdir().unwrap();
    let job_path = dir.path().join("job.toml");
    std::fs::write(&job_path, trace.job.to_toml()).unwrap();
    let (ok, out, err) = ctl(&slave_name, &["configure", job_path.to_str().unwrap()]);
    assert!(ok, "spotagg ctl configure failed: {err}");
    assert!(out.contains("n = 4"), "{out}");
    let (ok, out, err) = ctl(&slave_name, &["status", "--json"]);
    assert!(ok, "{err}");
    let st = json(&out);
    assert_eq!(st["job_enabled"], true);
    assert_eq!(st["slots_in_use"], 8);
    assert_eq!(st["job_registers"][2], u32::from(trace.job.switch_ip));
    assert_eq!(st["job_registers"][3], 4);
    assert_eq!(st["link_state"], serde_json::json!([0, 0, 0, 0]));

    // Traffic into the core, and the same frames into the reference switch.
    let (done_tx, done_rx) = mpsc::channel();
    cmd_tx.send(Cmd::Traffic(trace.frames.clone(), done_tx)).unwrap();
    let emitted = done_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("traffic through the core");
    let mut reference = RefSwitch::new(trace.job.clone());
    let mut ref_out = vec![];
    for f in &trace.frames {
        reference.process(f, &mut ref_out);
    }
    let want = reference.counters();
    assert_eq!(emitted, ref_out.len(), "frames emitted");
    assert!(
        want.dropped_total() > 0 && want.duplicates > 0,
        "the trace should be troubled: {want:?}"
    );

    // The driver: counters equal the reference's.
    let mut c = Control::open(&mut slave, Duration::from_secs(3)).expect("open control link");
    let got = c.counters().unwrap();
    assert_eq!(got, want, "counters over the control link");

    // Bad requests change nothing.
    let before_job = c.read(reg::SWITCH_MAC_HI, 7).unwrap();
    let mut bad = protocol::write_request(reg::WORKERS, &[7]);
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    let r = c.transact_raw(&bad, "corrupted write").unwrap();
    assert_eq!(r.status, Status::BadChecksum);
    let mut flipped = protocol::write_request(reg::WORKERS, &[7]);
    flipped[7] ^= 0x01; // a data bit: the CRC no longer matches
    assert_eq!(
        c.transact_raw(&flipped, "flipped write").unwrap().status,
        Status::BadChecksum
    );
    let partial = &protocol::write_request(reg::WORKERS, &[7])[..6];
    assert_eq!(
        c.transact_raw(partial, "partial write").unwrap().status,
        Status::Timeout
    );
    match c.write(reg::MAGIC, &[0]) {
        Err(ControlError::Status {
            status: Status::UnknownRegister,
            ..
        }) => {}
        other => panic!("write to identity: {other:?}"),
    }
    assert_eq!(
        c.read(reg::SWITCH_MAC_HI, 7).unwrap(),
        before_job,
        "job registers unchanged"
    );
    assert_eq!(c.counters().unwrap(), want, "counters unchanged");
    // `c` is not used again: the CLI opens the slave by name from here on.

    // The CLI: counters as JSON equal the reference's; then reset.
    let (ok, out, err) = ctl(&slave_name, &["counters", "--json"]);
    assert!(ok, "{err}");
    let k = json(&out);
    for (name, v) in want.named() {
        assert_eq!(k[name], v, "counter {name} from spotagg ctl");
    }
    let (ok, out, _) = ctl(&slave_name, &["counters"]);
    assert!(
        ok && out.contains("frames_in") && out.contains(&want.frames_in.to_string()),
        "{out}"
    );
    let (ok, _, err) = ctl(&slave_name, &["reset-counters"]);
    assert!(ok, "{err}");
    let (ok, out, _) = ctl(&slave_name, &["counters", "--json"]);
    assert!(ok);
    let k = json(&out);
    for (name, _) in want.named() {
        assert_eq!(k[name], 0, "counter {name} after reset-counters: {out}");
    }
    assert_eq!(k["quiescent"], true, "{out}");

    cmd_tx.send(Cmd::Stop).unwrap();
    sim.join().unwrap();
    eprintln!(
        "ctl_pty: Verilator build {:.1} s, link session {:.1} s, {} frames ({} emitted), counters {:?}",
        built.as_secs_f64(),
        t1.elapsed().as_secs_f64(),
        trace.frames.len(),
        emitted,
        want.named()
    );
}

/// Without a board: a missing port and a silent one are clear errors within the timeout, not
/// hangs (no Verilator needed).
#[test]
fn ctl_errors_without_a_board() {
    let (ok, _, err) = ctl("/dev/spotagg-no-such-port", &["id"]);
    assert!(
        !ok && err.contains("cannot open serial port /dev/spotagg-no-such-port"),
        "{err}"
    );
    let (_master, slave) = TTYPort::pair().expect("pty pair");
    let name = slave.name().unwrap();
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_spotagg"))
        .args(["ctl", "--serial", &name, "--timeout-ms", "300", "counters"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no response"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
}
