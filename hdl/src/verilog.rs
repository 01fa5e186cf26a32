//! Verilog of a core configuration (rust-hdl's generator), and of single blocks for checks.

use crate::config::CoreConfig;
use crate::core::Core;
use rust_hdl::prelude::*;

fn verilog_of<B: Block>(mut block: B) -> String {
    block.connect_all();
    generate_verilog(&block)
}

/// The Verilog of the core built with `config`; the top module is `top`.
pub fn core_verilog(config: &CoreConfig) -> String {
    match config.width_bytes {
        1 => verilog_of(Core::<8>::new(*config)),
        4 => verilog_of(Core::<32>::new(*config)),
        8 => verilog_of(Core::<64>::new(*config)),
        w => panic!("width_bytes = {w} is not supported"),
    }
}

/// The Verilog of each block of the core on its own, by block name (top module `top`).
pub fn block_verilogs(config: &CoreConfig) -> Vec<(&'static str, String)> {
    use crate::*;
    let mut v = vec![
        ("frame_parser", verilog_of(frame_parser::FrameParser::new())),
        ("scoreboard", verilog_of(scoreboard::Scoreboard::new(config.slots))),
        ("slot_memory", verilog_of(slot_memory::SlotMemory::new(config))),
        ("lane_adders", verilog_of(lane_adders::LaneAdders::default())),
        ("aggregator", verilog_of(aggregator::Aggregator::new(config.max_elements()))),
        ("result_builder", verilog_of(result_builder::ResultBuilder::new())),
        ("counters", verilog_of(counters::Counters::default())),
        ("config_registers", verilog_of(config_registers::ConfigRegisters::default())),
    ];
    match config.width_bytes {
        1 => {
            v.push(("rx_width", verilog_of(stream_width::RxWidth::<8>::new())));
            v.push(("tx_width", verilog_of(stream_width::TxWidth::<8>::new())));
        }
        8 => {
            v.push(("rx_width", verilog_of(stream_width::RxWidth::<64>::new())));
            v.push(("tx_width", verilog_of(stream_width::TxWidth::<64>::new())));
        }
        _ => {
            v.push(("rx_width", verilog_of(stream_width::RxWidth::<32>::new())));
            v.push(("tx_width", verilog_of(stream_width::TxWidth::<32>::new())));
        }
    }
    v
}
