//! Yosys `synth_ecp5` of the whole board top (the ECP5 primitives are cells of Yosys's ECP5
//! library, so they stay black boxes): no error, no latch; prints the utilization.

use spotagg_boards::tops::top::board_verilog;
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::JobConfig;
use spotagg_hdl::verilog::synth_ecp5;
use spotagg_hdl::CoreConfig;
use spotagg_testkit::{require_tool, Tool};

#[test]
fn board_top_synthesizes_for_ecp5() {
    if !require_tool(Tool::Yosys) {
        return;
    }
    let board = spotagg_boards::board::colorlight_5a_75b_v8::board();
    // The smallest core: the check is about the board logic around it.
    let job = JobConfig::example(4, PayloadSize::B256, 1);
    let v = board_verilog(&board, CoreConfig::new(4, 1, 256, 32).unwrap(), &job);
    let start = std::time::Instant::now();
    let u = synth_ecp5(&v).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("board top, 1 slot of 256 B: {u:?} in {:.0?}", start.elapsed());
    assert!(u.lut4 > 1000 && u.flip_flops > 1000, "{u:?}");
    assert!(u.lut4 < board.part.luts as u64, "{u:?} does not fit");
}

/// The utilization of a full-size board top (16 slots of 1024 B, 32 workers); slow, run with
/// `--ignored`.
#[test]
#[ignore = "slow tier: a full-size synthesis takes minutes (scripts/test.sh runs it)"]
fn board_top_utilization_full_size() {
    if !require_tool(Tool::Yosys) {
        return;
    }
    let board = spotagg_boards::board::colorlight_5a_75b_v8::board();
    let job = JobConfig::example(8, PayloadSize::B1024, 16);
    let v = board_verilog(&board, CoreConfig::default(), &job);
    let start = std::time::Instant::now();
    let u = synth_ecp5(&v).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("board top, 16 slots of 1024 B: {u:?} in {:.0?}", start.elapsed());
    assert!(u.dp16kd <= board.part.dp16kd as u64, "{u:?} does not fit");
}
