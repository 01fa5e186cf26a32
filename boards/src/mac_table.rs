//! Which port a MAC address was last seen on: a direct-mapped table of 64 entries.
//!
//! Learning writes `{valid, port, mac}` at the entry chosen by a hash of the MAC (the XOR of
//! its last three bytes, low six bits); a later MAC with the same hash replaces the entry.
//! Lookup: present `lookup_mac`; one clock later `lookup_hit` says whether the entry holds
//! that MAC and `lookup_port` its port. A miss (never seen, or evicted) makes the caller send
//! to every port, so a collision costs bandwidth, never a lost frame.
//!
//! The table is a block RAM (LUT RAM at this size) in the core clock domain; it starts empty.

use spotagg_hdl::block_ram::BlockRam;
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
    /// One clock after `lookup_mac`: it is in the table.
    pub lookup_hit: Signal<Out, Bit>,
    /// Its port.
    pub lookup_port: Signal<Out, Bit>,
    ram: BlockRam<6, 50>,
    asked: DFF<Bits<48>>,
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
            ram: BlockRam::new(64),
            asked: Default::default(),
        }
    }
}

impl Logic for MacTable {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, asked);
        clock!(self, clock, ram);
        self.asked.d.next = self.lookup_mac.val();
        self.ram.read_address.next =
            bit_cast::<6, 48>(self.lookup_mac.val() ^ (self.lookup_mac.val() >> 8) ^ (self.lookup_mac.val() >> 16));
        self.ram.write_address.next =
            bit_cast::<6, 48>(self.learn_mac.val() ^ (self.learn_mac.val() >> 8) ^ (self.learn_mac.val() >> 16));
        self.ram.write_data.next = bit_cast::<50, 48>(self.learn_mac.val())
            | (bit_cast::<50, 1>(self.learn_port.val().into()) << 48)
            | (bit_cast::<50, 1>(true.into()) << 49);
        self.ram.write_enable.next = self.learn_valid.val();
        self.lookup_hit.next = self.ram.read_data.val().get_bit(49)
            & (self.ram.read_data.val().get_bits::<48>(0) == self.asked.q.val());
        self.lookup_port.next = self.ram.read_data.val().get_bit(48);
    }
}
