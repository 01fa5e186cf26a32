//! Tags received frames with their route and writes them into the port's receive FIFO.
//!
//! In: the receive MAC's frames as 32-bit words (`RxWidth<8>` of `spotagg-hdl` packs the
//! bytes), with the MAC's `good` flag on the last word. Out: [`crate::ethernet::frame_fifo`] writes.
//!
//! The first word is held until the second arrives, so that the whole destination MAC is
//! known before anything is written; every word of the frame then carries the same routing
//! bits:
//!
//! | destination MAC | `to_core` | `to_bridge` |
//! |---|---|---|
//! | the switch's | 1 | 0 |
//! | broadcast or multicast (group bit) | 1 | 1 |
//! | any other unicast | 0 | 1 |
//! | 00-E0-2B-00-00-04 (EDP: EAPS control-VLAN candidates) | 0 | 0 |
//!
//! The last row (route 0, which no other frame has) is for the EAPS node: the router hands
//! those frames to it, not to the core nor straight to the bridge (docs/eaps.md §12).
//!
//! The frame is committed after its last word when `good`, dropped otherwise; a frame of one
//! word is dropped. Words arrive at most one every clock here (one every four from a byte
//! MAC), and the extra word written at the end of a frame uses a clock of the gap. There is
//! no back-pressure: a full FIFO drops the frame and counts it. The inputs and the outputs are
//! registered (two clocks of latency). The destination's last two bytes are compared as their
//! word enters the input registers, so `up` should come from flip-flops (`EthPort` registers
//! the packer's words) for the compare to start and end at flip-flops.

use crate::ethernet::frame_fifo::{word, WORD_BITS};
use rust_hdl::prelude::*;
use spotagg_hdl::word_stream::WordSink;

/// Route tagging in front of a receive FIFO.
#[derive(LogicBlock, Default)]
pub struct RxClassifier {
    /// Receive clock.
    pub clock: Signal<In, Clock>,
    /// The switch's MAC, bytes 0..6 in bits 47..0.
    pub switch_mac: Signal<In, Bits<48>>,
    /// The frame's words (`ready` always: the classifier never waits).
    pub up: WordSink,
    /// With `up.last`: the MAC's verdict.
    pub up_good: Signal<In, Bit>,
    /// FIFO word.
    pub write_data: Signal<Out, Bits<WORD_BITS>>,
    /// FIFO write.
    pub write_enable: Signal<Out, Bit>,
    /// Keep the frame.
    pub write_commit: Signal<Out, Bit>,
    /// Discard the frame.
    pub write_drop: Signal<Out, Bit>,
    r_valid: DFF<Bit>,
    r_data: DFF<Bits<32>>,
    r_last: DFF<Bit>,
    r_bytes: DFF<Bits<3>>,
    r_good: DFF<Bit>,
    /// 0: first word expected, 1: second, 2: streaming, 3: flush the held last word.
    state: DFF<Bits<2>>,
    hold: DFF<Bits<WORD_BITS>>,
    route: DFF<Bits<2>>,
    good: DFF<Bit>,
    incoming: Signal<Local, Bits<WORD_BITS>>,
    /// The first word (destination bytes 0..4) equals the switch MAC's; it has the group bit.
    first_eq: DFF<Bit>,
    first_group: DFF<Bit>,
    /// The first word is 00-E0-2B-00 (the EDP destination's first four bytes).
    first_edp: DFF<Bit>,
    /// Bits 16..32 of the word in `r_data` are the switch MAC's bytes 4..6; are 00-04 (both
    /// compared as the word enters `r_data`, so that the route is two gates from registers).
    r_tail_eq: DFF<Bit>,
    r_tail_edp: DFF<Bit>,
    o_data: DFF<Bits<WORD_BITS>>,
    o_enable: DFF<Bit>,
    o_commit: DFF<Bit>,
    o_drop: DFF<Bit>,
    data: Signal<Local, Bits<WORD_BITS>>,
    enable: Signal<Local, Bit>,
    commit: Signal<Local, Bit>,
    drop: Signal<Local, Bit>,
    new_route: Signal<Local, Bits<2>>,
}

impl Logic for RxClassifier {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            r_valid,
            r_data,
            r_last,
            r_bytes,
            r_good,
            state,
            hold,
            route,
            good,
            first_eq,
            first_group,
            first_edp,
            r_tail_eq,
            r_tail_edp,
            o_data,
            o_enable,
            o_commit,
            o_drop
        );
        self.up.ready.next = true;
        self.r_valid.d.next = self.up.valid.val();
        self.r_data.d.next = self.up.data.val();
        self.r_last.d.next = self.up.last.val();
        self.r_bytes.d.next = self.up.bytes.val();
        self.r_good.d.next = self.up_good.val();
        self.r_tail_eq.d.next = self.up.data.val().get_bits::<16>(16) == self.switch_mac.val().get_bits::<16>(0);
        self.r_tail_edp.d.next = self.up.data.val().get_bits::<16>(16) == 0x0004;
        self.incoming.next = bit_cast::<WORD_BITS, 32>(self.r_data.q.val())
            | (bit_cast::<WORD_BITS, 3>(self.r_bytes.q.val()) << 32)
            | (bit_cast::<WORD_BITS, 1>(self.r_last.q.val().into()) << 35)
            | (bit_cast::<WORD_BITS, 2>(self.route.q.val()) << 36);
        // The destination compare in two steps: the first word's 32 bits when it comes (into
        // `first_eq`, in state 0), the second word's 16 with it.
        self.new_route.next = 2.into();
        if self.first_edp.q.val() & self.r_tail_edp.q.val() {
            self.new_route.next = 0.into();
        } else if self.first_eq.q.val() & self.r_tail_eq.q.val() {
            self.new_route.next = 1.into();
        } else if self.first_group.q.val() {
            self.new_route.next = 3.into();
        }
        self.data.next = self.hold.q.val();
        self.enable.next = false;
        self.commit.next = false;
        self.drop.next = false;
        match self.state.q.val().index() {
            0 => {
                if self.r_valid.q.val() {
                    if self.r_last.q.val() {
                        self.drop.next = true;
                    } else {
                        self.first_eq.d.next = self.r_data.q.val() == self.switch_mac.val().get_bits::<32>(16);
                        self.first_group.d.next = self.r_data.q.val().get_bit(24);
                        self.first_edp.d.next = self.r_data.q.val() == 0x00E0_2B00;
                        self.hold.d.next = bit_cast::<WORD_BITS, 32>(self.r_data.q.val());
                        self.state.d.next = 1.into();
                    }
                }
            }
            1 => {
                if self.r_valid.q.val() {
                    self.route.d.next = self.new_route.val();
                    self.enable.next = true;
                    self.data.next = self.hold.q.val() | (bit_cast::<WORD_BITS, 2>(self.new_route.val()) << 36);
                    self.hold.d.next = bit_cast::<WORD_BITS, 32>(self.r_data.q.val())
                        | (bit_cast::<WORD_BITS, 3>(self.r_bytes.q.val()) << 32)
                        | (bit_cast::<WORD_BITS, 1>(self.r_last.q.val().into()) << 35)
                        | (bit_cast::<WORD_BITS, 2>(self.new_route.val()) << 36);
                    if self.r_last.q.val() {
                        self.good.d.next = self.r_good.q.val();
                        self.state.d.next = 3.into();
                    } else {
                        self.state.d.next = 2.into();
                    }
                }
            }
            2 => {
                if self.r_valid.q.val() {
                    self.enable.next = true;
                    self.hold.d.next = self.incoming.val();
                    if self.r_last.q.val() {
                        self.good.d.next = self.r_good.q.val();
                        self.state.d.next = 3.into();
                    }
                }
            }
            _ => {
                self.enable.next = true;
                self.commit.next = self.good.q.val();
                self.drop.next = !self.good.q.val();
                self.state.d.next = 0.into();
            }
        }
        // The outputs are registered.
        self.o_data.d.next = self.data.val();
        self.o_enable.d.next = self.enable.val();
        self.o_commit.d.next = self.commit.val();
        self.o_drop.d.next = self.drop.val();
        self.write_data.next = self.o_data.q.val();
        self.write_enable.next = self.o_enable.q.val();
        self.write_commit.next = self.o_commit.q.val();
        self.write_drop.next = self.o_drop.q.val();
    }
}

/// Reads the routing bits of a FIFO word (for tests and the router).
pub fn route_of(w: u64) -> (bool, bool) {
    ((w >> word::TO_CORE) & 1 == 1, (w >> word::TO_BRIDGE) & 1 == 1)
}
