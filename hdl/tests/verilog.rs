//! The generated Verilog: a snapshot of the default core, and Yosys `synth_ecp5` of every
//! block and of the core (no latches, no errors). The Yosys tests print a message and pass
//! when `yosys` is not on PATH.

use spotagg_hdl::verilog::{block_verilogs, core_verilog, eaps_verilogs, synth_ecp5, SynthError};
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

#[test]
fn every_block_synthesizes_for_ecp5() {
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
    // The width-4 and width-8 stream adapters too.
    for w in [4, 8] {
        let config = CoreConfig::new(w, 4, 256, 32).unwrap();
        for (name, v) in block_verilogs(&config).into_iter().filter(|(n, _)| n.ends_with("_width")) {
            synth_ecp5(&v).unwrap_or_else(|e| panic!("{name} width {w}: {e}"));
        }
    }
}

#[test]
fn core_synthesizes_for_ecp5() {
    if skip() {
        return;
    }
    let config = CoreConfig::new(4, 4, 1024, 32).unwrap();
    match synth_ecp5(&core_verilog(&config)) {
        Ok(u) => {
            println!("core {config:?}: {u:?}");
            assert!(u.dp16kd >= 4 && u.lut4 > 0 && u.flip_flops > 0);
            // With the straggler counters: what they cost (no latch, no error).
            let s = synth_ecp5(&core_verilog(&config.with_stragglers(true))).unwrap_or_else(|e| panic!("{e}"));
            println!(
                "straggler counters: +{} LUT4, +{} FF, +{} DP16KD, +{} LUT RAM",
                s.lut4 as i64 - u.lut4 as i64,
                s.flip_flops as i64 - u.flip_flops as i64,
                s.dp16kd as i64 - u.dp16kd as i64,
                s.lut_ram as i64 - u.lut_ram as i64
            );
            assert!(s.flip_flops > u.flip_flops, "the straggler block is built: {s:?} against {u:?}");
            // Without the tree leaf (docs/switch.md §6): what it costs.
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
        Err(SynthError::NoYosys) => println!("yosys is not on PATH: skipped"),
        Err(e) => panic!("{e}"),
    }
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

/// The EAPS blocks synthesize (no latches, no block RAM) for 1, 2 and 4 domains; prints the
/// cells of each (what EAPS costs on the board: docs/eaps.md §9).
#[test]
fn eaps_blocks_synthesize_for_ecp5() {
    if skip() {
        return;
    }
    for d in [1, 2, 4] {
        for (name, v) in eaps_verilogs(d) {
            if d != 2 && name != "eaps_node" && name != "eaps_vlan_gate" {
                continue;
            }
            let u = synth_ecp5(&v).unwrap_or_else(|e| panic!("{name} ({d} domains): {e}"));
            println!("{name} ({d} domains): {u:?}");
            assert_eq!(u.dp16kd, 0, "{name}: EAPS must not take a block RAM (55 of 56 are in use)");
        }
    }
}
