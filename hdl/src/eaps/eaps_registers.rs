//! The EAPS configuration registers of a board (docs/control.md 0x0700..): `D` domains'
//! settings and the node's enable, written by the control link, read by the node and by every
//! [`crate::eaps_gate::EapsVlanGate`] through one [`EapsDomainCfgSource`] per domain.
//!
//! | offset | register |
//! |---|---|
//! | 16·d + 0 | flags: bit 0 active, 1 master, 2 primary is port 1, 3 send-alert |
//! | 16·d + 1 | control VLAN (bits 0..12) |
//! | 16·d + 2 | protected VLANs: first (bits 0..12), last (bits 16..28) |
//! | 16·d + 3 | hello period (time units) |
//! | 16·d + 4 | fail period |
//! | 16·d + 5 | pre-forwarding period |
//! | 16·d + 6 | PDU timer fields: hello (bits 0..16), fail (bits 16..32), ms |
//! | 0xF0 | bit 0: the node is enabled |
//!
//! The words are those of `spotagg_driver::control::protocol::eaps::DomainSettings::words`; the
//! power-up values are none (no domain, disabled) unless [`EapsRegisters::with_defaults`] bakes
//! some in.

use crate::eaps::domain::EapsDomainCfgSource;
use rust_hdl::prelude::*;

/// The registers' words of a domain that is not configured (its protected range empty).
pub const NO_DOMAIN: [u32; 7] = [0, 0, 1, 0, 0, 0, 0];

/// `D` domains' configuration and the enable.
#[derive(LogicBlock)]
pub struct EapsRegisters<const D: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Write the register at `address`.
    pub write: Signal<In, Bit>,
    /// Its offset (module doc).
    pub address: Signal<In, Bits<8>>,
    /// Its data.
    pub data: Signal<In, Bits<32>>,
    /// Each domain's configuration.
    pub cfg: [EapsDomainCfgSource; D],
    /// The node is enabled.
    pub enable: Signal<Out, Bit>,
    flags: [DFFWithInit<Bits<4>>; D],
    vlan: [DFFWithInit<Bits<12>>; D],
    lo: [DFFWithInit<Bits<12>>; D],
    hi: [DFFWithInit<Bits<12>>; D],
    hello: [DFFWithInit<Bits<32>>; D],
    fail: [DFFWithInit<Bits<32>>; D],
    pf: [DFFWithInit<Bits<32>>; D],
    fields: [DFFWithInit<Bits<32>>; D],
    on: DFFWithInit<Bit>,
}

impl<const D: usize> Default for EapsRegisters<D> {
    fn default() -> Self {
        Self::with_defaults(&[], false)
    }
}

impl<const D: usize> EapsRegisters<D> {
    /// The registers with `domains` (slot d: domain d's words, `None` none) at power-up and the
    /// node enabled if `enable`.
    pub fn with_defaults(domains: &[Option<[u32; 7]>], enable: bool) -> Self {
        assert!(domains.len() <= D, "{} EAPS domains for registers of {D}", domains.len());
        let w = |d: usize, i: usize| u64::from(domains.get(d).copied().flatten().unwrap_or(NO_DOMAIN)[i]);
        Self {
            clock: Default::default(),
            write: Default::default(),
            address: Default::default(),
            data: Default::default(),
            cfg: std::array::from_fn(|_| Default::default()),
            enable: Default::default(),
            flags: std::array::from_fn(|d| DFFWithInit::new((w(d, 0) & 0xf).into())),
            vlan: std::array::from_fn(|d| DFFWithInit::new((w(d, 1) & 0xfff).into())),
            lo: std::array::from_fn(|d| DFFWithInit::new((w(d, 2) & 0xfff).into())),
            hi: std::array::from_fn(|d| DFFWithInit::new(((w(d, 2) >> 16) & 0xfff).into())),
            hello: std::array::from_fn(|d| DFFWithInit::new(w(d, 3).into())),
            fail: std::array::from_fn(|d| DFFWithInit::new(w(d, 4).into())),
            pf: std::array::from_fn(|d| DFFWithInit::new(w(d, 5).into())),
            fields: std::array::from_fn(|d| DFFWithInit::new(w(d, 6).into())),
            on: DFFWithInit::new(enable),
        }
    }
}

impl<const D: usize> Logic for EapsRegisters<D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, on);
        for d in 0..D {
            self.flags[d].clock.next = self.clock.val();
            self.flags[d].d.next = self.flags[d].q.val();
            self.vlan[d].clock.next = self.clock.val();
            self.vlan[d].d.next = self.vlan[d].q.val();
            self.lo[d].clock.next = self.clock.val();
            self.lo[d].d.next = self.lo[d].q.val();
            self.hi[d].clock.next = self.clock.val();
            self.hi[d].d.next = self.hi[d].q.val();
            self.hello[d].clock.next = self.clock.val();
            self.hello[d].d.next = self.hello[d].q.val();
            self.fail[d].clock.next = self.clock.val();
            self.fail[d].d.next = self.fail[d].q.val();
            self.pf[d].clock.next = self.clock.val();
            self.pf[d].d.next = self.pf[d].q.val();
            self.fields[d].clock.next = self.clock.val();
            self.fields[d].d.next = self.fields[d].q.val();
            if self.write.val() & (self.address.val().get_bits::<4>(4).index() == d) {
                match self.address.val().get_bits::<4>(0).index() {
                    0 => self.flags[d].d.next = self.data.val().get_bits::<4>(0),
                    1 => self.vlan[d].d.next = self.data.val().get_bits::<12>(0),
                    2 => {
                        self.lo[d].d.next = self.data.val().get_bits::<12>(0);
                        self.hi[d].d.next = self.data.val().get_bits::<12>(16);
                    }
                    3 => self.hello[d].d.next = self.data.val(),
                    4 => self.fail[d].d.next = self.data.val(),
                    5 => self.pf[d].d.next = self.data.val(),
                    6 => self.fields[d].d.next = self.data.val(),
                    _ => {}
                }
            }
            self.cfg[d].active.next = self.flags[d].q.val().get_bit(0);
            self.cfg[d].master.next = self.flags[d].q.val().get_bit(1);
            self.cfg[d].primary.next = self.flags[d].q.val().get_bit(2);
            self.cfg[d].send_alert.next = self.flags[d].q.val().get_bit(3);
            self.cfg[d].control_vlan.next = self.vlan[d].q.val();
            self.cfg[d].protected_lo.next = self.lo[d].q.val();
            self.cfg[d].protected_hi.next = self.hi[d].q.val();
            self.cfg[d].hello.next = self.hello[d].q.val();
            self.cfg[d].fail.next = self.fail[d].q.val();
            self.cfg[d].pre_forwarding.next = self.pf[d].q.val();
            self.cfg[d].hello_field.next = self.fields[d].q.val().get_bits::<16>(0);
            self.cfg[d].fail_field.next = self.fields[d].q.val().get_bits::<16>(16);
        }
        if self.write.val() & (self.address.val() == 0xF0) {
            self.on.d.next = self.data.val().get_bit(0);
        }
        self.enable.next = self.on.q.val();
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::step::settle;

    fn clock(r: &mut EapsRegisters<2>) {
        settle(r);
        r.clock.next = true.into();
        settle(r);
        r.clock.next = false.into();
        settle(r);
    }

    #[test]
    fn writes_reach_each_domain_and_defaults_are_baked_in() {
        let mut words = NO_DOMAIN;
        words[0] = 0b0011;
        words[1] = 1000;
        words[2] = 10 | (20 << 16);
        words[6] = 1 | (3 << 16);
        let mut r = EapsRegisters::<2>::with_defaults(&[None, Some(words)], true);
        r.connect_all();
        settle(&mut r);
        assert!(r.enable.val());
        assert!(!r.cfg[0].active.val());
        assert_eq!(r.cfg[0].protected_lo.val().index(), 1, "no domain: an empty range");
        assert!(r.cfg[1].active.val() && r.cfg[1].master.val() && !r.cfg[1].primary.val());
        assert_eq!(r.cfg[1].control_vlan.val().index(), 1000);
        assert_eq!((r.cfg[1].protected_lo.val().index(), r.cfg[1].protected_hi.val().index()), (10, 20));
        assert_eq!((r.cfg[1].hello_field.val().index(), r.cfg[1].fail_field.val().index()), (1, 3));
        // Domain 0's fail period, then the enable off.
        for (address, data) in [(0x04u64, 123_456u64), (0xF0, 0)] {
            r.write.next = true;
            r.address.next = address.into();
            r.data.next = data.into();
            clock(&mut r);
        }
        r.write.next = false;
        clock(&mut r);
        assert_eq!(r.cfg[0].fail.val().index(), 123_456);
        assert_eq!(r.cfg[1].fail.val().index(), 0, "domain 1 untouched");
        assert!(!r.enable.val());
        // An offset past the registers changes nothing.
        r.write.next = true;
        r.address.next = 0x17.into();
        r.data.next = 0xffff_ffffu64.into();
        clock(&mut r);
        assert_eq!(r.cfg[1].control_vlan.val().index(), 1000);
    }
}
