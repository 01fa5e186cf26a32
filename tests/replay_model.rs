//! `spotagg replay --engine model` against traces made by an independent tool
//! (`tests/traces/make_traces.py`, written from the spec alone), frame for frame and counter
//! for counter; against the reference switch run in-process on seeded traces; and its errors.

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::Engine;
use spotagg_sim::pcap::{read_pcap, write_frames, PcapFrame};
use spotagg_sim::trace::{generate, TraceSpec};
use spotagg_spec::reference::RefSwitch;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

fn replay(config: &Path, input: &Path, output: &Path, json: bool) -> std::process::Output {
    let mut cmd = Command::new(BIN);
    cmd.args(["replay", "--engine", "model", "--config"])
        .arg(config)
        .arg("--input")
        .arg(input)
        .arg("--output")
        .arg(output);
    if json {
        cmd.arg("--json");
    }
    cmd.output().expect("run spotagg")
}

/// A hex dump of two frames, 16 bytes a line, with `^^` under every differing byte.
fn hex_diff(expected: &[u8], actual: &[u8]) -> String {
    let mut s = format!("expected {} bytes, got {} bytes\n", expected.len(), actual.len());
    let hex = |b: &[u8], i: usize| b.get(i).map_or("  ".to_string(), |x| format!("{x:02x}"));
    for line in (0..expected.len().max(actual.len())).step_by(16) {
        let end = (line + 16).min(expected.len().max(actual.len()));
        if (line..end).all(|i| expected.get(i) == actual.get(i)) {
            continue;
        }
        let e: Vec<String> = (line..end).map(|i| hex(expected, i)).collect();
        let a: Vec<String> = (line..end).map(|i| hex(actual, i)).collect();
        let m: Vec<&str> = (line..end).map(|i| if expected.get(i) == actual.get(i) { "  " } else { "^^" }).collect();
        s += &format!(
            "{line:04x} expected {}\n     actual   {}\n              {}\n",
            e.join(" "),
            a.join(" "),
            m.join(" ")
        );
    }
    s
}

/// Compares two frame sequences; `Err` describes the first difference.
fn compare_frames(expected: &[PcapFrame], actual: &[PcapFrame], check_time: bool) -> Result<(), String> {
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        if e.data != a.data {
            return Err(format!("frame {i} differs:\n{}", hex_diff(&e.data, &a.data)));
        }
        if check_time && e.timestamp != a.timestamp {
            return Err(format!("frame {i}: timestamp {:?} expected, {:?} written", e.timestamp, a.timestamp));
        }
    }
    if expected.len() != actual.len() {
        let i = expected.len().min(actual.len());
        let extra = if expected.len() > actual.len() { &expected[i] } else { &actual[i] };
        return Err(format!(
            "{} frames expected, {} written; first frame present on one side only (index {i}):\n{}",
            expected.len(),
            actual.len(),
            hex_diff(&extra.data, &[])
        ));
    }
    Ok(())
}

fn counters_of(stdout: &[u8]) -> serde_json::Map<String, serde_json::Value> {
    let text = String::from_utf8_lossy(stdout);
    match serde_json::from_str(text.trim()) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => panic!("stdout is not one JSON object: {text}"),
    }
}

/// Every scenario of the independent tool: same frames, same timestamps, same counters.
#[test]
fn reproduces_the_independent_traces() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tool = root.join("tests/traces/make_traces.py");
    assert!(tool.exists(), "{} is part of the tree and missing", tool.display());
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new("python3")
        .arg(&tool)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("NOT RUN: python3 cannot be run ({e}); install it: apt-get install python3"));
    assert!(made.status.success(), "{} failed:\n{}", tool.display(), String::from_utf8_lossy(&made.stderr));
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".toml").map(String::from))
        .collect();
    names.sort();
    assert!(names.len() >= 5, "only {names:?} made");
    let mut failures = Vec::new();
    for name in &names {
        let p = |suffix: &str| -> PathBuf { dir.path().join(format!("{name}{suffix}")) };
        let out = replay(&p(".toml"), &p(".in.pcap"), &p(".out.pcap"), true);
        if !out.status.success() {
            failures.push(format!("{name}: replay failed: {}", String::from_utf8_lossy(&out.stderr)));
            continue;
        }
        let expected = read_pcap(&p(".expected.pcap")).unwrap();
        let actual = read_pcap(&p(".out.pcap")).unwrap();
        if let Err(e) = compare_frames(&expected.frames, &actual.frames, true) {
            failures.push(format!("{name}: {e}"));
        }
        let want: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(p(".counters.json")).unwrap()).unwrap();
        let got = counters_of(&out.stdout);
        let keys: std::collections::BTreeSet<&String> = want.keys().chain(got.keys()).collect();
        for k in keys {
            if want.get(k) != got.get(k) {
                failures.push(format!("{name}: counter {k}: expected {:?}, got {:?}", want.get(k), got.get(k)));
            }
        }
        eprintln!("{name}: {} frames in, {} out", read_pcap(&p(".in.pcap")).unwrap().frames.len(), actual.frames.len());
    }
    assert!(failures.is_empty(), "{} disagreement(s):\n{}", failures.len(), failures.join("\n"));
}

/// The binary gives what the reference switch gives in-process, on seeded troubled traces.
#[test]
fn matches_the_reference_switch_in_process() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (n, payload, slots)) in
        [(1, PayloadSize::B256, 2), (4, PayloadSize::B1024, 4), (32, PayloadSize::B256, 3)].into_iter().enumerate()
    {
        let spec =
            TraceSpec { arp: 0.05, ping: 0.05, ..TraceSpec::new(n, payload, slots, 8, 100 + i as u64).troubled(0.15) };
        let t = generate(&spec);
        let (config, input, output) =
            (dir.path().join("job.toml"), dir.path().join("in.pcap"), dir.path().join("out.pcap"));
        std::fs::write(&config, t.job.to_toml()).unwrap();
        write_frames(&input, &t.frames).unwrap();
        let out = replay(&config, &input, &output, true);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

        let mut sw = RefSwitch::new(t.job.clone());
        let mut expected = Vec::new();
        for (j, f) in t.frames.iter().enumerate() {
            let mut emitted = Vec::new();
            sw.process(f, &mut emitted);
            expected
                .extend(emitted.into_iter().map(|data| PcapFrame { timestamp: Duration::from_micros(j as u64), data }));
        }
        compare_frames(&expected, &read_pcap(&output).unwrap().frames, true).unwrap();
        let got = counters_of(&out.stdout);
        let text = String::from_utf8_lossy(&out.stdout);
        let names: Vec<&str> = text.split('"').skip(1).step_by(2).collect();
        let want = sw.counters().named();
        // Keys in the order of Counters::named(), values equal.
        assert_eq!(names, want.iter().map(|(k, _)| *k).collect::<Vec<_>>());
        for (k, v) in want {
            assert_eq!(got[k], serde_json::json!(v), "{k}");
        }
        // The human table names every counter.
        let table = replay(&config, &input, &output, false);
        let table = String::from_utf8_lossy(&table.stdout);
        assert!(table.contains("frames_in") && table.contains("bad_slot"), "{table}");
    }
}

#[test]
fn refuses_other_link_types_and_names_files() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("job.toml");
    std::fs::write(&config, spotagg_driver::JobConfig::example(2, PayloadSize::B256, 4).to_toml()).unwrap();
    let raw = dir.path().join("raw-ip.pcap");
    let header = PcapHeader { datalink: DataLink::RAW, ..PcapHeader::default() };
    let mut w = PcapWriter::with_header(std::fs::File::create(&raw).unwrap(), header).unwrap();
    w.write_packet(&PcapPacket::new(Duration::ZERO, 20, &[0x45; 20])).unwrap();
    drop(w);
    let out = replay(&config, &raw, &dir.path().join("out.pcap"), false);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("raw-ip.pcap") && err.contains("link type 101"), "{err}");

    let out = replay(&config, &dir.path().join("absent.pcap"), &dir.path().join("out.pcap"), false);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("absent.pcap"));
    let out = replay(&dir.path().join("absent.toml"), &raw, &dir.path().join("out.pcap"), false);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("absent.toml"));
}
