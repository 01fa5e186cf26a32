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

use crate::ecp5::FifoRam;
use rust_hdl::prelude::*;

/// The MAC table.
#[derive(LogicBlock, Default)]
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
    ram: FifoRam<50, 6>,
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
        dff_setup!(self, clock, asked, asked2, eq_hi, eq_mid, eq_lo, valid, port);
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
        self.asked2.d.next = self.asked.q.val();
        // The compare in three registered 16-bit parts, ANDed at the output.
        self.eq_hi.d.next = self.ram.read_data.val().get_bits::<16>(32) == self.asked2.q.val().get_bits::<16>(32);
        self.eq_mid.d.next = self.ram.read_data.val().get_bits::<16>(16) == self.asked2.q.val().get_bits::<16>(16);
        self.eq_lo.d.next = self.ram.read_data.val().get_bits::<16>(0) == self.asked2.q.val().get_bits::<16>(0);
        self.valid.d.next = self.ram.read_data.val().get_bit(49);
        self.port.d.next = self.ram.read_data.val().get_bit(48);
        self.lookup_hit.next = self.valid.q.val() & self.eq_hi.q.val() & self.eq_mid.q.val() & self.eq_lo.q.val();
        self.lookup_port.next = self.port.q.val();
    }
}
