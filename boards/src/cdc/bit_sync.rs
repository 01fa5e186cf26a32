//! [`BitSync`]: `N` independent bits into a clock through two flip-flops each.
//!
//! For levels whose bits mean something each on its own (two ports' link states, an idle
//! flag): a bit may reach the destination a clock before or after another that changed at
//! the same time. The input must come from a flip-flop of its own clock. Each bit follows its
//! input within two to three destination clocks, and never shows a value the input did not
//! have.

use rust_hdl::prelude::*;

/// `N` two-flip-flop synchronizers.
#[derive(LogicBlock, Default)]
pub struct BitSync<const N: usize> {
    /// The bits, from registers of another clock.
    pub sig_in: Signal<In, Bits<N>>,
    /// Destination clock.
    pub clock: Signal<In, Clock>,
    /// The bits in the destination clock (a register).
    pub sig_out: Signal<Out, Bits<N>>,
    s1: DFF<Bits<N>>,
    s2: DFF<Bits<N>>,
}

impl<const N: usize> Logic for BitSync<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, s1, s2);
        self.s1.d.next = self.sig_in.val();
        self.s2.d.next = self.s1.q.val();
        self.sig_out.next = self.s2.q.val();
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::cdc::two_clocks::{lint, Rng, TwoClocks, PERIODS};

    /// Each bit follows its input within three destination clocks of its last change.
    #[test]
    fn follows_within_three_clocks() {
        for periods in PERIODS {
            let mut b = BitSync::<2>::default();
            b.connect_all();
            let mut clocks = TwoClocks::new(periods);
            let mut rng = Rng(7);
            let mut input = 0u64;
            let mut since = [0u32; 2];
            let mut checked = 0;
            while clocks.now < 40_000_000 {
                let e = clocks.next_edge();
                if e.clock == 1 {
                    b.clock.next = e.rising.into();
                    assert!(simulate(&mut b, 100));
                    if e.rising {
                        let out = b.sig_out.val().to_u64();
                        for (bit, s) in since.iter_mut().enumerate() {
                            *s += 1;
                            if *s > 3 {
                                assert_eq!(out >> bit & 1, input >> bit & 1, "periods {periods:?}, bit {bit}");
                                checked += 1;
                            }
                        }
                    }
                } else if e.rising && rng.one_in(40) {
                    let bit = (rng.next() % 2) as usize;
                    input ^= 1 << bit;
                    since[bit] = 0;
                    b.sig_in.next = input.into();
                    assert!(simulate(&mut b, 100));
                }
            }
            assert!(checked > 1000, "{checked}");
        }
    }

    #[test]
    fn lints_clean() {
        let mut b = BitSync::<2>::default();
        b.connect_all();
        lint("BitSync<2>", &generate_verilog(&b));
    }
}
