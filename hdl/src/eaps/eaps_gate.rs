//! The data plane's side of EAPS: [`EapsVlanGate`] says whether a frame of a VLAN may enter or
//! leave a ring port, from the node's port states (`EapsNode::forwarding`) and the domains'
//! protected ranges, the rule of the ring simulator's bridge (docs/eaps.md §7): a VLAN that a
//! domain protects passes a port only while that domain forwards on it; any other VLAN, and
//! an untagged frame, always passes (the control VLAN is never blocked). [`EapsTimebase`] is
//! the node's `now`: a count of time units, one every `div` clocks.

use crate::eaps::domain::EapsDomainCfg;
use rust_hdl::prelude::*;

/// Whether a frame on `vid` (`has_tag`) passes ring port `port`, for `D` domains.
#[derive(LogicBlock)]
pub struct EapsVlanGate<const D: usize> {
    /// The domains (only `active`, `protected_lo` and `protected_hi` are read).
    pub cfg: [EapsDomainCfg; D],
    /// The node's port states: bit `2d + p`.
    pub forwarding: Signal<In, Bits<32>>,
    /// The frame carries an 802.1Q tag.
    pub has_tag: Signal<In, Bit>,
    /// Its VID.
    pub vid: Signal<In, Bits<12>>,
    /// The ring port.
    pub port: Signal<In, Bit>,
    /// The frame passes.
    pub pass: Signal<Out, Bit>,
    /// A domain protects the VLAN.
    pub is_protected: Signal<Out, Bit>,
    /// That domain (the lowest-numbered one).
    pub domain: Signal<Out, Bits<4>>,
    hit: [Signal<Local, Bit>; D],
    fwd0: [Signal<Local, Bit>; D],
    fwd1: [Signal<Local, Bit>; D],
}

impl<const D: usize> Default for EapsVlanGate<D> {
    fn default() -> Self {
        assert!((1..=15).contains(&D), "EAPS domains {D}: 1..=15");
        Self {
            cfg: std::array::from_fn(|_| Default::default()),
            forwarding: Default::default(),
            has_tag: Default::default(),
            vid: Default::default(),
            port: Default::default(),
            pass: Default::default(),
            is_protected: Default::default(),
            domain: Default::default(),
            hit: std::array::from_fn(|_| Default::default()),
            fwd0: std::array::from_fn(|_| Default::default()),
            fwd1: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const D: usize> Logic for EapsVlanGate<D> {
    #[hdl_gen]
    fn update(&mut self) {
        self.pass.next = true;
        self.is_protected.next = false;
        self.domain.next = 0.into();
        // The lowest domain protecting the VLAN decides (docs/eaps.md §6.9).
        for i in 0..D {
            self.hit[i].next = self.has_tag.val()
                & self.cfg[i].active.val()
                & (self.vid.val() >= self.cfg[i].protected_lo.val())
                & (self.vid.val() <= self.cfg[i].protected_hi.val());
            self.fwd0[i].next = self.forwarding.val().get_bit(2 * i);
            self.fwd1[i].next = self.forwarding.val().get_bit(2 * i + 1);
            if self.hit[i].val() & !self.is_protected.val() {
                self.is_protected.next = true;
                self.domain.next = i.to_bits();
                if self.port.val() {
                    self.pass.next = self.fwd1[i].val();
                } else {
                    self.pass.next = self.fwd0[i].val();
                }
            }
        }
    }
}

/// The EAPS node's time: `now` counts one unit every `div` clocks (on the board 125 at
/// 125 MHz: 1 µs units).
#[derive(LogicBlock)]
pub struct EapsTimebase {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Time in units.
    pub now: Signal<Out, Bits<32>>,
    count: DFF<Bits<16>>,
    units: DFF<Bits<32>>,
    div_m1: Constant<Bits<16>>,
}

impl EapsTimebase {
    /// A time base of one unit every `div` clocks (1..=65536).
    pub fn new(div: u32) -> Self {
        assert!((1..=65536).contains(&div), "time base divider {div} outside 1..=65536");
        Self {
            clock: Default::default(),
            now: Default::default(),
            count: Default::default(),
            units: Default::default(),
            div_m1: Constant::new(u64::from(div - 1).into()),
        }
    }
}

impl Logic for EapsTimebase {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, count, units);
        self.now.next = self.units.q.val();
        if self.count.q.val() == self.div_m1.val() {
            self.count.d.next = 0.into();
            self.units.d.next = self.units.q.val() + 1;
        } else {
            self.count.d.next = self.count.q.val() + 1;
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn timebase_counts_units_of_div_clocks() {
        let mut t = EapsTimebase::new(5);
        t.connect_all();
        crate::step::settle(&mut t);
        for cycle in 1..=53u32 {
            t.clock.next = true.into();
            crate::step::settle(&mut t);
            t.clock.next = false.into();
            crate::step::settle(&mut t);
            assert_eq!(t.now.val().to_u32(), cycle / 5, "after {cycle} clocks");
        }
    }
}
