//! Sends the merged receive stream to the core, to the other port's bridge FIFO, or both,
//! and reports source MACs for learning.
//!
//! In: the receive arbiter's words with the input (port) they come from. A word moves only
//! when every destination its routing bits name can take it (the core's `rx_ready`, the
//! bridge FIFO's `write_ready`), so a frame to both goes to both whole; nothing moves until
//! `enable` (the core's configuration is loaded). Frames to the core leave as the core's
//! 32-bit beats (`bytes` on the last). Bridged frames are written unchanged to the FIFO of
//! the *other* port and committed with their last word.
//!
//! Learning: with the third word of every frame (all frames here passed the FCS check) the
//! source MAC (bytes 6..12) and the port are put out for one clock on `learn_*`, unless the
//! source MAC is a group address. `merge_start`/`merge_port` mark the first word of each frame
//! the core takes and the port it came from (observability for the board tests).

use crate::ethernet::frame_fifo::WORD_BITS;
use rust_hdl::prelude::*;

/// The receive router.
#[derive(LogicBlock, Default)]
pub struct RxRouter {
    /// Core clock.
    pub clock: Signal<In, Clock>,
    /// Let frames through.
    pub enable: Signal<In, Bit>,
    /// Word valid.
    pub in_valid: Signal<In, Bit>,
    /// Word.
    pub in_data: Signal<In, Bits<WORD_BITS>>,
    /// Port the word came in on.
    pub in_source: Signal<In, Bit>,
    /// Word taken.
    pub in_ready: Signal<Out, Bit>,
    /// Core beat valid.
    pub core_valid: Signal<Out, Bit>,
    /// Core beat.
    pub core_data: Signal<Out, Bits<32>>,
    /// Core last beat.
    pub core_last: Signal<Out, Bit>,
    /// Core valid bytes of the last beat.
    pub core_bytes: Signal<Out, Bits<4>>,
    /// Core takes the beat.
    pub core_ready: Signal<In, Bit>,
    /// Bridge FIFO of port 0 (frames from port 1): word.
    pub bridge0_data: Signal<Out, Bits<WORD_BITS>>,
    /// Bridge FIFO of port 0: write.
    pub bridge0_enable: Signal<Out, Bit>,
    /// Bridge FIFO of port 0: commit.
    pub bridge0_commit: Signal<Out, Bit>,
    /// Bridge FIFO of port 0: room.
    pub bridge0_ready: Signal<In, Bit>,
    /// Bridge FIFO of port 1 (frames from port 0): word.
    pub bridge1_data: Signal<Out, Bits<WORD_BITS>>,
    /// Bridge FIFO of port 1: write.
    pub bridge1_enable: Signal<Out, Bit>,
    /// Bridge FIFO of port 1: commit.
    pub bridge1_commit: Signal<Out, Bit>,
    /// Bridge FIFO of port 1: room.
    pub bridge1_ready: Signal<In, Bit>,
    /// A source MAC was seen.
    pub learn_valid: Signal<Out, Bit>,
    /// The source MAC.
    pub learn_mac: Signal<Out, Bits<48>>,
    /// The port it was seen on.
    pub learn_port: Signal<Out, Bit>,
    /// The core takes the first word of a frame.
    pub merge_start: Signal<Out, Bit>,
    /// Its port.
    pub merge_port: Signal<Out, Bit>,
    words: DFF<Bits<2>>,
    src_hi: DFF<Bits<16>>,
    to_core: Signal<Local, Bit>,
    to_bridge: Signal<Local, Bit>,
    bridge_ready: Signal<Local, Bit>,
    go: Signal<Local, Bit>,
}

impl Logic for RxRouter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, words, src_hi);
        self.to_core.next = self.in_data.val().get_bit(36);
        self.to_bridge.next = self.in_data.val().get_bit(37);
        if self.in_source.val() {
            self.bridge_ready.next = self.bridge0_ready.val();
        } else {
            self.bridge_ready.next = self.bridge1_ready.val();
        }
        self.in_ready.next = self.enable.val()
            & (!self.to_core.val() | self.core_ready.val())
            & (!self.to_bridge.val() | self.bridge_ready.val());
        self.go.next = self.in_valid.val()
            & self.enable.val()
            & (!self.to_core.val() | self.core_ready.val())
            & (!self.to_bridge.val() | self.bridge_ready.val());
        self.core_valid.next = self.in_valid.val()
            & self.enable.val()
            & self.to_core.val()
            & (!self.to_bridge.val() | self.bridge_ready.val());
        self.core_data.next = self.in_data.val().get_bits::<32>(0);
        self.core_last.next = self.in_data.val().get_bit(35);
        self.core_bytes.next = bit_cast::<4, 3>(self.in_data.val().get_bits::<3>(32));
        self.bridge0_data.next = self.in_data.val();
        self.bridge1_data.next = self.in_data.val();
        self.bridge0_enable.next = self.go.val() & self.to_bridge.val() & self.in_source.val();
        self.bridge1_enable.next = self.go.val() & self.to_bridge.val() & !self.in_source.val();
        self.bridge0_commit.next =
            self.go.val() & self.to_bridge.val() & self.in_source.val() & self.in_data.val().get_bit(35);
        self.bridge1_commit.next =
            self.go.val() & self.to_bridge.val() & !self.in_source.val() & self.in_data.val().get_bit(35);
        self.learn_valid.next = false;
        self.learn_mac.next =
            (bit_cast::<48, 16>(self.src_hi.q.val()) << 32) | bit_cast::<48, 32>(self.in_data.val().get_bits::<32>(0));
        self.learn_port.next = self.in_source.val();
        self.merge_start.next = self.go.val() & self.to_core.val() & (self.words.q.val() == 0);
        self.merge_port.next = self.in_source.val();
        if self.go.val() {
            if self.in_data.val().get_bit(35) {
                self.words.d.next = 0.into();
            } else if self.words.q.val() != 3 {
                self.words.d.next = self.words.q.val() + 1;
            }
            if self.words.q.val() == 1 {
                self.src_hi.d.next = self.in_data.val().get_bits::<16>(0);
            }
            if self.words.q.val() == 2 {
                self.learn_valid.next = !self.src_hi.q.val().get_bit(8);
            }
        }
    }
}
