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
//!
//! EAPS (docs/eaps.md §12): a frame with route 0 (destination 00-E0-2B-00-00-04, the
//! classifier's mark) goes, while `node_on`, to the EAPS node (`node`, with its port on
//! `node_port`) and is written at the same time, uncommitted, into the other port's bridge
//! FIFO; the router then waits (taking nothing) for the node's verdict on that frame: the node
//! (behind its clock crossing) asks for it when it takes the frame's last word and answers
//! once it has dealt with the frame, `node_done` for a clock with `node_pass` (bit `p`: pass the
//! frame that came in on port `p`). The router commits the frame there if the verdict passes
//! it for its port (another EDP frame to pass on unchanged), or drops it (a PDU, which the
//! node forwards itself, or a frame it rejects). Without `node_on` such a frame is bridged like
//! any other unicast.
//! A bridged frame is committed only if `bridge_pass` (the VLAN gate's verdict on the
//! frame's 802.1Q tag, `tag_tagged`/`tag_vid`, taken from the fourth word) is high at its
//! last word, and dropped otherwise. Learning skips route-0 frames.

use crate::ethernet::frame_fifo::{FrameWriter, WORD_BITS};
use crate::ethernet::mac_table::MacLearn;
use crate::ethernet::stream::{beat, ValidReadySink, ValidReadySource};
use rust_hdl::prelude::*;

/// The receive router.
#[derive(LogicBlock, Default)]
pub struct RxRouter {
    /// Core clock.
    pub clock: Signal<In, Clock>,
    /// Let frames through.
    pub enable: Signal<In, Bit>,
    /// The merged words.
    pub up: ValidReadySink<WORD_BITS>,
    /// Port the word came in on.
    pub up_source: Signal<In, Bit>,
    /// The core's beats ([`beat`] layout).
    pub core: ValidReadySource<{ beat::BITS }>,
    /// Bridge FIFO of each port (port 0's takes the frames from port 1, and the other way).
    pub bridge: [FrameWriter; 2],
    /// A source MAC was seen on a port.
    pub learn: MacLearn,
    /// The core takes the first word of a frame.
    pub merge_start: Signal<Out, Bit>,
    /// Its port.
    pub merge_port: Signal<Out, Bit>,
    /// The EAPS node is on: route-0 frames go to it.
    pub node_on: Signal<In, Bit>,
    /// Route-0 frames for the node (FIFO words).
    pub node: ValidReadySource<WORD_BITS>,
    /// The port of the node's frame.
    pub node_port: Signal<Out, Bit>,
    /// The node's verdict on the frame last handed to it has arrived (one clock).
    pub node_done: Signal<In, Bit>,
    /// That verdict: pass the frame that came in on port `p` (bit `p`; with `node_done`).
    pub node_pass: Signal<In, Bits<2>>,
    /// The current frame has an 802.1Q tag (from its fourth word on).
    pub tag_tagged: Signal<Out, Bit>,
    /// Its VID.
    pub tag_vid: Signal<Out, Bits<12>>,
    /// The VLAN gate lets the current frame from its port out of the other.
    pub bridge_pass: Signal<In, Bit>,
    words: DFF<Bits<3>>,
    src_hi: DFF<Bits<16>>,
    tagged_q: DFF<Bit>,
    vid_q: DFF<Bits<12>>,
    deciding: DFF<Bit>,
    dport: DFF<Bit>,
    to_core: Signal<Local, Bit>,
    to_bridge: Signal<Local, Bit>,
    is_edp: Signal<Local, Bit>,
    to_node: Signal<Local, Bit>,
    bridge_ready: Signal<Local, Bit>,
    node_ready: Signal<Local, Bit>,
    go: Signal<Local, Bit>,
    last: Signal<Local, Bit>,
    decide: Signal<Local, Bit>,
    keep: Signal<Local, Bit>,
}

impl Logic for RxRouter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, words, src_hi, tagged_q, vid_q, deciding, dport);
        self.is_edp.next = !self.up.data.val().get_bit(36) & !self.up.data.val().get_bit(37);
        self.to_node.next = self.is_edp.val() & self.node_on.val();
        self.to_core.next = self.up.data.val().get_bit(36);
        // Route-0 frames are written to the other port's bridge FIFO too (held there for the
        // node's verdict when it is on, bridged as unicast when it is off).
        self.to_bridge.next = self.up.data.val().get_bit(37) | self.is_edp.val();
        self.last.next = self.up.data.val().get_bit(35);
        if self.up_source.val() {
            self.bridge_ready.next = self.bridge[0].ready.val();
        } else {
            self.bridge_ready.next = self.bridge[1].ready.val();
        }
        self.node_ready.next = !self.to_node.val() | self.node.ready.val();
        self.up.ready.next = self.enable.val()
            & !self.deciding.q.val()
            & (!self.to_core.val() | self.core.ready.val())
            & (!self.to_bridge.val() | self.bridge_ready.val())
            & self.node_ready.val();
        self.go.next = self.up.valid.val()
            & self.enable.val()
            & !self.deciding.q.val()
            & (!self.to_core.val() | self.core.ready.val())
            & (!self.to_bridge.val() | self.bridge_ready.val())
            & self.node_ready.val();
        self.core.valid.next = self.up.valid.val()
            & self.enable.val()
            & !self.deciding.q.val()
            & self.to_core.val()
            & (!self.to_bridge.val() | self.bridge_ready.val());
        self.core.data.next = bit_cast::<{ beat::BITS }, 32>(self.up.data.val().get_bits::<32>(0))
            | (bit_cast::<{ beat::BITS }, 1>(self.up.data.val().get_bit(35).into()) << 32)
            | (bit_cast::<{ beat::BITS }, 3>(self.up.data.val().get_bits::<3>(32)) << 33);
        self.node.valid.next = self.up.valid.val()
            & self.enable.val()
            & !self.deciding.q.val()
            & self.to_node.val()
            & self.bridge_ready.val();
        self.node.data.next = self.up.data.val();
        // The port of the frame whose bytes the node is taking: during its first word (which the
        // node's byte adapter takes a byte a clock, so the word is held four clocks before
        // `go`) `dport` still names the previous frame's port; the source is this frame's.
        self.node_port.next = self.dport.q.val();
        if self.words.q.val() == 0 {
            self.node_port.next = self.up_source.val();
        }
        self.tag_tagged.next = self.tagged_q.q.val();
        self.tag_vid.next = self.vid_q.q.val();
        // The node's verdict on the held frame.
        self.decide.next = self.deciding.q.val() & self.node_done.val();
        if self.dport.q.val() {
            self.keep.next = self.node_pass.val().get_bit(1);
        } else {
            self.keep.next = self.node_pass.val().get_bit(0);
        }
        if self.decide.val() {
            self.deciding.d.next = false;
        }
        self.bridge[0].data.next = self.up.data.val();
        self.bridge[1].data.next = self.up.data.val();
        self.bridge[0].enable.next = self.go.val() & self.to_bridge.val() & self.up_source.val();
        self.bridge[1].enable.next = self.go.val() & self.to_bridge.val() & !self.up_source.val();
        // A bridged frame's end: kept if the gate lets it through; a node frame's end waits.
        self.bridge[0].commit.next = self.go.val()
            & self.to_bridge.val()
            & !self.to_node.val()
            & self.up_source.val()
            & self.last.val()
            & self.bridge_pass.val();
        self.bridge[1].commit.next = self.go.val()
            & self.to_bridge.val()
            & !self.to_node.val()
            & !self.up_source.val()
            & self.last.val()
            & self.bridge_pass.val();
        self.bridge[0].drop.next = self.go.val()
            & self.to_bridge.val()
            & !self.to_node.val()
            & self.up_source.val()
            & self.last.val()
            & !self.bridge_pass.val();
        self.bridge[1].drop.next = self.go.val()
            & self.to_bridge.val()
            & !self.to_node.val()
            & !self.up_source.val()
            & self.last.val()
            & !self.bridge_pass.val();
        if self.decide.val() {
            if self.dport.q.val() {
                self.bridge[0].commit.next = self.keep.val();
                self.bridge[0].drop.next = !self.keep.val();
            } else {
                self.bridge[1].commit.next = self.keep.val();
                self.bridge[1].drop.next = !self.keep.val();
            }
        }
        self.learn.valid.next = false;
        self.learn.mac.next =
            (bit_cast::<48, 16>(self.src_hi.q.val()) << 32) | bit_cast::<48, 32>(self.up.data.val().get_bits::<32>(0));
        self.learn.port.next = self.up_source.val();
        self.merge_start.next = self.go.val() & self.to_core.val() & (self.words.q.val() == 0);
        self.merge_port.next = self.up_source.val();
        if self.go.val() {
            if self.last.val() {
                self.words.d.next = 0.into();
            } else if self.words.q.val() != 4 {
                self.words.d.next = self.words.q.val() + 1;
            }
            if self.words.q.val() == 0 {
                self.dport.d.next = self.up_source.val();
            }
            if self.words.q.val() == 1 {
                self.src_hi.d.next = self.up.data.val().get_bits::<16>(0);
            }
            if self.words.q.val() == 2 {
                self.learn.valid.next = !self.src_hi.q.val().get_bit(8) & !self.is_edp.val();
            }
            if self.words.q.val() == 3 {
                self.tagged_q.d.next = self.up.data.val().get_bits::<16>(16) == 0x8100;
                self.vid_q.d.next = self.up.data.val().get_bits::<12>(0);
            }
            if self.to_node.val() & self.last.val() {
                self.deciding.d.next = true;
            }
        }
    }
}
