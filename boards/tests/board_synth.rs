//! Yosys `synth_ecp5` of the whole board top (the ECP5 primitives are cells of Yosys's ECP5
//! library, so they stay black boxes): no error, no latch; prints the utilization.

use spotagg_boards::tops::top::board_verilog;
use spotagg_boards::tops::top::EapsBuild;
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::JobConfig;
use spotagg_hdl::verilog::{synth_ecp5, Utilization};
use spotagg_hdl::CoreConfig;
use spotagg_testkit::{require_tool, Tool};

/// The board top without the EAPS node (`spotagg build --no-eaps`) with the smallest core (the
/// check is about the board logic around it): no error, no latch, and it fits the 5A-75B.
fn synth_board_top_without_eaps() -> Utilization {
    let board = spotagg_boards::board::colorlight_5a_75b_v8::board();
    let job = JobConfig::example(4, PayloadSize::B256, 1);
    let core = CoreConfig::new(4, 1, 256, 32).unwrap();
    let v = spotagg_boards::tops::top::board_verilog_jobs(&board, core, &job, Default::default(), 1, &EapsBuild::Off);
    let start = std::time::Instant::now();
    let u = synth_ecp5(&v).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("board top, 1 slot of 256 B, no EAPS node: {u:?} in {:.0?}", start.elapsed());
    assert!(u.lut4 > 1000 && u.flip_flops > 1000, "{u:?}");
    assert!(u.lut4 < board.part.luts as u64, "{u:?} does not fit");
    assert!(u.dp16kd <= board.part.dp16kd as u64, "{u:?} does not fit");
    u
}

/// The board top without the EAPS node, as `spotagg build --no-eaps` makes it, with the
/// smallest core (every block of the core but the straggler counters and the other widths'
/// stream adapters, `hdl/tests/verilog.rs`): synthesizes, no latch, and fits the 5A-75B. The
/// board top as it ships (the node built in) is synthesized, placed and routed by
/// `builds_the_board_top_to_a_bitstream_that_meets_timing` (tests/build.rs), which also holds
/// the node to no block RAM (55 of 56 DP16KD at 30 slots, the slots' and the FIFOs') and finds
/// its clock in the report; this test synthesized both tops until 2026-12-07, one synthesis more
/// (75 s of CPU) for a check that one already makes (docs/performance.md, "Test suite").
#[test]
#[ignore = "slow tier: a synthesis of the board top (scripts/test.sh runs it)"]
fn board_top_without_eaps_synthesizes_and_fits() {
    if !require_tool(Tool::Yosys) {
        return;
    }
    synth_board_top_without_eaps();
}

/// The Colorlight i9 (LFE5U-45F) board top as `spotagg build --board colorlight-i9` makes it:
/// the slots that fit (`slots_fitting`: 64, the core's maximum) and the straggler counters,
/// synthesized (not placed: its place and route takes far longer than the slow tier's budget;
/// `builds_the_i9_board_top` in tests/build.rs does it by hand). It must fit the part. The
/// control link reads the straggler counters (0x0600..), so synthesis keeps them; the placed
/// figures are in docs/performance.md (90 of 108 DP16KD at seed 1).
#[test]
#[ignore = "slow tier: a 64-slot synthesis takes minutes (scripts/test.sh runs it)"]
fn i9_board_top_with_stragglers_fits_the_45f() {
    if !require_tool(Tool::Yosys) {
        return;
    }
    let board = spotagg_boards::board("colorlight-i9").unwrap();
    let slots = spotagg_hdl::verilog::slots_fitting(board.part.dp16kd);
    assert_eq!(slots, 64);
    let core = CoreConfig::new(4, slots, 1024, 32).unwrap().with_stragglers(true);
    let job = JobConfig::example(8, PayloadSize::B1024, slots as u16);
    let v = board_verilog(&board, core, &job);
    assert!(v.contains("stragglers"), "the straggler block is in the Verilog");
    let start = std::time::Instant::now();
    let u = synth_ecp5(&v).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("i9 board top, 64 slots of 1024 B, straggler counters: {u:?} in {:.0?}", start.elapsed());
    assert!(u.dp16kd <= board.part.dp16kd as u64, "{u:?} does not fit");
    assert!(u.lut4 + u.ccu2c * 2 < board.part.luts as u64, "{u:?} does not fit");
}

/// The i9 with everything (issue 20): two jobs (a core each behind the job router,
/// docs/switch.md §8), each core with 36 slots of 1024 B, the tree leaf, the straggler
/// counters and the EAPS node (the board top's default), synthesizes into the LFE5U-45F's
/// block RAM and LUTs.
#[test]
#[ignore = "slow tier: a two-core synthesis takes minutes (scripts/test.sh runs it)"]
fn i9_board_top_with_two_jobs_fits_the_45f() {
    if !require_tool(Tool::Yosys) {
        return;
    }
    // Two cores' Verilog generation is deep: a thread with room for it.
    std::thread::Builder::new().stack_size(256 << 20).spawn(i9_two_jobs).unwrap().join().unwrap();
}

fn i9_two_jobs() {
    let board = spotagg_boards::board("colorlight-i9").unwrap();
    let core = CoreConfig::new(4, 36, 1024, 32).unwrap().with_stragglers(true);
    assert!(core.tree);
    let job = JobConfig::example(8, PayloadSize::B1024, 36);
    let v = spotagg_boards::tops::top::board_verilog_jobs(&board, core, &job, Default::default(), 2, &EapsBuild::On);
    assert!(v.contains("router") && v.contains("cores$1"), "two cores behind the router in the Verilog");
    let start = std::time::Instant::now();
    let u = synth_ecp5(&v).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "i9 board top, 2 jobs x 36 slots of 1024 B, tree leaf, straggler counters, EAPS: {u:?} in {:.0?}",
        start.elapsed()
    );
    assert!(u.dp16kd <= board.part.dp16kd as u64, "{u:?} does not fit");
    assert!(u.lut4 + u.ccu2c * 2 < board.part.luts as u64, "{u:?} does not fit");
}
