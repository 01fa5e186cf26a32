//! The fixed-point lane adders: the datapath-wide (one 32-bit lane) two's-complement
//! wrap-around adder and the signed maximum of the exponents.
//!
//! Timing: the value adder is registered: `sum` in cycle t + 1 is
//! `first ? incoming : stored + incoming (mod 2^32)` of cycle t (its inputs are expected to come
//! straight from registers, so one 32-bit carry chain and a mux lie between two registers).
//! The exponent maximum is combinational: `exp_out = first ? exp_incoming : (max(e0), max(e1))`
//! with int8 comparison, evaluated while `exp_active` is high (0 otherwise). Exponent words hold
//! `e0` in bits 15..8, `e1` in 7..0.

use rust_hdl::prelude::*;

/// Adder and exponent maximum.
#[derive(LogicBlock, Default)]
pub struct LaneAdders {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Value held in the slot.
    pub stored: Signal<In, Bits<32>>,
    /// Value of the contribution.
    pub incoming: Signal<In, Bits<32>>,
    /// First contribution of the round: write instead of add.
    pub first: Signal<In, Bit>,
    /// The new slot value of the previous cycle's inputs.
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
    sum_r: DFF<Bits<32>>,
}

impl Logic for LaneAdders {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, sum_r);
        self.sum.next = self.sum_r.q.val();
        if self.first.val() {
            self.sum_r.d.next = self.incoming.val();
        } else {
            self.sum_r.d.next = self.stored.val() + self.incoming.val();
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
                if (bit_cast::<8, 16>(self.exp_stored.val()) ^ 0x80)
                    > (bit_cast::<8, 16>(self.exp_incoming.val()) ^ 0x80)
                {
                    self.e1.next = bit_cast::<8, 16>(self.exp_stored.val());
                } else {
                    self.e1.next = bit_cast::<8, 16>(self.exp_incoming.val());
                }
                self.exp_out.next = (bit_cast::<16, 8>(self.e0.val()) << 8) | bit_cast::<16, 8>(self.e1.val());
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::step::settle;

    fn run(stored: u32, incoming: u32, first: bool, es: u16, ei: u16) -> (u32, u16) {
        let mut b = LaneAdders::default();
        b.connect_all();
        b.stored.next = u64::from(stored).into();
        b.incoming.next = u64::from(incoming).into();
        b.first.next = first;
        b.exp_stored.next = u64::from(es).into();
        b.exp_incoming.next = u64::from(ei).into();
        b.exp_active.next = true;
        settle(&mut b);
        let e = b.exp_out.val().to_u16();
        b.clock.next = true.into();
        settle(&mut b);
        b.clock.next = false.into();
        settle(&mut b);
        (b.sum.val().to_u32(), e)
    }

    #[test]
    fn wraps_and_maxes_signed() {
        // i32::MAX + 1 wraps to i32::MIN; -3 max 2 is 2; -128 max -1 is -1.
        let (s, e) = run(0x7fff_ffff, 1, false, 0xfd80, 0x02ff);
        assert_eq!(s, 0x8000_0000);
        assert_eq!(e, 0x02ff);
        let (s, e) = run(5, (-7i32) as u32, false, 0x0101, 0x80fe);
        assert_eq!(s as i32, -2);
        assert_eq!(e, 0x0101);
    }

    #[test]
    fn first_writes() {
        assert_eq!(run(123, 456, true, 0x0505, 0xf0f0), (456, 0xf0f0));
    }
}
