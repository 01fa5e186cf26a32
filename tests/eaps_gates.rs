//! Per-VLAN gates of `spotagg eaps` (docs/eaps.md §9.1, issue 41): `scripts/eaps_gates.sh` with
//! this build's `spotagg`. One node runs two master domains on the same two ring ports (d1
//! protects VLANs 100-199 with primary ra, d2 200-299 with primary rb); the rest of the ring
//! counts, per port, the broadcast frames of VLANs 150, 250, 300 and untagged that a host sends
//! 20 of each into the node. This test checks:
//!
//! - both domains Complete: VLAN 150 leaves only by ra, 250 only by rb (each domain's secondary
//!   drops its own VLANs and no other), 300 (no domain's) by both, untagged by neither (both
//!   ports are blocked by some domain);
//! - ra's link down: every frame leaves by rb (d1 opened its secondary), untagged too;
//! - back up: the counts of the complete ring;
//! - the table is the daemon's: there while it runs, gone after SIGTERM, still there after
//!   SIGKILL (the node keeps blocking what it blocked), replaced by a restart, gone after its
//!   SIGTERM;
//! - the status says `blocking.mode` "vlan" and each port's blocked VLANs;
//! - without `nft` on its PATH the daemon blocks whole ports (both ports, each blocked by one
//!   domain, out of the bridge: nothing leaves) and its status says so and why.
//!
//! Without namespaces or nftables the test fails with `NOT RUN:` unless `SPOTAGG_SKIP_NETNS=1`.

use spotagg_testkit::{require_tool, ring_script, Tool};

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

/// The counts on the line `gates <phase> wa150 N ...`, as (name, count) pairs.
fn counts(run: &ring_script::RingRun, phase: &str) -> Vec<(String, u64)> {
    let lines = run.lines_after(&format!("gates {phase} "));
    let w = lines.first().unwrap_or_else(|| panic!("no `gates {phase}` line"));
    w.chunks(2).map(|c| (c[0].to_string(), c[1].parse().unwrap())).collect()
}

/// The counts a phase must show: 20 frames on each named (port, VLAN), 0 elsewhere.
fn want(sent: &[&str]) -> Vec<(String, u64)> {
    ["wa150", "wa250", "wa300", "wa0", "wb150", "wb250", "wb300", "wb0"]
        .iter()
        .map(|k| (k.to_string(), if sent.contains(k) { 20 } else { 0 }))
        .collect()
}

#[test]
fn each_domain_blocks_only_its_own_vlans() {
    if !require_tool(Tool::Netns) {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/eaps_gates.sh");
    let run = ring_script::run(BIN, script, 120, "eaps_gates: done");

    let complete = want(&["wa150", "wa300", "wb250", "wb300"]);
    assert_eq!(counts(&run, "complete"), complete, "the gates of the complete ring");
    assert_eq!(counts(&run, "a-down"), want(&["wb150", "wb250", "wb300", "wb0"]), "ra down: all by rb");
    assert_eq!(counts(&run, "a-up"), complete, "ra back up");
    assert_eq!(counts(&run, "restarted"), complete, "after SIGKILL and a restart");

    let status = run.lines_after("gates status mode ");
    assert_eq!(status[0], ["vlan", "ra", "200-299", "True", "rb", "100-199", "True"], "{status:?}");
    let table = |when: &str| run.lines_after(&format!("gates table {when} "))[0][0].to_string();
    assert_eq!(table("running"), "1", "no table while the daemon runs");
    assert_eq!(table("after-sigterm"), "0", "SIGTERM left the table");
    assert_eq!(table("after-sigkill"), "1", "SIGKILL: the table should stay as it was");
    assert_eq!(table("after-restart-sigterm"), "0", "the restarted daemon left the table");

    let no_nft = run.lines_after("gates no-nft mode ");
    assert_eq!(no_nft[0][0], "port", "{no_nft:?}");
    assert!(no_nft[0].join(" ").contains("running nft"), "the status does not say why: {no_nft:?}");
    let w = &run.lines_after("gates no-nft-table ")[0];
    assert_eq!(w[0], "0", "a table without nft: {w:?}");
    let whole: Vec<(String, u64)> = w[2..].chunks(2).map(|c| (c[0].to_string(), c[1].parse().unwrap())).collect();
    assert_eq!(whole, want(&[]), "whole ports: both blocked, nothing should leave");
}
