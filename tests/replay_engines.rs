//! `spotagg replay --engine rtl` and `--engine verilator`: the same contract as the model engine,
//! checked against the independent spec-only traces (`tests/traces/make_traces.py`) frame for
//! frame and counter for counter; and `--vcd` writes a waveform GTKWave can load.

use spotagg_sim::pcap::read_pcap;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

fn traces() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/traces/make_traces.py"))
        .arg("--out")
        .arg(dir.path())
        .status()
        .expect("python3 runs tests/traces/make_traces.py");
    assert!(st.success());
    dir
}

fn replay(engine: &str, dir: &Path, name: &str, vcd: Option<&Path>) {
    let out = dir.join(format!("{name}.{engine}.pcap"));
    let mut cmd = Command::new(BIN);
    cmd.args(["replay", "--json", "--engine", engine, "--config"])
        .arg(dir.join(format!("{name}.toml")))
        .arg("--input")
        .arg(dir.join(format!("{name}.in.pcap")))
        .arg("--output")
        .arg(&out);
    if let Some(v) = vcd {
        cmd.arg("--vcd").arg(v);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{engine} {name}: {}", String::from_utf8_lossy(&o.stderr));
    let want = read_pcap(&dir.join(format!("{name}.expected.pcap"))).unwrap().frames;
    let got = read_pcap(&out).unwrap().frames;
    assert_eq!(want.len(), got.len(), "{engine} {name}: frame count");
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert_eq!(w.data, g.data, "{engine} {name}: frame {i}");
    }
    let counters: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.counters.json"))).unwrap()).unwrap();
    assert_eq!(counters, expected, "{engine} {name}: counters");
}

/// Scenarios small enough for the rust-hdl simulation (a few thousand cycles a second).
const RTL_SCENARIOS: &[&str] = &[
    "malformed",
    "arp",
    "ping",
    "duplicates",
    "n1",
    "n2",
    "wrap",
    "csum_alias",
    "vlan",
    "session",
    "switchml_ports",
    "switchml",
];

#[test]
fn rtl_engine_reproduces_the_independent_traces() {
    let dir = traces();
    for name in RTL_SCENARIOS {
        replay("rtl", dir.path(), name, None);
    }
}

#[test]
fn rtl_engine_writes_a_vcd() {
    let dir = traces();
    let vcd = dir.path().join("arp.vcd");
    replay("rtl", dir.path(), "arp", Some(&vcd));
    let text = std::fs::read_to_string(&vcd).unwrap();
    assert!(text.starts_with("$timescale"), "{}", &text[..80]);
    // The core's streams are interfaces: a scope each, with their signals inside.
    for signal in ["clock", "$scope module rx $end", "$scope module tx $end", "$enddefinitions"] {
        assert!(text.contains(signal), "no {signal} in the VCD");
    }
    assert!(text.lines().filter(|l| l.starts_with('#')).count() > 100, "too few time steps");
}

#[test]
fn verilator_engine_reproduces_the_independent_traces() {
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator) {
        return;
    }
    let dir = traces();
    for name in [
        "malformed",
        "arp",
        "ping",
        "duplicates",
        "n1",
        "n2",
        "n3",
        "n32",
        "p1024",
        "wrap",
        "mixed",
        "mixed1024",
        "fuzz",
        "csum_alias",
        "vlan",
        "vlan_mixed",
        "session",
        "switchml_ports",
        "switchml",
    ] {
        replay("verilator", dir.path(), name, None);
    }
    let vcd = dir.path().join("ping.vcd");
    replay("verilator", dir.path(), "ping", Some(&vcd));
    let text = std::fs::read_to_string(&vcd).unwrap();
    // Verilator names an interface's ports `rx$data`.
    assert!(text.contains("$enddefinitions") && text.contains(" rx$data "), "not a VCD of the core");
}
