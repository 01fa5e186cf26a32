//! spotagg aggregation engine in rust-hdl: the portable core and its blocks, one per module.
//!
//! [`core::Core`] joins the blocks; [`config::CoreConfig`] holds the build parameters;
//! [`verilog`] turns a configuration into Verilog. The simulation harness lives in
//! `spotagg-sim` (`rtl`).
//!
//! Entry points:
//! - `CoreConfig::new(width_bytes, slots, max_payload, max_workers)` checks the parameters;
//! - [`verilog::core_verilog`] is the Verilog of a configuration (top module `top`);
//! - [`verilog::core_utilization`] runs Yosys `synth_ecp5` on it;
//! - `spotagg_sim::rtl::RtlEngine::for_job` simulates it behind `spotagg_driver::Engine`,
//!   `spotagg_sim::rtl::bench_report` measures it.
//!
//! rust-hdl 0.46 is pinned and unmaintained: the blocks are used through these types only.
//! Its kernels evaluate like a Verilog `always @(*)` block with blocking assignments — a
//! local or output read before it is assigned in the same kernel gives its default — so each
//! kernel assigns defaults first and computes values before using them.
//!
//! Two limits of its `#[hdl_gen]` that the blocks work around (found splitting the EAPS node):
//! - a field of an array element's value (`self.regs[i].q.val().hello_at`) inside a `for`
//!   loop does not compile (the generated width and offset code names `i`): such registers are
//!   kept one array a field (`eaps_node`'s `hello_at`, `fail_at`, …);
//! - a bit of a struct field (`self.send.q.val().mask.get_bit(0)`) is written as a bit select
//!   of a part select, which Verilator accepts and Yosys refuses: compare the field with a mask
//!   instead (`(… .mask & 1) == 0`). `hdl/tests/verilog.rs` synthesizes every block, which
//!   catches it.

/// One rising and one falling edge of a block's `clock`, settled before and after each (the
/// blocks' own tests).
#[cfg(test)]
macro_rules! tick {
    ($b:expr) => {{
        let b = $b;
        $crate::step::settle(b);
        b.clock.next = true.into();
        $crate::step::settle(b);
        b.clock.next = false.into();
        $crate::step::settle(b);
    }};
}

#[macro_use]
mod interface;

pub mod aggregator;
#[cfg(test)]
mod bench;
pub mod block_ram;
pub mod byte_stream;
pub mod config;
pub mod config_registers;
pub mod control_link;
pub mod core;
pub mod core_with_control;
pub mod counters;
pub mod crc16;
pub mod eaps_esl;
pub mod eaps_gate;
pub mod eaps_node;
pub mod eaps_pdu;
pub mod eaps_registers;
pub mod eaps_step;
pub mod element_pass;
pub mod frame_checks;
pub mod frame_parser;
pub mod header_words;
pub mod header_writer;
pub mod job_router;
pub mod lane_adders;
pub mod mdio;
pub mod multi_core;
pub mod register_range;
pub mod reply_header;
pub mod result_builder;
pub mod scoreboard;
pub mod session;
pub mod slot_memory;
pub mod straggler;
pub mod stream_width;
pub mod uart;
pub mod verilog;
pub mod vlan;
pub mod wire_layout;
pub mod word_stream;
pub mod worker_search;

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
