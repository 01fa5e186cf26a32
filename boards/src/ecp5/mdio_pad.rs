//! The MDIO pin: an ECP5 `BB` (bidirectional I/O buffer) instantiated by name, with a
//! behavioural model for rust-hdl simulation.
//!
//! `b` is the pad; the buffer drives `o` on it while `oe` is high (`BB`'s `T` is the inverse of
//! `oe`) and reports the pad's level on `i` (the PHY's reply, or the board's pull-up when
//! nothing drives).

use rust_hdl::prelude::*;

/// Bidirectional pad buffer of one pin.
#[derive(LogicBlock, Default)]
pub struct BidirPad {
    /// The pad (a top-level `inout`).
    pub b: Signal<InOut, Bit>,
    /// Value to drive.
    pub o: Signal<In, Bit>,
    /// Drive the pad.
    pub oe: Signal<In, Bit>,
    /// The pad's level.
    pub i: Signal<Out, Bit>,
}

impl Logic for BidirPad {
    fn update(&mut self) {
        if self.oe.val() {
            self.b.next = self.o.val();
        }
        self.b.set_tristate_is_output(self.oe.val());
        self.i.next = self.b.val();
    }
    fn connect(&mut self) {
        self.b.connect();
        self.i.connect();
    }
    fn hdl(&self) -> Verilog {
        super::primitive("BB bb (.I(o), .T(~oe), .O(i), .B(b));\n")
    }
}
