//! `spotagg eaps` in a ring with an EAPS master that is not ours (issue 41): `scripts/eaps_interop.sh`
//! with this build's `spotagg`. Node n1 runs `scripts/eaps_master.py`, written from RFC 3619,
//! which sends its PDUs as Allied Telesis EPSR does (a null TLV after the EAPS TLV, EDP length
//! 84); n2, n3, n4 run `spotagg eaps` as transits. This test checks what the script reports:
//!
//! - the transits open on the master's RING-UP-FLUSH-FDB (they parse its PDUs);
//! - a link failure: the master's RING-DOWN flushes the transits and the pings flow again
//!   (within 60 s: the gap is printed, not bounded; docs/eaps.md §10 states the 50 ms target,
//!   and this is wall-clock time on a shared 2-core machine);
//! - the link's repair: RING-UP opens the restored ports, no broadcast probe loops;
//! - the silent master (Failed with its secondary open, stopped, the link repaired): the
//!   restored ports stay blocked for 8 pre-forwarding periods, 0 probes looped; when it speaks
//!   again RING-UP opens them;
//! - three malformed PDUs (bad checksum, truncated to 60 bytes, EAPS version 2) counted by
//!   reason at n2 and not forwarded to n3;
//! - tshark decodes n2's own LINK-DOWN: TLV types 11 and 0 (the null TLV), EDP length 84,
//!   checksum Good.
//!
//! Without namespaces (not root, no `ip`), or without tshark, the test fails with `NOT RUN:`
//! unless `SPOTAGG_SKIP_NETNS=1` (or `SPOTAGG_SKIP_TSHARK=1`) says that skipping is intended.

use spotagg_testkit::{require_tool, ring_script, Tool};

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

/// The value after `key` on the line `interop <phase> ...`.
fn field<'a>(run: &'a ring_script::RingRun, phase: &str, key: &str) -> &'a str {
    let line = run.lines_after(&format!("interop {phase} "));
    let w = line.first().unwrap_or_else(|| panic!("no `interop {phase}` line"));
    let i = w.iter().position(|x| *x == key).unwrap_or_else(|| panic!("no {key} in interop {phase}: {w:?}"));
    w[i + 1]
}

#[test]
fn eaps_ring_with_another_vendors_master() {
    if !require_tool(Tool::Netns) || !require_tool(Tool::Tshark) {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/eaps_interop.sh");
    let run = ring_script::run(BIN, script, 120, "eaps_interop: done");

    let up = run.lines_after("interop ring-up causes ");
    assert!(up[0].iter().all(|c| *c == "RingUpFlush"), "the transits did not open on RING-UP: {up:?}");

    let gap: u64 = field(&run, "link-down", "gap_ms").parse().unwrap();
    println!("eaps_interop: the pings flowed again {gap} ms after the link went down");
    // (The gap is printed, not bounded: wall-clock time on a shared machine. Without the
    // RING-DOWN flush the stream did not flow again for minutes, until the bridges' ageing.)
    assert_eq!(field(&run, "link-down", "flowed"), "1", "the stream did not recover after RING-DOWN");

    let up = run.lines_after("interop link-up ");
    let c = up[0].iter().position(|w| *w == "causes").unwrap();
    assert_eq!(&up[0][c + 1..c + 3], ["RingUpFlush", "RingUpFlush"], "RING-UP did not open the restored ports: {up:?}");
    assert_eq!(field(&run, "link-up", "looped"), "0");

    let silent = run.lines_after("interop silent states ");
    assert_eq!(&silent[0][..2], ["PreForwarding", "PreForwarding"], "{silent:?}");
    assert_eq!(&silent[0][3..5], ["False", "False"], "a restored port opened while the master was silent: {silent:?}");
    let looped: u64 = field(&run, "silent", "looped").parse().unwrap();
    println!("eaps_interop: silent master: {looped} probes looped");
    assert_eq!(looped, 0, "probes looped while the master was silent");
    let resumed = run.lines_after("interop silent-resumed causes ");
    assert!(resumed[0].iter().all(|c| *c == "RingUpFlush"), "{resumed:?}");

    for reason in ["checksum", "length", "version"] {
        assert_eq!(field(&run, "malformed", reason), "1", "n2's {reason} counter");
    }
    assert_eq!(field(&run, "malformed", "tlv"), "0");
    assert_eq!(field(&run, "malformed", "n3_malformed"), "0", "a malformed PDU reached n3");

    // count, EAPS type, TLV types, checksum status, EDP length
    let tshark = run.lines_after("interop tshark ");
    assert!(
        tshark.iter().any(|w| w.len() == 5 && w[1] == "8" && w[2] == "11,0" && w[3] == "1" && w[4] == "84"),
        "tshark did not decode n2's LINK-DOWN with the null TLV: {tshark:?}"
    );
}
