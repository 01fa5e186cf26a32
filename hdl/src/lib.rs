//! spotagg aggregation engine in rust-hdl: the portable core and its blocks, one per module.
//!
//! The blocks are grouped by what they do, each folder's doc naming its entry point:
//! [`parse`] (a received frame classified), [`aggregate`] (docs/switch.md §2), [`reply`] (the
//! frames sent), [`control`] (the control link and the configuration registers), [`eaps`] (ring
//! protection) and [`stream`] (the stream interfaces and width adapters). At the root is what
//! joins them ([`core`], [`core_with_control`], [`multi_core`] with its [`job_router`]) or is
//! shared ([`config`], [`counters`], [`block_ram`], [`wire_layout`], [`verilog`]). Every block
//! is also re-exported at the root under its module's name (`spotagg_hdl::eaps_node`).
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

pub mod aggregate;
pub mod control;
pub mod eaps;
pub mod parse;
pub mod reply;
pub mod stream;

#[cfg(test)]
mod bench;
pub mod block_ram;
pub mod config;
pub mod config_registers;
pub mod core;
pub mod core_with_control;
pub mod counters;
pub mod job_router;
pub mod multi_core;
pub mod verilog;
pub mod wire_layout;

// The blocks' paths before they were put in folders, which the other crates use.
pub use aggregate::{aggregator, element_pass, lane_adders, scoreboard, session, slot_memory, straggler};
pub use control::{control_link, crc16, mdio, register_range, uart};
pub use eaps::{eaps_esl, eaps_gate, eaps_node, eaps_pdu, eaps_registers, eaps_step};
pub use parse::{frame_checks, frame_parser, vlan, worker_search};
pub use reply::result_builder;
// … and before they were renamed for what each is.
pub use parse::received_header as header_words;
pub use reply::header_buffer_writer as header_writer;
pub use reply::header_composer as reply_header;
pub use stream::{byte_stream, stream_width, word_stream};

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
