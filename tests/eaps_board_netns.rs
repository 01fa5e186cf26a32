//! The simulated board as a node of a real EAPS ring in network namespaces:
//! `scripts/eaps_board_ring.sh` run with this build's `spotagg`. The board's own EAPS logic
//! (`spotagg tap --board-model --tap t0 --tap1 t1 --eaps RING.toml`: the switch fabric with its
//! MACs in Verilator, both ports on TAP devices, its link state from the veths' carrier) is a
//! transit of a ring of Linux bridge nodes run by `spotagg eaps` (n1 the master). This test
//! checks what the script reports:
//!
//! - each ring link taken down and brought back with `ip link`, from a Linux end and from the
//!   board's own end, and the board's process killed and restarted: no frame looped, and the
//!   pings flow again (the killed board's node is healed round by the master's fail timer);
//! - the board's transitions: Links-Down when its port 0 loses carrier, back to Links-Up on
//!   the master's RING-UP flush;
//! - tshark decodes the board's own LINK-DOWN on its port 1 link (source and system MAC the
//!   board's switch MAC, a good EDP checksum).
//!
//! Figures are printed, not asserted against targets (timing on a shared 2-core machine, with
//! the board in Verilator at about 230 k clocks/s). Without namespaces (not root, no `ip`), or
//! without tshark or Verilator, the test fails with `NOT RUN:` unless the matching
//! `SPOTAGG_SKIP_*` says that skipping is intended.

use spotagg_testkit::{require_tool, Tool};
use std::process::Command;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

fn field(words: &[&str], key: &str) -> u64 {
    let i = words.iter().position(|w| *w == key).unwrap_or_else(|| panic!("no {key} in {words:?}"));
    words[i + 1].parse().unwrap()
}

#[test]
fn the_board_model_as_a_transit_of_a_namespace_ring() {
    if !require_tool(Tool::Netns) || !require_tool(Tool::Tshark) || !require_tool(Tool::Verilator) {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/eaps_board_ring.sh");
    let t0 = Instant::now();
    let out = Command::new("timeout")
        // (The ring's events take about 2 minutes; the first start of the board model compiles
        // it with Verilator, up to 10 minutes on a loaded machine with nothing cached.)
        .args(["-k", "5", "1000", "bash", script])
        .env("SPOTAGG_BIN", BIN)
        .output()
        .expect("cannot run bash scripts/eaps_board_ring.sh");
    let secs = t0.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(out.status.success(), "scripts/eaps_board_ring.sh failed ({}) after {secs:.1} s", out.status);
    assert!(stdout.contains("eaps_board_ring: done"), "the script did not finish");
    println!("eaps_board_netns: the script took {secs:.1} s");

    let events: Vec<(String, u64, u64, u64, u64)> = stderr
        .lines()
        .filter(|l| l.starts_with("event "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[1].to_string(), field(&w, "lost"), field(&w, "flow_again_ms"), field(&w, "looped"), field(&w, "offered"))
        })
        .collect();
    assert_eq!(events.len(), 14, "expected 12 link events, the board killed and restarted: {events:?}");
    for (name, lost, flow_again_ms, looped, offered) in &events {
        assert!(*offered > 0, "{name}: no traffic offered");
        assert_eq!(*looped, 0, "{name}: {looped} frames looped");
        assert!(*flow_again_ms < 2000 && *lost < 100, "{name}: {lost} lost, flowing again after {flow_again_ms} ms");
    }
    let killed = events.iter().find(|e| e.0 == "board-killed").expect("the board-killed event");
    assert!(killed.1 > 0, "killing the board lost nothing: was the board on the pings' path?");

    assert!(
        stderr.contains("eaps ring1: Links-Up -> Links-Down (port 0 down)"),
        "the board did not go Links-Down on its port 0's carrier loss"
    );
    assert!(stderr.contains("(RING-UP-FLUSH-FDB)"), "the board never opened on a RING-UP flush");

    // count, source, VLAN, EAPS type, control VLAN, system MAC, checksum status
    let tshark: Vec<Vec<&str>> =
        stdout.lines().filter_map(|l| l.strip_prefix("tshark p3b:")).map(|l| l.split_whitespace().collect()).collect();
    let board = "02:78:00:00:00:64";
    assert!(
        tshark.iter().any(|w| w.len() == 7
            && w[1] == board
            && w[3] == "8"
            && w[4] == "10"
            && w[5] == board
            && w[6] == "1"),
        "tshark saw no LINK-DOWN from the board on control VLAN 10 with a good checksum: {tshark:?}"
    );
    assert!(tshark.iter().all(|w| w.len() == 7 && w[6] == "1"), "a PDU with a bad checksum: {tshark:?}");
}
