//! Which port a MAC address was last seen on: a direct-mapped table of 64 entries.
//!
//! Learning writes `{valid, port, mac}` at the entry chosen by a hash of the MAC (the XOR of
//! its last three bytes, low six bits); a later MAC with the same hash replaces the entry.
//! Lookup: present `lookup.mac`; three clocks later `lookup.hit` says whether the entry held
//! that MAC and `lookup.port` its port (RAM read, the RAM's output register, registered
//! compare in three parts: `lookup.hit` is one LUT of flip-flops). A miss (never seen, or evicted) makes the caller send
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

/// A learner's end of the table: `mac` was seen on `port` (one clock with `valid`).
#[derive(LogicInterface, Default)]
#[join = "MacLearnTable"]
pub struct MacLearn {
    /// Learn a MAC.
    pub valid: Signal<Out, Bit>,
    /// The MAC.
    pub mac: Signal<Out, Bits<48>>,
    /// The port it was seen on.
    pub port: Signal<Out, Bit>,
}

/// The table's end of a [`MacLearn`].
#[derive(LogicInterface, Default)]
#[join = "MacLearn"]
pub struct MacLearnTable {
    /// Learn a MAC.
    pub valid: Signal<In, Bit>,
    /// The MAC.
    pub mac: Signal<In, Bits<48>>,
    /// The port it was seen on.
    pub port: Signal<In, Bit>,
}

/// An asker's end of the table: present `mac`; three clocks later `hit` says whether it is in
/// the table and `port` where.
#[derive(LogicInterface, Default)]
#[join = "MacLookupTable"]
pub struct MacLookup {
    /// MAC to look up.
    pub mac: Signal<Out, Bits<48>>,
    /// Three clocks after `mac`: it is in the table.
    pub hit: Signal<In, Bit>,
    /// Its port.
    pub port: Signal<In, Bit>,
}

/// The table's end of a [`MacLookup`].
#[derive(LogicInterface, Default)]
#[join = "MacLookup"]
pub struct MacLookupTable {
    /// MAC to look up.
    pub mac: Signal<In, Bits<48>>,
    /// Three clocks after `mac`: it is in the table.
    pub hit: Signal<Out, Bit>,
    /// Its port.
    pub port: Signal<Out, Bit>,
}

/// The MAC table.
#[derive(LogicBlock)]
pub struct MacTable {
    /// Core clock.
    pub clock: Signal<In, Clock>,
    /// Learning.
    pub learn: MacLearnTable,
    /// Lookups.
    pub lookup: MacLookupTable,
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
        self.asked.d.next = self.lookup.mac.val();
        self.ram.read_address.next =
            bit_cast::<6, 48>(self.lookup.mac.val() ^ (self.lookup.mac.val() >> 8) ^ (self.lookup.mac.val() >> 16));
        self.ram.write_address.next =
            bit_cast::<6, 48>(self.learn.mac.val() ^ (self.learn.mac.val() >> 8) ^ (self.learn.mac.val() >> 16));
        self.ram.write_data.next = bit_cast::<50, 48>(self.learn.mac.val())
            | (bit_cast::<50, 1>(self.learn.port.val().into()) << 48)
            | (bit_cast::<50, 1>(true.into()) << 49);
        self.ram.write_enable.next = self.learn.valid.val();
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
        self.lookup.hit.next = self.valid.q.val()
            & self.eq_hi.q.val()
            & self.eq_mid.q.val()
            & self.eq_lo.q.val()
            & (self.sweep.q.val() == 68);
        self.lookup.port.next = self.port.q.val();
    }
}

impl Default for MacTable {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            learn: Default::default(),
            lookup: Default::default(),
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
        t.learn.valid.next = true;
        t.learn.mac.next = mac.into();
        t.learn.port.next = port;
        clock(t);
        t.learn.valid.next = false;
    }

    fn lookup(t: &mut MacTable, mac: u64) -> Option<bool> {
        t.lookup.mac.next = mac.into();
        for _ in 0..3 {
            clock(t);
        }
        assert!(simulate(t, 10_000));
        t.lookup.hit.val().then(|| t.lookup.port.val())
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
