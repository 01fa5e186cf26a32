//! [`PulseSync`]: one-clock pulses on `N` independent lines from one clock to another.
//!
//! Each pulse flips a toggle flip-flop of its line in the source clock; the destination takes
//! the toggles through two flip-flops and a third, and gives a one-clock pulse for each change.
//! Guarantee: every source pulse gives exactly one destination pulse, two to four destination
//! clocks later, provided that pulses on the same line are at least one destination period
//! plus one source period apart (a toggle must be seen in each of its states); pulses in
//! consecutive clocks of a source at most half the destination's frequency qualify. Pulses on
//! different lines are independent (they may arrive a clock apart where they left together).
//!
//! Path between the clocks: the toggles into the first flip-flop.

use rust_hdl::prelude::*;

/// `N` toggle pulse synchronizers.
#[derive(LogicBlock, Default)]
pub struct PulseSync<const N: usize> {
    /// Source clock.
    pub src_clock: Signal<In, Clock>,
    /// Pulses (bit per line), in the source clock.
    pub pulse: Signal<In, Bits<N>>,
    /// Destination clock.
    pub dst_clock: Signal<In, Clock>,
    /// The pulses in the destination clock (from registers).
    pub out: Signal<Out, Bits<N>>,
    toggle: DFF<Bits<N>>,
    s1: DFF<Bits<N>>,
    s2: DFF<Bits<N>>,
    s3: DFF<Bits<N>>,
}

impl<const N: usize> Logic for PulseSync<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, src_clock, toggle);
        dff_setup!(self, dst_clock, s1, s2, s3);
        self.toggle.d.next = self.toggle.q.val() ^ self.pulse.val();
        self.s1.d.next = self.toggle.q.val();
        self.s2.d.next = self.s1.q.val();
        self.s3.d.next = self.s2.q.val();
        self.out.next = self.s2.q.val() ^ self.s3.q.val();
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::cdc::two_clocks::{lint, Rng, TwoClocks, PERIODS};

    /// Random pulses on three lines, some in consecutive source clocks where the spacing rule
    /// allows it: as many pulses come out of each line as went in, none lost or doubled, each
    /// one destination clock long.
    #[test]
    fn pulses_are_neither_lost_nor_doubled() {
        for periods in PERIODS {
            let mut b = PulseSync::<3>::default();
            b.connect_all();
            let mut clocks = TwoClocks::new(periods);
            let mut rng = Rng(0x1234_5677);
            // The shortest spacing on a line, in source clocks: one destination period plus one
            // source period, rounded up.
            let spacing = (periods[1] + periods[0]).div_ceil(periods[0]) as u32;
            let (mut sent, mut got, mut last) = ([0u32; 3], [0u32; 3], [0u32; 3]);
            let mut prev_out = 0u64;
            let mut src_edges = 0u32;
            while clocks.now < 6000 * periods[0] + 20 * periods[1] {
                let e = clocks.next_edge();
                if e.clock == 0 {
                    b.src_clock.next = e.rising.into();
                    assert!(simulate(&mut b, 100));
                    if e.rising {
                        src_edges += 1;
                        let mut p = 0u64;
                        if src_edges < 6000 {
                            for line in 0..3 {
                                if src_edges - last[line] >= spacing && rng.one_in(2 + line as u32 * 3) {
                                    p |= 1 << line;
                                    sent[line] += 1;
                                    last[line] = src_edges;
                                }
                            }
                        }
                        b.pulse.next = p.into();
                        assert!(simulate(&mut b, 100));
                    }
                } else {
                    b.dst_clock.next = e.rising.into();
                    assert!(simulate(&mut b, 100));
                    if e.rising {
                        let out = b.out.val().to_u64();
                        for (line, g) in got.iter_mut().enumerate() {
                            if out >> line & 1 == 1 {
                                *g += 1;
                            }
                        }
                        // Consecutive pulses on a line are separate pulses only if the source sent
                        // them so: with the spacing rule and a slower source they never touch.
                        if periods[0] >= periods[1] {
                            assert_eq!(out & prev_out, 0, "periods {periods:?}: a pulse two clocks long");
                        }
                        prev_out = out;
                    }
                }
            }
            assert_eq!(got, sent, "periods {periods:?}");
            assert!(sent.iter().all(|&s| s > 200), "{sent:?}");
        }
    }

    #[test]
    fn lints_clean() {
        let mut b = PulseSync::<3>::default();
        b.connect_all();
        lint("PulseSync<3>", &generate_verilog(&b));
    }
}
