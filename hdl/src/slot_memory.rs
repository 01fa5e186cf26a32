//! The slot memory: for every slot and set, k int32 values and the two int8 exponent maxima.
//!
//! Values live in one block RAM of `slots × 2 × (max_payload / 4)` words, word
//! `(slot · 2 + set) · kmax + i` holding element i; the exponents in a second RAM, one word per
//! slot: bits 15..8 `e0` and 7..0 `e1` of set 0, bits 31..24 and 23..16 of set 1.
//!
//! Timing: block RAM, one read and one write port each; read data one cycle after the address
//! (read-first on a collision). Values are never cleared: the first contribution of a round
//! writes them (docs/switch.md §2), so stale values are never read as a sum.

use crate::block_ram::BlockRam;
use crate::config::CoreConfig;
use rust_hdl::prelude::*;

/// Values and exponents of every slot and set.
#[derive(LogicBlock)]
pub struct SlotMemory {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Value read address.
    pub read_address: Signal<In, Bits<16>>,
    /// Value at the previous cycle's read address.
    pub read_data: Signal<Out, Bits<32>>,
    /// Value write address.
    pub write_address: Signal<In, Bits<16>>,
    /// Value to write.
    pub write_data: Signal<In, Bits<32>>,
    /// Value write strobe.
    pub write_enable: Signal<In, Bit>,
    /// Exponent read address (slot).
    pub exp_read_address: Signal<In, Bits<6>>,
    /// Exponents of the slot at the previous cycle's address.
    pub exp_read_data: Signal<Out, Bits<32>>,
    /// Exponent write address (slot).
    pub exp_write_address: Signal<In, Bits<6>>,
    /// Exponents to write.
    pub exp_write_data: Signal<In, Bits<32>>,
    /// Exponent write strobe.
    pub exp_write_enable: Signal<In, Bit>,
    values: BlockRam<16, 32>,
    exponents: BlockRam<6, 32>,
}

impl SlotMemory {
    /// The slot memory of a core.
    pub fn new(config: &CoreConfig) -> Self {
        Self {
            clock: Default::default(),
            read_address: Default::default(),
            read_data: Default::default(),
            write_address: Default::default(),
            write_data: Default::default(),
            write_enable: Default::default(),
            exp_read_address: Default::default(),
            exp_read_data: Default::default(),
            exp_write_address: Default::default(),
            exp_write_data: Default::default(),
            exp_write_enable: Default::default(),
            values: BlockRam::new(config.slot_memory_words()),
            exponents: BlockRam::new(config.slots),
        }
    }
}

impl Logic for SlotMemory {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, values, exponents);
        self.values.read_address.next = self.read_address.val();
        self.read_data.next = self.values.read_data.val();
        self.values.write_address.next = self.write_address.val();
        self.values.write_data.next = self.write_data.val();
        self.values.write_enable.next = self.write_enable.val();
        self.exponents.read_address.next = self.exp_read_address.val();
        self.exp_read_data.next = self.exponents.read_data.val();
        self.exponents.write_address.next = self.exp_write_address.val();
        self.exponents.write_data.next = self.exp_write_data.val();
        self.exponents.write_enable.next = self.exp_write_enable.val();
    }
}
