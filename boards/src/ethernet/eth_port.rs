//! One Ethernet port of the board at the GMII byte interface: receive MAC, route tagging and
//! the receive FIFO (crossing from the port's receive clock into the core clock), and on the
//! transmit side the result FIFO and the bridge FIFO, merged by whole frames into the
//! transmit MAC.
//!
//! ```text
//! GMII rx ─ MacRx ─ RxWidth<8> ─ word register ─ RxClassifier ─ rx FIFO ══(rx clock | core clock)══ rxq
//! res   ─ result FIFO ══(core clock | tx clock)══┐
//!                                                ├─ FrameArbiter ─ TxWidth<8> ─ StreamSlice ─ MacTx ─ GMII tx
//! br    ─ bridge FIFO ══(core clock | tx clock)══┘                                     (tx clock)
//! ```
//!
//! Capacity: receive FIFO 2048 words (8 KiB in 4 DP16KD: the words are kept in 36 bits, the
//! routing bits in place of the byte count on every word but the last, and expanded to
//! [`WORD_BITS`] on the way out, the routing bits of the frame's first word on every word),
//! result FIFO 2048 words (8 KiB, a burst of results while the port is busy: 4 DP16KD), bridge
//! FIFO 512 words (1 DP16KD); the transmit FIFOs keep 36 bits a word (no routing bits). Each
//! holds at least one frame of the largest size. Three clock domains: the receive side in the
//! PHY's receive clock, the FIFOs' core-facing ends in the core clock, the transmit side (the
//! transmit FIFOs' read ends, the merge, the MAC) in the 125 MHz transmit clock; every crossing
//! is a FIFO's Gray-coded pointers. The counters are read as quasi-static values from the core
//! clock (each counts in its own domain).
//!
//! The packer's words reach the classifier through a register (one receive clock of latency):
//! the packer builds a word from its accumulator and the byte that completes it, and the
//! classifier compares the word's destination bytes as it takes it; the two together were the
//! receive clocks' deepest path on the board with the EAPS node (8.59 ns, 8 cells, eth1_rxc
//! 116.48 MHz at seed 1). The classifier never waits, so the register needs no `ready`.

use crate::ethernet::frame_arbiter::FrameArbiter;
use crate::ethernet::frame_fifo::{FrameFifo, FrameWriteSink, WORD_BITS};
use crate::ethernet::gmii::GmiiPort;
use crate::ethernet::mac_rx::MacRx;
use crate::ethernet::mac_tx::MacTx;
use crate::ethernet::rx_classifier::RxClassifier;
use crate::ethernet::stream::ValidReadySource;
use crate::ethernet::stream_slice::StreamSlice;
use rust_hdl::prelude::*;
use spotagg_hdl::stream_width::{RxWidth, TxWidth};

/// One port.
#[derive(LogicBlock, Default)]
pub struct EthPort {
    /// The GMII port (its receive clock clocks the receive side).
    pub gmii: GmiiPort,
    /// The switch's MAC (quasi-static).
    pub switch_mac: Signal<In, Bits<48>>,
    /// Core clock (the FIFOs' core-facing ends).
    pub core_clock: Signal<In, Clock>,
    /// Transmit clock (125 MHz on the board): the transmit FIFOs' read ends, the merge and
    /// the transmit MAC.
    pub tx_clock: Signal<In, Clock>,
    /// Received frames (core clock domain).
    pub rxq: ValidReadySource<WORD_BITS>,
    /// Received frames: committed words waiting (core clock domain, for the merge).
    pub rxq_fill: Signal<Out, Bits<16>>,
    /// Result FIFO (core clock domain).
    pub res: FrameWriteSink,
    /// Bridge FIFO (core clock domain).
    pub br: FrameWriteSink,
    /// Counter index (the module's table).
    pub counter_address: Signal<In, Bits<3>>,
    /// Counter value (combinational; each counter in its own clock domain).
    pub counter_data: Signal<Out, Bits<32>>,
    mac_rx: MacRx,
    pack: RxWidth<8>,
    /// The packer's word, `last`, byte count and the MAC's `good`, registered for the classifier.
    word_valid: DFF<Bit>,
    word_data: DFF<Bits<32>>,
    word_last: DFF<Bit>,
    word_bytes: DFF<Bits<3>>,
    word_good: DFF<Bit>,
    classifier: RxClassifier,
    rx_fifo: FrameFifo<36, 11, 12>,
    /// Read side of the receive FIFO: inside a frame (its routing is `route`).
    in_frame: DFF<Bit>,
    route: DFF<Bits<2>>,
    rx_route: Signal<Local, Bits<2>>,
    res_fifo: FrameFifo<36, 11, 12>,
    br_fifo: FrameFifo<36, 9, 10>,
    tx_arbiter: FrameArbiter,
    unpack: TxWidth<8>,
    /// Byte and `last` into the MAC from flip-flops: the MAC's CRC starts from a register, not
    /// from the unpacker's byte multiplexer.
    tx_slice: StreamSlice<9>,
    mac_tx: MacTx,
}

impl Logic for EthPort {
    #[hdl_gen]
    fn update(&mut self) {
        // Receive clock domain.
        self.mac_rx.clock.next = self.gmii.rx_clock.val();
        self.pack.clock.next = self.gmii.rx_clock.val();
        self.classifier.clock.next = self.gmii.rx_clock.val();
        self.rx_fifo.write_clock.next = self.gmii.rx_clock.val();
        self.mac_rx.gmii_rxd.next = self.gmii.rxd.val();
        self.mac_rx.gmii_rx_dv.next = self.gmii.rx_dv.val();
        self.mac_rx.gmii_rx_er.next = self.gmii.rx_er.val();
        self.pack.in_valid.next = self.mac_rx.out_valid.val();
        self.pack.in_data.next = self.mac_rx.out_data.val();
        self.pack.in_last.next = self.mac_rx.out_last.val();
        self.pack.in_bytes.next = 1.into();
        self.classifier.switch_mac.next = self.switch_mac.val();
        self.word_valid.clock.next = self.gmii.rx_clock.val();
        self.word_data.clock.next = self.gmii.rx_clock.val();
        self.word_last.clock.next = self.gmii.rx_clock.val();
        self.word_bytes.clock.next = self.gmii.rx_clock.val();
        self.word_good.clock.next = self.gmii.rx_clock.val();
        self.pack.word.ready.next = true;
        self.word_valid.d.next = self.pack.word.valid.val();
        self.word_data.d.next = self.pack.word.data.val();
        self.word_last.d.next = self.pack.word.last.val();
        self.word_bytes.d.next = self.pack.word.bytes.val();
        self.word_good.d.next = self.mac_rx.out_good.val();
        self.classifier.up.valid.next = self.word_valid.q.val();
        self.classifier.up.data.next = self.word_data.q.val();
        self.classifier.up.last.next = self.word_last.q.val();
        self.classifier.up.bytes.next = self.word_bytes.q.val();
        self.classifier.up_good.next = self.word_good.q.val();
        // 36-bit receive FIFO word: data, then the byte count on the last word, the routing
        // bits on the others, then `last`.
        self.rx_fifo.write.data.next = self.classifier.write_data.val();
        if !self.classifier.write_data.val().get_bit(35) {
            self.rx_fifo.write.data.next = (self.classifier.write_data.val() & 0xFFFF_FFFF_u64)
                | ((self.classifier.write_data.val() >> 4) & 0x3_0000_0000_u64);
        }
        self.rx_fifo.write.enable.next = self.classifier.write_enable.val();
        self.rx_fifo.write.commit.next = self.classifier.write_commit.val();
        self.rx_fifo.write.drop.next = self.classifier.write_drop.val();
        // Core clock domain.
        self.rx_fifo.read_clock.next = self.core_clock.val();
        self.res_fifo.write_clock.next = self.core_clock.val();
        self.br_fifo.write_clock.next = self.core_clock.val();
        // Transmit clock domain.
        self.res_fifo.read_clock.next = self.tx_clock.val();
        self.br_fifo.read_clock.next = self.tx_clock.val();
        clock!(self, tx_clock, tx_arbiter, unpack, tx_slice, mac_tx);
        // Core clock domain.
        dff_setup!(self, core_clock, in_frame, route);
        self.rxq.valid.next = self.rx_fifo.read.valid.val();
        self.rx_route.next = self.rx_fifo.read.data.val().get_bits::<2>(32);
        if self.in_frame.q.val() {
            self.rx_route.next = self.route.q.val();
        }
        self.rxq.data.next = (bit_cast::<WORD_BITS, 36>(self.rx_fifo.read.data.val()) & 0xF_FFFF_FFFF_u64)
            | (bit_cast::<WORD_BITS, 2>(self.rx_route.val()) << 36);
        if !self.rx_fifo.read.data.val().get_bit(35) {
            self.rxq.data.next = (bit_cast::<WORD_BITS, 36>(self.rx_fifo.read.data.val()) & 0xFFFF_FFFF_u64)
                | 0x4_0000_0000_u64
                | (bit_cast::<WORD_BITS, 2>(self.rx_route.val()) << 36);
        }
        self.rx_fifo.read.ready.next = self.rxq.ready.val();
        self.rxq_fill.next = bit_cast::<16, 12>(self.rx_fifo.read_fill.val());
        if self.rx_fifo.read.valid.val() & self.rxq.ready.val() {
            self.in_frame.d.next = !self.rx_fifo.read.data.val().get_bit(35);
            if !self.in_frame.q.val() {
                self.route.d.next = self.rx_route.val();
            }
        }
        FrameWriteSink::link(&mut self.res, &mut self.res_fifo.write);
        FrameWriteSink::link(&mut self.br, &mut self.br_fifo.write);
        // Transmit: the fills tied to zero, plain round robin between results and bridged frames.
        self.tx_arbiter.fill[0].next = 0.into();
        self.tx_arbiter.fill[1].next = 0.into();
        self.tx_arbiter.up[0].valid.next = self.res_fifo.read.valid.val();
        self.tx_arbiter.up[0].data.next = bit_cast::<WORD_BITS, 36>(self.res_fifo.read.data.val());
        self.res_fifo.read.ready.next = self.tx_arbiter.up[0].ready.val();
        self.tx_arbiter.up[1].valid.next = self.br_fifo.read.valid.val();
        self.tx_arbiter.up[1].data.next = bit_cast::<WORD_BITS, 36>(self.br_fifo.read.data.val());
        self.br_fifo.read.ready.next = self.tx_arbiter.up[1].ready.val();
        self.unpack.word.valid.next = self.tx_arbiter.down.valid.val();
        self.unpack.word.data.next = self.tx_arbiter.down.data.val().get_bits::<32>(0);
        self.unpack.word.last.next = self.tx_arbiter.down.data.val().get_bit(35);
        self.unpack.word.bytes.next = self.tx_arbiter.down.data.val().get_bits::<3>(32);
        self.tx_arbiter.down.ready.next = self.unpack.word.ready.val();
        self.tx_slice.up.valid.next = self.unpack.out_valid.val();
        self.tx_slice.up.data.next =
            bit_cast::<9, 8>(self.unpack.out_data.val()) | (bit_cast::<9, 1>(self.unpack.out_last.val().into()) << 8);
        self.unpack.out_ready.next = self.tx_slice.up.ready.val();
        self.mac_tx.up.valid.next = self.tx_slice.down.valid.val();
        self.mac_tx.up.data.next = self.tx_slice.down.data.val().get_bits::<8>(0);
        self.mac_tx.up.last.next = self.tx_slice.down.data.val().get_bit(8);
        self.tx_slice.down.ready.next = self.mac_tx.up.ready.val();
        self.gmii.txd.next = self.mac_tx.gmii_txd.val();
        self.gmii.tx_en.next = self.mac_tx.gmii_tx_en.val();
        self.gmii.tx_er.next = self.mac_tx.gmii_tx_er.val();
        // Counters.
        self.counter_data.next = 0.into();
        match self.counter_address.val().index() {
            0 => self.counter_data.next = self.mac_rx.frames[0].val(),
            1 => self.counter_data.next = self.mac_rx.frames[1].val(),
            2 => self.counter_data.next = self.mac_rx.frames[2].val(),
            3 => self.counter_data.next = self.mac_rx.frames[3].val(),
            4 => self.counter_data.next = self.rx_fifo.overflow_drops.val(),
            5 => self.counter_data.next = self.mac_tx.frames_sent.val(),
            _ => {}
        }
    }
}
