//! Sends the merged receive stream to the core, to the other port's bridge FIFO, or both,
//! and reports source MACs for learning.
//!
//! In: the receive arbiter's words with the input (port) they come from. A word moves only
//! when every destination its routing bits name can take it (the core's `rx_ready`, the
//! bridge FIFO's `write_ready`), so a frame to both goes to both whole; nothing moves until
//! `enable` (the core's configuration is loaded). Frames to the core leave as the core's
//! 32-bit beats (`bytes` on the last), packed as [`beat`] says. Bridged frames are written unchanged to the FIFO of
//! the *other* port and committed with their last word.
//!
//! Learning: with the third word of every frame (all frames here passed the FCS check) the
//! source MAC (bytes 6..12) and the port are put out for one clock on `learn`, unless the
//! source MAC is a group address. `merge_start`/`merge_port` mark the first word of each frame
//! the core takes and the port it came from (observability for the board tests).

use crate::ethernet::frame_fifo::{FrameWriter, WORD_BITS};
use crate::ethernet::mac_table::MacLearn;
use crate::ethernet::stream::{beat, StreamSink, StreamSource};
use rust_hdl::prelude::*;

/// The receive router.
#[derive(LogicBlock, Default)]
pub struct RxRouter {
    /// Core clock.
    pub clock: Signal<In, Clock>,
    /// Let frames through.
    pub enable: Signal<In, Bit>,
    /// The merged words.
    pub up: StreamSink<WORD_BITS>,
    /// Port the word came in on.
    pub up_source: Signal<In, Bit>,
    /// The core's beats ([`beat`] layout).
    pub core: StreamSource<{ beat::BITS }>,
    /// Bridge FIFO of each port (port 0's takes the frames from port 1, and the other way).
    pub bridge: [FrameWriter; 2],
    /// A source MAC was seen on a port.
    pub learn: MacLearn,
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
        self.to_core.next = self.up.data.val().get_bit(36);
        self.to_bridge.next = self.up.data.val().get_bit(37);
        if self.up_source.val() {
            self.bridge_ready.next = self.bridge[0].ready.val();
        } else {
            self.bridge_ready.next = self.bridge[1].ready.val();
        }
        self.up.ready.next = self.enable.val()
            & (!self.to_core.val() | self.core.ready.val())
            & (!self.to_bridge.val() | self.bridge_ready.val());
        self.go.next = self.up.valid.val()
            & self.enable.val()
            & (!self.to_core.val() | self.core.ready.val())
            & (!self.to_bridge.val() | self.bridge_ready.val());
        self.core.valid.next = self.up.valid.val()
            & self.enable.val()
            & self.to_core.val()
            & (!self.to_bridge.val() | self.bridge_ready.val());
        self.core.data.next = bit_cast::<{ beat::BITS }, 32>(self.up.data.val().get_bits::<32>(0))
            | (bit_cast::<{ beat::BITS }, 1>(self.up.data.val().get_bit(35).into()) << 32)
            | (bit_cast::<{ beat::BITS }, 3>(self.up.data.val().get_bits::<3>(32)) << 33);
        self.bridge[0].data.next = self.up.data.val();
        self.bridge[1].data.next = self.up.data.val();
        self.bridge[0].enable.next = self.go.val() & self.to_bridge.val() & self.up_source.val();
        self.bridge[1].enable.next = self.go.val() & self.to_bridge.val() & !self.up_source.val();
        self.bridge[0].commit.next =
            self.go.val() & self.to_bridge.val() & self.up_source.val() & self.up.data.val().get_bit(35);
        self.bridge[1].commit.next =
            self.go.val() & self.to_bridge.val() & !self.up_source.val() & self.up.data.val().get_bit(35);
        self.learn.valid.next = false;
        self.learn.mac.next =
            (bit_cast::<48, 16>(self.src_hi.q.val()) << 32) | bit_cast::<48, 32>(self.up.data.val().get_bits::<32>(0));
        self.learn.port.next = self.up_source.val();
        self.merge_start.next = self.go.val() & self.to_core.val() & (self.words.q.val() == 0);
        self.merge_port.next = self.up_source.val();
        if self.go.val() {
            if self.up.data.val().get_bit(35) {
                self.words.d.next = 0.into();
            } else if self.words.q.val() != 3 {
                self.words.d.next = self.words.q.val() + 1;
            }
            if self.words.q.val() == 1 {
                self.src_hi.d.next = self.up.data.val().get_bits::<16>(0);
            }
            if self.words.q.val() == 2 {
                self.learn.valid.next = !self.src_hi.q.val().get_bit(8);
            }
        }
    }
}
