//! The generated Verilog: a snapshot of the default core, and Yosys `synth_ecp5` of every
//! block and of the core (no latches, no errors). Without `yosys` on PATH the Yosys tests fail
//! with `NOT RUN` (`spotagg_testkit::require_tool`) unless `SPOTAGG_SKIP_YOSYS=1`.
//!
//! Tiers: the plain tests synthesize the core once and the blocks that the board top of
//! `boards/tests/board_synth.rs` lacks (the inner loop); the `slow tier` ones synthesize
//! full-size and other-width cores (`scripts/test.sh` runs them); the `manual` ones measure what
//! blocks and optional features cost, for docs/performance.md and docs/eaps.md (run them by
//! name with `--ignored`; nothing else depends on them).

use spotagg_hdl::verilog::{block_verilogs, core_verilog, eaps_verilogs, synth_ecp5};
use spotagg_hdl::CoreConfig;

#[test]
fn generates_for_widths_1_4_8() {
    for w in [1, 4, 8] {
        let v = core_verilog(&CoreConfig::new(w, 4, 256, 32).unwrap());
        assert!(v.contains("module top("), "width {w}");
    }
}

#[test]
fn generation_is_deterministic() {
    let c = CoreConfig::default();
    assert_eq!(core_verilog(&c), core_verilog(&c));
}

#[test]
fn default_core_snapshot() {
    insta::assert_snapshot!("default_core", core_verilog(&CoreConfig::default()));
}

/// True when the synthesis checks must not run (yosys missing and SPOTAGG_SKIP_YOSYS=1); a
/// missing yosys without it fails the test.
fn skip() -> bool {
    !spotagg_testkit::require_tool(spotagg_testkit::Tool::Yosys)
}

/// The blocks that the fast tier's board top (`boards/tests/board_synth.rs`: a width-4 core with
/// the tree leaf, no straggler counters, and the EAPS node) does not hold: the straggler
/// counters and the width-1 and width-8 stream adapters. Every other block synthesizes inside
/// that board top, where a latch or an error would name it; `block_costs` prints each block's
/// cells for docs/performance.md.
#[test]
fn blocks_the_board_top_lacks_synthesize_for_ecp5() {
    if skip() {
        return;
    }
    for w in [1, 8] {
        let config = CoreConfig::new(w, 4, 256, 32).unwrap();
        let blocks = block_verilogs(&config).into_iter().filter(|(n, _)| n.ends_with("_width") || *n == "stragglers");
        for (name, v) in blocks.filter(|(n, _)| w == 1 || *n != "stragglers") {
            let u = synth_ecp5(&v).unwrap_or_else(|e| panic!("{name} width {w}: {e}"));
            println!("{name} width {w}: {u:?}");
        }
    }
}

/// Every block of the core on its own, at widths 1, 4 and 8 (the stream adapters): the cells of
/// each, for docs/performance.md ("Per block").
#[test]
#[ignore = "manual: every block's cells on its own (docs/performance.md)"]
fn block_costs() {
    if skip() {
        return;
    }
    let config = CoreConfig::new(1, 4, 256, 32).unwrap();
    for (name, v) in block_verilogs(&config) {
        match synth_ecp5(&v) {
            Ok(u) => println!("{name}: {u:?}"),
            Err(e) => panic!("{name}: {e}"),
        }
    }
    for w in [4, 8] {
        let config = CoreConfig::new(w, 4, 256, 32).unwrap();
        for (name, v) in block_verilogs(&config).into_iter().filter(|(n, _)| n.ends_with("_width")) {
            let u = synth_ecp5(&v).unwrap_or_else(|e| panic!("{name} width {w}: {e}"));
            println!("{name} width {w}: {u:?}");
        }
    }
}

#[test]
fn core_synthesizes_for_ecp5() {
    if skip() {
        return;
    }
    let config = CoreConfig::new(4, 4, 1024, 32).unwrap();
    let u = synth_ecp5(&core_verilog(&config)).unwrap_or_else(|e| panic!("{e}"));
    println!("core {config:?}: {u:?}");
    assert!(u.dp16kd >= 4 && u.lut4 > 0 && u.flip_flops > 0);
}

/// What the optional features cost in the core (the straggler counters, the tree leaf): two
/// more syntheses of the core, for the figures in docs/performance.md. Each feature's block
/// is synthesized on its own by `block_costs` (`blocks_the_board_top_lacks_synthesize_for_ecp5` in the fast tier), and the i9 builds of the
/// slow tier synthesize the core with both.
#[test]
#[ignore = "manual: what the straggler counters and the tree leaf cost in the core (docs/performance.md)"]
fn core_feature_costs() {
    if skip() {
        return;
    }
    let config = CoreConfig::new(4, 4, 1024, 32).unwrap();
    let u = synth_ecp5(&core_verilog(&config)).unwrap_or_else(|e| panic!("{e}"));
    let s = synth_ecp5(&core_verilog(&config.with_stragglers(true))).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "straggler counters: +{} LUT4, +{} FF, +{} DP16KD, +{} LUT RAM",
        s.lut4 as i64 - u.lut4 as i64,
        s.flip_flops as i64 - u.flip_flops as i64,
        s.dp16kd as i64 - u.dp16kd as i64,
        s.lut_ram as i64 - u.lut_ram as i64
    );
    assert!(s.flip_flops > u.flip_flops, "the straggler block is built: {s:?} against {u:?}");
    let t = synth_ecp5(&core_verilog(&config.with_tree(false))).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "tree leaf: +{} LUT4, +{} FF, +{} DP16KD, +{} LUT RAM, +{} CCU2C (without: {t:?})",
        u.lut4 as i64 - t.lut4 as i64,
        u.flip_flops as i64 - t.flip_flops as i64,
        u.dp16kd as i64 - t.dp16kd as i64,
        u.lut_ram as i64 - t.lut_ram as i64,
        u.ccu2c as i64 - t.ccu2c as i64
    );
    assert!(u.flip_flops > t.flip_flops, "the tree leaf is built: {u:?} against {t:?}");
}

/// The figure for the LFE5U-25F (56 DP16KD): the largest slot count fitting half the block
/// RAM at width 4. Slow (a minute of Yosys); run with `--ignored`.
#[test]
#[ignore = "slow tier: synthesis of the full-size core (scripts/test.sh runs it)"]
fn lfe5u_25f_half_bram_utilization() {
    if skip() {
        return;
    }
    let slots = spotagg_hdl::verilog::slots_fitting(56 / 2);
    let config = CoreConfig::new(4, slots, 1024, 32).unwrap();
    let u = spotagg_hdl::verilog::core_utilization(&config).unwrap();
    println!("LFE5U-25F, half the block RAM: {config:?}: {u:?}");
    assert!(u.dp16kd <= 28, "{u:?}");
}

/// The core at widths 1 and 8 (slow: run with `--ignored`).
#[test]
#[ignore = "slow tier: synthesis at widths 1 and 8 (scripts/test.sh runs it)"]
fn core_synthesizes_at_widths_1_and_8() {
    if skip() {
        return;
    }
    for w in [1, 8] {
        let config = CoreConfig::new(w, 4, 256, 32).unwrap();
        let u = synth_ecp5(&core_verilog(&config)).unwrap_or_else(|e| panic!("width {w}: {e}"));
        println!("core {config:?}: {u:?}");
    }
}

/// What the EAPS blocks cost: every block with the board's 2 domains, and the node and the VLAN
/// gate with 1 and 4 (docs/eaps.md §12). (The fast tier synthesizes the node and its blocks
/// inside the board top, `boards/tests/board_synth.rs`, which also checks that they take no
/// block RAM.)
#[test]
#[ignore = "manual: what the EAPS blocks cost with 1, 2 and 4 domains (docs/eaps.md)"]
fn eaps_domain_costs() {
    if skip() {
        return;
    }
    for d in [2, 1, 4] {
        let blocks =
            eaps_verilogs(d).into_iter().filter(|(n, _)| d == 2 || *n == "eaps_node" || *n == "eaps_vlan_gate");
        for (name, v) in blocks {
            let u = synth_ecp5(&v).unwrap_or_else(|e| panic!("{name} ({d} domains): {e}"));
            println!("{name} ({d} domains): {u:?}");
            assert_eq!(u.dp16kd, 0, "{name}: EAPS must not take a block RAM");
        }
    }
}
