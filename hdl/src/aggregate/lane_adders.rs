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

interface_pair! {
    /// The lane adders' operands and results, the adders' end.
    pub struct LaneAdderPort join "LaneAdderClient";
    /// The lane adders' operands and results, the aggregator's end.
    pub struct LaneAdderClient join "LaneAdderPort";
    {
        /// Value held in the slot.
        stored: In Bits<32>,
        /// Value of the contribution.
        incoming: In Bits<32>,
        /// First contribution of the round: write instead of add.
        first: In Bit,
        /// The new slot value of the previous cycle's inputs.
        sum: Out Bits<32>,
        /// Exponents held in the slot.
        exp_stored: In Bits<16>,
        /// Exponents of the contribution.
        exp_incoming: In Bits<16>,
        /// Compute the exponents this cycle.
        exp_active: In Bit,
        /// The new exponents.
        exp_out: Out Bits<16>,
    }
}

/// Adder and exponent maximum.
#[derive(LogicBlock, Default)]
pub struct LaneAdders {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Operands and results.
    pub port: LaneAdderPort,
    e0: Signal<Local, Bits<8>>,
    e1: Signal<Local, Bits<8>>,
    sum_r: DFF<Bits<32>>,
}

impl Logic for LaneAdders {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, sum_r);
        self.port.sum.next = self.sum_r.q.val();
        if self.port.first.val() {
            self.sum_r.d.next = self.port.incoming.val();
        } else {
            self.sum_r.d.next = self.port.stored.val() + self.port.incoming.val();
        }
        self.e0.next = 0.into();
        self.e1.next = 0.into();
        self.port.exp_out.next = 0.into();
        if self.port.exp_active.val() {
            if self.port.first.val() {
                self.port.exp_out.next = self.port.exp_incoming.val();
            } else {
                if (self.port.exp_stored.val().get_bits::<8>(8) ^ 0x80)
                    > (self.port.exp_incoming.val().get_bits::<8>(8) ^ 0x80)
                {
                    self.e0.next = self.port.exp_stored.val().get_bits::<8>(8);
                } else {
                    self.e0.next = self.port.exp_incoming.val().get_bits::<8>(8);
                }
                if (bit_cast::<8, 16>(self.port.exp_stored.val()) ^ 0x80)
                    > (bit_cast::<8, 16>(self.port.exp_incoming.val()) ^ 0x80)
                {
                    self.e1.next = bit_cast::<8, 16>(self.port.exp_stored.val());
                } else {
                    self.e1.next = bit_cast::<8, 16>(self.port.exp_incoming.val());
                }
                self.port.exp_out.next = (bit_cast::<16, 8>(self.e0.val()) << 8) | bit_cast::<16, 8>(self.e1.val());
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
        b.port.stored.next = u64::from(stored).into();
        b.port.incoming.next = u64::from(incoming).into();
        b.port.first.next = first;
        b.port.exp_stored.next = u64::from(es).into();
        b.port.exp_incoming.next = u64::from(ei).into();
        b.port.exp_active.next = true;
        settle(&mut b);
        let e = b.port.exp_out.val().to_u16();
        b.clock.next = true.into();
        settle(&mut b);
        b.clock.next = false.into();
        settle(&mut b);
        (b.port.sum.val().to_u32(), e)
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
