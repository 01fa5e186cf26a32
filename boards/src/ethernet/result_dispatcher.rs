//! Sends each frame the core emits to the port its destination MAC was last seen on.
//!
//! In: the core's transmit beats (32 bits, `bytes` on the last). Out: writes into the two
//! ports' result FIFOs ([`crate::ethernet::frame_fifo`] words). The first two words are held while the
//! destination MAC (from those registers) is looked up in the [`crate::ethernet::mac_table::MacTable`]
//! (three clocks); a hit sends the frame
//! to that port, a miss or a group (broadcast/multicast) destination to both. A frame to both
//! moves a word only when both FIFOs have room, so the two copies are identical.
//!
//! Timing: seven clocks of overhead per frame (hold, hold, four of lookup, then the held words), then
//! one word a clock; `in_ready` is low while a FIFO is full (the core waits).

use crate::ethernet::frame_fifo::WORD_BITS;
use rust_hdl::prelude::*;

/// The result dispatcher.
#[derive(LogicBlock, Default)]
pub struct ResultDispatcher {
    /// Core clock.
    pub clock: Signal<In, Clock>,
    /// Beat valid.
    pub in_valid: Signal<In, Bit>,
    /// Beat.
    pub in_data: Signal<In, Bits<32>>,
    /// Last beat.
    pub in_last: Signal<In, Bit>,
    /// Valid bytes of the last beat.
    pub in_bytes: Signal<In, Bits<4>>,
    /// Beat taken.
    pub in_ready: Signal<Out, Bit>,
    /// MAC to look up.
    pub lookup_mac: Signal<Out, Bits<48>>,
    /// Lookup result (three clocks later).
    pub lookup_hit: Signal<In, Bit>,
    /// Port of the hit.
    pub lookup_port: Signal<In, Bit>,
    /// Port 0 result FIFO: word.
    pub out0_data: Signal<Out, Bits<WORD_BITS>>,
    /// Port 0: write.
    pub out0_enable: Signal<Out, Bit>,
    /// Port 0: commit.
    pub out0_commit: Signal<Out, Bit>,
    /// Port 0: room.
    pub out0_ready: Signal<In, Bit>,
    /// Port 1 result FIFO: word.
    pub out1_data: Signal<Out, Bits<WORD_BITS>>,
    /// Port 1: write.
    pub out1_enable: Signal<Out, Bit>,
    /// Port 1: commit.
    pub out1_commit: Signal<Out, Bit>,
    /// Port 1: room.
    pub out1_ready: Signal<In, Bit>,
    /// Frames sent to both ports (group destination, or a MAC not in the table).
    pub flooded: Signal<Out, Bits<32>>,
    /// 0 first word, 1 second word, 2 lookup, 3 write first, 4 write second, 5 stream.
    state: DFF<Bits<3>>,
    lookup_wait: DFF<Bits<2>>,
    hold0: DFF<Bits<WORD_BITS>>,
    hold1: DFF<Bits<WORD_BITS>>,
    mask: DFF<Bits<2>>,
    floods: DFF<Bits<32>>,
    incoming: Signal<Local, Bits<WORD_BITS>>,
    room: Signal<Local, Bit>,
    data: Signal<Local, Bits<WORD_BITS>>,
    write: Signal<Local, Bit>,
    commit: Signal<Local, Bit>,
}

impl Logic for ResultDispatcher {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, lookup_wait, hold0, hold1, mask, floods);
        self.incoming.next = bit_cast::<WORD_BITS, 32>(self.in_data.val())
            | (bit_cast::<WORD_BITS, 3>(bit_cast::<3, 4>(self.in_bytes.val())) << 32)
            | (bit_cast::<WORD_BITS, 1>(self.in_last.val().into()) << 35);
        self.room.next = (!self.mask.q.val().get_bit(0) | self.out0_ready.val())
            & (!self.mask.q.val().get_bit(1) | self.out1_ready.val());
        self.lookup_mac.next = (bit_cast::<48, WORD_BITS>(self.hold0.q.val() & 0xFFFF_FFFF_u64) << 16)
            | bit_cast::<48, WORD_BITS>((self.hold1.q.val() & 0xFFFF_FFFF_u64) >> 16);
        self.flooded.next = self.floods.q.val();
        self.in_ready.next = false;
        self.data.next = self.hold0.q.val();
        self.write.next = false;
        self.commit.next = false;
        match self.state.q.val().index() {
            0 => {
                self.in_ready.next = true;
                if self.in_valid.val() {
                    self.hold0.d.next = self.incoming.val();
                    self.state.d.next = 1.into();
                }
            }
            1 => {
                self.in_ready.next = true;
                if self.in_valid.val() {
                    self.hold1.d.next = self.incoming.val();
                    self.state.d.next = 2.into();
                }
            }
            2 => {
                // The MAC has been presented since entering this state; its result is in after
                // three clocks.
                self.lookup_wait.d.next = self.lookup_wait.q.val() + 1;
                if self.lookup_wait.q.val() == 3 {
                    if self.hold0.q.val().get_bit(24) | !self.lookup_hit.val() {
                        self.mask.d.next = 3.into();
                        self.floods.d.next = self.floods.q.val() + 1;
                    } else if self.lookup_port.val() {
                        self.mask.d.next = 2.into();
                    } else {
                        self.mask.d.next = 1.into();
                    }
                    self.state.d.next = 3.into();
                }
            }
            3 => {
                if self.room.val() {
                    self.write.next = true;
                    self.state.d.next = 4.into();
                }
            }
            4 => {
                self.data.next = self.hold1.q.val();
                if self.room.val() {
                    self.write.next = true;
                    if self.hold1.q.val().get_bit(35) {
                        self.commit.next = true;
                        self.state.d.next = 0.into();
                    } else {
                        self.state.d.next = 5.into();
                    }
                }
            }
            _ => {
                self.data.next = self.incoming.val();
                self.in_ready.next = self.room.val();
                if self.room.val() & self.in_valid.val() {
                    self.write.next = true;
                    if self.in_last.val() {
                        self.commit.next = true;
                        self.state.d.next = 0.into();
                    }
                }
            }
        }
        self.out0_data.next = self.data.val();
        self.out1_data.next = self.data.val();
        self.out0_enable.next = self.write.val() & self.mask.q.val().get_bit(0);
        self.out1_enable.next = self.write.val() & self.mask.q.val().get_bit(1);
        self.out0_commit.next = self.commit.val() & self.mask.q.val().get_bit(0);
        self.out1_commit.next = self.commit.val() & self.mask.q.val().get_bit(1);
    }
}
