//! The layers from the pins down to the core, outermost first:
//!
//! | layer | block | what it is | who runs it |
//! |---|---|---|---|
//! | synthesized top | [`top::BoardTop`] (module `top`) | the board logic inside the ECP5 primitives (PLL, DDR registers, delays, MDIO pad) | Yosys and nextpnr (`spotagg build`) |
//! | board logic | [`board_logic::BoardLogic`] | the switch fabric with its control plane (control link, MDIO master) | simulated: `tests/ctl_pty.rs` |
//! | switch fabric | [`switch_fabric::SwitchFabric`] | both ports' MACs and FIFOs, merge, core, dispatch, bridge, job loader | simulated: `boards/tests/board_sim.rs`, `spotagg tap` |
//! | core with control | `spotagg_hdl::core_with_control::CoreWithControl` | the core and its control link | simulated (Verilator) |
//! | core | `spotagg_hdl::core::Core` | the portable aggregation engine | simulated: `sim/` (three-way tests, replay) |
//!
//! [`core_top`] is apart: a core-only top for measuring what the core costs on a board's FPGA
//! (a PLL and shift registers around the core, no MAC): synthesized, never a switch.

pub mod board_logic;
pub mod config_loader;
pub mod core_clock;
pub mod core_top;
pub mod eaps_node_crossing;
pub mod switch_fabric;
pub mod top;

/// Runs `f` (a rust-hdl Verilog generation of a board layer) on a thread with a 256 MB stack:
/// rust-hdl generates a design by recursion, and the board's layers with the EAPS node and its
/// clock crossing are deep enough to overflow a test thread's 2 MB.
pub(crate) fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn_scoped(s, f)
            .expect("a thread for Verilog generation")
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}
