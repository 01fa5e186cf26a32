//! Which port a MAC address was last seen on: a direct-mapped table of 64 entries.
//!
//! Learning writes `{valid, port, mac}` at the entry chosen by a hash of the MAC (the XOR of
//! its last three bytes, low six bits); a later MAC with the same hash replaces the entry.
//! Lookup: present `lookup_mac`; three clocks later `lookup_hit` says whether the entry held
//! that MAC and `lookup_port` its port (RAM read, the RAM's output register, registered
//! compare in three parts: `lookup_hit` is one LUT of flip-flops). A miss (never seen, or evicted) makes the caller send
//! to every port, so a collision costs bandwidth, never a lost frame.
//!
//! The table is a block RAM ([`FifoRam`]: two `DP16KD`s with their output registers) in the
//! core clock domain; it starts empty (an entry without the valid bit never hits).
//!
//! Flush (`flush`, one clock: an EAPS flush PDU or a local topology change, docs/eaps.md):
//! the next 64 clocks write every entry empty, one a clock (a learn meanwhile is dropped: the
//! next frame from that MAC learns it); until 4
//! clocks after the last of them (the lookup's latency) every lookup misses, so no lookup
//! answers from an entry the flush has not reached yet. A flush during a flush starts it
//! again. A miss floods, so a flush costs bandwidth for a moment, never a frame.

use crate::ecp5::FifoRam;
use rust_hdl::prelude::*;

/// The MAC table.
#[derive(LogicBlock)]
pub struct MacTable {
    /// Core clock.
    pub clock: Signal<In, Clock>,
    /// Learn a MAC.
    pub learn_valid: Signal<In, Bit>,
    /// The MAC.
    pub learn_mac: Signal<In, Bits<48>>,
    /// The port it was seen on.
    pub learn_port: Signal<In, Bit>,
    /// MAC to look up.
    pub lookup_mac: Signal<In, Bits<48>>,
    /// Three clocks after `lookup_mac`: it is in the table.
    pub lookup_hit: Signal<Out, Bit>,
    /// Its port.
    pub lookup_port: Signal<Out, Bit>,
    /// Forget every entry (one clock).
    pub flush: Signal<In, Bit>,
    ram: FifoRam<50, 6>,
    sweep: DFFWithInit<Bits<7>>,
    asked: DFF<Bits<48>>,
    asked2: DFF<Bits<48>>,
    eq_hi: DFF<Bit>,
    eq_mid: DFF<Bit>,
    eq_lo: DFF<Bit>,
    valid: DFF<Bit>,
    port: DFF<Bit>,
}

impl Logic for MacTable {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, asked, asked2, eq_hi, eq_mid, eq_lo, valid, port, sweep);
        self.ram.write_clock.next = self.clock.val();
        self.ram.read_clock.next = self.clock.val();
        self.asked.d.next = self.lookup_mac.val();
        self.ram.read_address.next =
            bit_cast::<6, 48>(self.lookup_mac.val() ^ (self.lookup_mac.val() >> 8) ^ (self.lookup_mac.val() >> 16));
        self.ram.write_address.next =
            bit_cast::<6, 48>(self.learn_mac.val() ^ (self.learn_mac.val() >> 8) ^ (self.learn_mac.val() >> 16));
        self.ram.write_data.next = bit_cast::<50, 48>(self.learn_mac.val())
            | (bit_cast::<50, 1>(self.learn_port.val().into()) << 48)
            | (bit_cast::<50, 1>(true.into()) << 49);
        self.ram.write_enable.next = self.learn_valid.val();
        // The flush: 0..64 write entry `sweep` empty, 64..68 wait out the lookup latency, 68 idle.
        if self.sweep.q.val() < 64 {
            self.ram.write_address.next = self.sweep.q.val().get_bits::<6>(0);
            self.ram.write_data.next = 0.into();
            self.ram.write_enable.next = true;
        }
        if self.sweep.q.val() < 68 {
            self.sweep.d.next = self.sweep.q.val() + 1;
        }
        if self.flush.val() {
            self.sweep.d.next = 0.into();
        }
        self.asked2.d.next = self.asked.q.val();
        // The compare in three registered 16-bit parts, ANDed at the output.
        self.eq_hi.d.next = self.ram.read_data.val().get_bits::<16>(32) == self.asked2.q.val().get_bits::<16>(32);
        self.eq_mid.d.next = self.ram.read_data.val().get_bits::<16>(16) == self.asked2.q.val().get_bits::<16>(16);
        self.eq_lo.d.next = self.ram.read_data.val().get_bits::<16>(0) == self.asked2.q.val().get_bits::<16>(0);
        self.valid.d.next = self.ram.read_data.val().get_bit(49);
        self.port.d.next = self.ram.read_data.val().get_bit(48);
        self.lookup_hit.next = self.valid.q.val()
            & self.eq_hi.q.val()
            & self.eq_mid.q.val()
            & self.eq_lo.q.val()
            & (self.sweep.q.val() == 68);
        self.lookup_port.next = self.port.q.val();
    }
}

impl Default for MacTable {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            learn_valid: Default::default(),
            learn_mac: Default::default(),
            learn_port: Default::default(),
            lookup_mac: Default::default(),
            lookup_hit: Default::default(),
            lookup_port: Default::default(),
            flush: Default::default(),
            ram: Default::default(),
            sweep: DFFWithInit::new(68.into()),
            asked: Default::default(),
            asked2: Default::default(),
            eq_hi: Default::default(),
            eq_mid: Default::default(),
            eq_lo: Default::default(),
            valid: Default::default(),
            port: Default::default(),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn clock(t: &mut MacTable) {
        assert!(simulate(t, 10_000));
        t.clock.next = true.into();
        assert!(simulate(t, 10_000));
        t.clock.next = false.into();
        assert!(simulate(t, 10_000));
    }

    fn learn(t: &mut MacTable, mac: u64, port: bool) {
        t.learn_valid.next = true;
        t.learn_mac.next = mac.into();
        t.learn_port.next = port;
        clock(t);
        t.learn_valid.next = false;
    }

    fn lookup(t: &mut MacTable, mac: u64) -> Option<bool> {
        t.lookup_mac.next = mac.into();
        for _ in 0..3 {
            clock(t);
        }
        assert!(simulate(t, 10_000));
        t.lookup_hit.val().then(|| t.lookup_port.val())
    }

    #[test]
    fn learns_and_forgets_on_flush() {
        let mut t = MacTable::default();
        t.connect_all();
        let macs: Vec<u64> = (0..40u64).map(|i| 0x0200_0000_1000 + i).collect();
        for (i, &m) in macs.iter().enumerate() {
            learn(&mut t, m, i % 2 == 1);
        }
        let hits = macs.iter().enumerate().filter(|&(i, &m)| lookup(&mut t, m) == Some(i % 2 == 1)).count();
        assert_eq!(hits, 40, "learned MACs found (their hashes differ)");
        // Flush: lookups miss at once, and every entry is gone once the sweep is over.
        t.flush.next = true;
        clock(&mut t);
        t.flush.next = false;
        assert_eq!(lookup(&mut t, macs[1]), None, "a lookup during the flush");
        for _ in 0..70 {
            clock(&mut t);
        }
        assert!(macs.iter().all(|&m| lookup(&mut t, m).is_none()), "an entry survived the flush");
        // Learning works again: the port a worker is now reached through.
        learn(&mut t, macs[3], false);
        assert_eq!(lookup(&mut t, macs[3]), Some(false));
    }
}
