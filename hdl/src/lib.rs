//! spotagg aggregation engine in rust-hdl: the portable core and its blocks, one per module.
//!
//! [`core::Core`] joins the blocks; [`config::CoreConfig`] holds the build parameters;
//! [`verilog`] turns a configuration into Verilog. The simulation harness lives in
//! `spotagg-sim` (`rtl`).

pub mod aggregator;
pub mod block_ram;
pub mod config;
pub mod config_registers;
pub mod core;
pub mod counters;
pub mod frame_parser;
pub mod lane_adders;
pub mod result_builder;
pub mod scoreboard;
pub mod slot_memory;
pub mod stream_width;
pub mod verilog;

pub use crate::config::{ConfigError, CoreConfig};
pub use crate::core::Core;
pub use rust_hdl;

/// Direct stepping for the blocks' own tests.
#[cfg(test)]
pub(crate) mod step {
    use rust_hdl::prelude::*;

    /// Settles combinational logic.
    pub fn settle<B: Block>(b: &mut B) {
        assert!(simulate(b, 10_000), "did not settle");
    }
}
