//! The fixed-point lane adders: the datapath-wide (one 32-bit lane) two's-complement
//! wrap-around adder and the signed maximum of the exponents.
//!
//! Timing: combinational. `sum = first ? incoming : stored + incoming (mod 2^32)`;
//! `exp_out = first ? exp_incoming : (max(e0), max(e1))` with int8 comparison, evaluated while
//! `exp_active` is high (0 otherwise). Exponent words hold `e0` in bits 15..8, `e1` in 7..0.

use rust_hdl::prelude::*;

/// Adder and exponent maximum.
#[derive(LogicBlock, Default)]
pub struct LaneAdders {
    /// Value held in the slot.
    pub stored: Signal<In, Bits<32>>,
    /// Value of the contribution.
    pub incoming: Signal<In, Bits<32>>,
    /// First contribution of the round: write instead of add.
    pub first: Signal<In, Bit>,
    /// The new slot value.
    pub sum: Signal<Out, Bits<32>>,
    /// Exponents held in the slot.
    pub exp_stored: Signal<In, Bits<16>>,
    /// Exponents of the contribution.
    pub exp_incoming: Signal<In, Bits<16>>,
    /// Compute the exponents this cycle.
    pub exp_active: Signal<In, Bit>,
    /// The new exponents.
    pub exp_out: Signal<Out, Bits<16>>,
    e0: Signal<Local, Bits<8>>,
    e1: Signal<Local, Bits<8>>,
}

impl Logic for LaneAdders {
    #[hdl_gen]
    fn update(&mut self) {
        if self.first.val() {
            self.sum.next = self.incoming.val();
        } else {
            self.sum.next = self.stored.val() + self.incoming.val();
        }
        self.e0.next = 0.into();
        self.e1.next = 0.into();
        self.exp_out.next = 0.into();
        if self.exp_active.val() {
            if self.first.val() {
                self.exp_out.next = self.exp_incoming.val();
            } else {
                if (self.exp_stored.val().get_bits::<8>(8) ^ 0x80) > (self.exp_incoming.val().get_bits::<8>(8) ^ 0x80) {
                    self.e0.next = self.exp_stored.val().get_bits::<8>(8);
                } else {
                    self.e0.next = self.exp_incoming.val().get_bits::<8>(8);
                }
                if (bit_cast::<8, 16>(self.exp_stored.val()) ^ 0x80) > (bit_cast::<8, 16>(self.exp_incoming.val()) ^ 0x80) {
                    self.e1.next = bit_cast::<8, 16>(self.exp_stored.val());
                } else {
                    self.e1.next = bit_cast::<8, 16>(self.exp_incoming.val());
                }
                self.exp_out.next = (bit_cast::<16, 8>(self.e0.val()) << 8) | bit_cast::<16, 8>(self.e1.val());
            }
        }
    }
}
