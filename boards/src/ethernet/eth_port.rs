//! One Ethernet port of the board at the GMII byte interface: receive MAC, route tagging and
//! the receive FIFO (crossing from the port's receive clock into the core clock), and on the
//! transmit side the result FIFO and the bridge FIFO, merged by whole frames into the
//! transmit MAC.
//!
//! ```text
//! GMII rx ─ MacRx ─ RxWidth<8> ─ RxClassifier ─ rx FIFO ══(rx clock | core clock)══ rxq_*
//! res_* ─ result FIFO ══(core clock | tx clock)══┐
//!                                                ├─ FrameArbiter ─ TxWidth<8> ─ StreamSlice ─ MacTx ─ GMII tx
//! br_*  ─ bridge FIFO ══(core clock | tx clock)══┘                                     (tx clock)
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

use crate::ethernet::frame_arbiter::FrameArbiter;
use crate::ethernet::frame_fifo::{FrameFifo, WORD_BITS};
use crate::ethernet::mac_rx::MacRx;
use crate::ethernet::mac_tx::MacTx;
use crate::ethernet::rx_classifier::RxClassifier;
use crate::ethernet::stream_slice::StreamSlice;
use rust_hdl::prelude::*;
use spotagg_hdl::stream_width::{RxWidth, TxWidth};

/// One port.
#[derive(LogicBlock, Default)]
pub struct EthPort {
    /// Receive clock from the PHY.
    pub rx_clock: Signal<In, Clock>,
    /// GMII receive data.
    pub gmii_rxd: Signal<In, Bits<8>>,
    /// GMII receive data valid.
    pub gmii_rx_dv: Signal<In, Bit>,
    /// GMII receive error.
    pub gmii_rx_er: Signal<In, Bit>,
    /// The switch's MAC (quasi-static).
    pub switch_mac: Signal<In, Bits<48>>,
    /// Core clock (the FIFOs' core-facing ends).
    pub core_clock: Signal<In, Clock>,
    /// Transmit clock (125 MHz on the board): the transmit FIFOs' read ends, the merge and
    /// the transmit MAC.
    pub tx_clock: Signal<In, Clock>,
    /// GMII transmit data.
    pub gmii_txd: Signal<Out, Bits<8>>,
    /// GMII transmit enable.
    pub gmii_tx_en: Signal<Out, Bit>,
    /// GMII transmit error.
    pub gmii_tx_er: Signal<Out, Bit>,
    /// Received frames (core clock domain): valid.
    pub rxq_valid: Signal<Out, Bit>,
    /// Received frames: word.
    pub rxq_data: Signal<Out, Bits<WORD_BITS>>,
    /// Received frames: take the word.
    pub rxq_ready: Signal<In, Bit>,
    /// Received frames: committed words waiting (core clock domain, for the merge).
    pub rxq_fill: Signal<Out, Bits<16>>,
    /// Result FIFO: word.
    pub res_data: Signal<In, Bits<WORD_BITS>>,
    /// Result FIFO: write.
    pub res_enable: Signal<In, Bit>,
    /// Result FIFO: commit.
    pub res_commit: Signal<In, Bit>,
    /// Result FIFO: room.
    pub res_ready: Signal<Out, Bit>,
    /// Bridge FIFO: word.
    pub br_data: Signal<In, Bits<WORD_BITS>>,
    /// Bridge FIFO: write.
    pub br_enable: Signal<In, Bit>,
    /// Bridge FIFO: commit.
    pub br_commit: Signal<In, Bit>,
    /// Bridge FIFO: room.
    pub br_ready: Signal<Out, Bit>,
    /// Good frames received (receive clock domain).
    pub frames_good: Signal<Out, Bits<32>>,
    /// Frames with a bad FCS (receive clock domain).
    pub frames_bad_fcs: Signal<Out, Bits<32>>,
    /// Runts (receive clock domain).
    pub frames_runt: Signal<Out, Bits<32>>,
    /// Giants (receive clock domain).
    pub frames_giant: Signal<Out, Bits<32>>,
    /// Good frames dropped because the receive FIFO was full (receive clock domain).
    pub frames_overflow: Signal<Out, Bits<32>>,
    /// Frames sent (transmit clock domain).
    pub frames_sent: Signal<Out, Bits<32>>,
    mac_rx: MacRx,
    pack: RxWidth<8>,
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
        self.mac_rx.clock.next = self.rx_clock.val();
        self.pack.clock.next = self.rx_clock.val();
        self.classifier.clock.next = self.rx_clock.val();
        self.rx_fifo.write_clock.next = self.rx_clock.val();
        self.mac_rx.gmii_rxd.next = self.gmii_rxd.val();
        self.mac_rx.gmii_rx_dv.next = self.gmii_rx_dv.val();
        self.mac_rx.gmii_rx_er.next = self.gmii_rx_er.val();
        self.pack.in_valid.next = self.mac_rx.out_valid.val();
        self.pack.in_data.next = self.mac_rx.out_data.val();
        self.pack.in_last.next = self.mac_rx.out_last.val();
        self.pack.in_bytes.next = 1.into();
        self.pack.word.ready.next = true;
        self.classifier.switch_mac.next = self.switch_mac.val();
        self.classifier.in_valid.next = self.pack.word.valid.val();
        self.classifier.in_data.next = self.pack.word.data.val();
        self.classifier.in_last.next = self.pack.word.last.val();
        self.classifier.in_bytes.next = self.pack.word.bytes.val();
        self.classifier.in_good.next = self.mac_rx.out_good.val();
        // 36-bit receive FIFO word: data, then the byte count on the last word, the routing
        // bits on the others, then `last`.
        self.rx_fifo.write_data.next = bit_cast::<36, WORD_BITS>(self.classifier.write_data.val());
        if !self.classifier.write_data.val().get_bit(35) {
            self.rx_fifo.write_data.next = bit_cast::<36, WORD_BITS>(
                (self.classifier.write_data.val() & 0xFFFF_FFFF_u64)
                    | ((self.classifier.write_data.val() >> 4) & 0x3_0000_0000_u64),
            );
        }
        self.rx_fifo.write_enable.next = self.classifier.write_enable.val();
        self.rx_fifo.write_commit.next = self.classifier.write_commit.val();
        self.rx_fifo.write_drop.next = self.classifier.write_drop.val();
        self.frames_good.next = self.mac_rx.frames_good.val();
        self.frames_bad_fcs.next = self.mac_rx.frames_bad_fcs.val();
        self.frames_runt.next = self.mac_rx.frames_runt.val();
        self.frames_giant.next = self.mac_rx.frames_giant.val();
        self.frames_overflow.next = self.rx_fifo.overflow_drops.val();
        // Core clock domain.
        self.rx_fifo.read_clock.next = self.core_clock.val();
        self.res_fifo.write_clock.next = self.core_clock.val();
        self.br_fifo.write_clock.next = self.core_clock.val();
        // Transmit clock domain.
        self.res_fifo.read_clock.next = self.tx_clock.val();
        self.br_fifo.read_clock.next = self.tx_clock.val();
        self.tx_arbiter.clock.next = self.tx_clock.val();
        self.unpack.clock.next = self.tx_clock.val();
        self.tx_slice.clock.next = self.tx_clock.val();
        self.mac_tx.clock.next = self.tx_clock.val();
        // Core clock domain.
        self.in_frame.clock.next = self.core_clock.val();
        self.route.clock.next = self.core_clock.val();
        self.in_frame.d.next = self.in_frame.q.val();
        self.route.d.next = self.route.q.val();
        self.rxq_valid.next = self.rx_fifo.read_valid.val();
        self.rx_route.next = self.rx_fifo.read_data.val().get_bits::<2>(32);
        if self.in_frame.q.val() {
            self.rx_route.next = self.route.q.val();
        }
        self.rxq_data.next = (bit_cast::<WORD_BITS, 36>(self.rx_fifo.read_data.val()) & 0xF_FFFF_FFFF_u64)
            | (bit_cast::<WORD_BITS, 2>(self.rx_route.val()) << 36);
        if !self.rx_fifo.read_data.val().get_bit(35) {
            self.rxq_data.next = (bit_cast::<WORD_BITS, 36>(self.rx_fifo.read_data.val()) & 0xFFFF_FFFF_u64)
                | 0x4_0000_0000_u64
                | (bit_cast::<WORD_BITS, 2>(self.rx_route.val()) << 36);
        }
        self.rx_fifo.read_ready.next = self.rxq_ready.val();
        self.rxq_fill.next = bit_cast::<16, 12>(self.rx_fifo.read_fill.val());
        self.tx_arbiter.in0_fill.next = 0.into();
        self.tx_arbiter.in1_fill.next = 0.into();
        if self.rx_fifo.read_valid.val() & self.rxq_ready.val() {
            self.in_frame.d.next = !self.rx_fifo.read_data.val().get_bit(35);
            if !self.in_frame.q.val() {
                self.route.d.next = self.rx_route.val();
            }
        }
        self.res_fifo.write_data.next = bit_cast::<36, WORD_BITS>(self.res_data.val());
        self.res_fifo.write_enable.next = self.res_enable.val();
        self.res_fifo.write_commit.next = self.res_commit.val();
        self.res_fifo.write_drop.next = false;
        self.res_ready.next = self.res_fifo.write_ready.val();
        self.br_fifo.write_data.next = bit_cast::<36, WORD_BITS>(self.br_data.val());
        self.br_fifo.write_enable.next = self.br_enable.val();
        self.br_fifo.write_commit.next = self.br_commit.val();
        self.br_fifo.write_drop.next = false;
        self.br_ready.next = self.br_fifo.write_ready.val();
        self.tx_arbiter.in0_valid.next = self.res_fifo.read_valid.val();
        self.tx_arbiter.in0_data.next = bit_cast::<WORD_BITS, 36>(self.res_fifo.read_data.val());
        self.res_fifo.read_ready.next = self.tx_arbiter.in0_ready.val();
        self.tx_arbiter.in1_valid.next = self.br_fifo.read_valid.val();
        self.tx_arbiter.in1_data.next = bit_cast::<WORD_BITS, 36>(self.br_fifo.read_data.val());
        self.br_fifo.read_ready.next = self.tx_arbiter.in1_ready.val();
        self.unpack.word.valid.next = self.tx_arbiter.out_valid.val();
        self.unpack.word.data.next = self.tx_arbiter.out_data.val().get_bits::<32>(0);
        self.unpack.word.last.next = self.tx_arbiter.out_data.val().get_bit(35);
        self.unpack.word.bytes.next = self.tx_arbiter.out_data.val().get_bits::<3>(32);
        self.tx_arbiter.out_ready.next = self.unpack.word.ready.val();
        self.tx_slice.in_valid.next = self.unpack.out_valid.val();
        self.tx_slice.in_data.next =
            bit_cast::<9, 8>(self.unpack.out_data.val()) | (bit_cast::<9, 1>(self.unpack.out_last.val().into()) << 8);
        self.unpack.out_ready.next = self.tx_slice.in_ready.val();
        self.mac_tx.in_valid.next = self.tx_slice.out_valid.val();
        self.mac_tx.in_data.next = self.tx_slice.out_data.val().get_bits::<8>(0);
        self.mac_tx.in_last.next = self.tx_slice.out_data.val().get_bit(8);
        self.tx_slice.out_ready.next = self.mac_tx.in_ready.val();
        self.gmii_txd.next = self.mac_tx.gmii_txd.val();
        self.gmii_tx_en.next = self.mac_tx.gmii_tx_en.val();
        self.gmii_tx_er.next = self.mac_tx.gmii_tx_er.val();
        self.frames_sent.next = self.mac_tx.frames_sent.val();
    }
}
