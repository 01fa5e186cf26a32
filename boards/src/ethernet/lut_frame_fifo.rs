//! A small store-and-forward frame FIFO with independent write and read clocks, its words in
//! LUT RAM read without a clock: for a few short frames from a writer that waits (the EAPS
//! node's PDUs, `crate::tops::eaps_node_crossing`), where no block RAM is left and
//! [`FrameFifo`](crate::ethernet::frame_fifo::FrameFifo)'s four-word output buffer (built for a
//! block RAM's two clocks of read latency) would cost more than the RAM.
//!
//! - Write side (`write_clock`): a word is written while `write.enable` and `write.ready` (room
//!   for a word: the writer waits; a word offered without room is not written), `write.commit`
//!   with a frame's last word makes the frame visible, `write.drop` (with the last word or
//!   alone) discards the words written since the last commit.
//! - Read side (`read_clock`): first-word-fall-through of committed words only: `read.valid`
//!   from registers (the read pointer against the committed pointer as it crossed),
//!   `read.data` the RAM word at the read pointer (a register) through the LUT RAM's read.
//!   A reader that sees `read.valid` has the whole frame: a word a clock, no gap.
//! - Crossing: the committed write pointer and the read pointer cross by
//!   [`PointerSync`] (request/acknowledge, the pointer held while in flight). A word is read
//!   only after its frame's commit has crossed, several clocks after it was written, so the
//!   RAM's read never meets its write.

use crate::ecp5::primitive;
use crate::ethernet::frame_fifo::{FrameWriteSink, PointerSync, WORD_BITS};
use crate::ethernet::stream::ValidReadySource;
use rust_hdl::prelude::*;

/// `2^A` words of `W` bits in LUT RAM: written in `write_clock`, read without a clock.
#[derive(LogicBlock)]
pub struct LutRam<const W: usize, const A: usize> {
    /// Write clock.
    pub write_clock: Signal<In, Clock>,
    /// Write address.
    pub write_address: Signal<In, Bits<A>>,
    /// Write data.
    pub write_data: Signal<In, Bits<W>>,
    /// Write enable.
    pub write_enable: Signal<In, Bit>,
    /// Read address.
    pub read_address: Signal<In, Bits<A>>,
    /// The word at `read_address` (no clock).
    pub read_data: Signal<Out, Bits<W>>,
    _mem: Vec<Bits<W>>,
}

impl<const W: usize, const A: usize> Default for LutRam<W, A> {
    fn default() -> Self {
        assert!(A <= 6, "LutRam: 2^{A} words, at most 64");
        Self {
            write_clock: Default::default(),
            write_address: Default::default(),
            write_data: Default::default(),
            write_enable: Default::default(),
            read_address: Default::default(),
            read_data: Default::default(),
            _mem: vec![Bits::default(); 1 << A],
        }
    }
}

impl<const W: usize, const A: usize> Logic for LutRam<W, A> {
    fn update(&mut self) {
        if self.write_clock.pos_edge() && self.write_enable.val() {
            self._mem[self.write_address.val().index()] = self.write_data.val();
        }
        self.read_data.next = self._mem[self.read_address.val().index()];
    }
    fn connect(&mut self) {
        self.read_data.connect();
    }
    fn hdl(&self) -> Verilog {
        primitive(format!(
            "(* ram_style = \"distributed\" *) reg [{w}:0] mem [0:{d}];\n\
always @(posedge write_clock) if (write_enable) mem[write_address] <= write_data;\n\
assign read_data = mem[read_address];\n",
            w = W - 1,
            d = (1usize << A) - 1
        ))
    }
}

/// The frame FIFO of `2^A` words of `W` bits in LUT RAM; `P = A + 1` (pointer width).
#[derive(LogicBlock)]
pub struct LutFrameFifo<const W: usize, const A: usize, const P: usize> {
    /// Write clock.
    pub write_clock: Signal<In, Clock>,
    /// The frames in (each word keeps its low `W` bits; `ready`: room for a word).
    pub write: FrameWriteSink,
    /// Read clock.
    pub read_clock: Signal<In, Clock>,
    /// The committed words, oldest first.
    pub read: ValidReadySource<W>,
    ram: LutRam<W, A>,
    commit_sync: PointerSync<P>,
    read_sync: PointerSync<P>,
    wr_ptr: DFF<Bits<P>>,
    commit_ptr: DFF<Bits<P>>,
    rd_ptr: DFF<Bits<P>>,
    used: Signal<Local, Bits<P>>,
    wrote: Signal<Local, Bit>,
    depth: Constant<Bits<P>>,
}

impl<const W: usize, const A: usize, const P: usize> Default for LutFrameFifo<W, A, P> {
    fn default() -> Self {
        assert_eq!(P, A + 1, "LutFrameFifo<{W}, {A}, {P}>: P must be A + 1");
        assert!(W <= WORD_BITS, "LutFrameFifo<{W}, ..>: a word has at most {WORD_BITS} bits");
        Self {
            write_clock: Default::default(),
            write: Default::default(),
            read_clock: Default::default(),
            read: Default::default(),
            ram: Default::default(),
            commit_sync: Default::default(),
            read_sync: Default::default(),
            wr_ptr: Default::default(),
            commit_ptr: Default::default(),
            rd_ptr: Default::default(),
            used: Default::default(),
            wrote: Default::default(),
            depth: Constant::new((1u64 << A).into()),
        }
    }
}

impl<const W: usize, const A: usize, const P: usize> Logic for LutFrameFifo<W, A, P> {
    #[hdl_gen]
    fn update(&mut self) {
        // Write side.
        dff_setup!(self, write_clock, wr_ptr, commit_ptr);
        self.ram.write_clock.next = self.write_clock.val();
        self.commit_sync.src_clock.next = self.write_clock.val();
        self.read_sync.dst_clock.next = self.write_clock.val();
        self.used.next = self.wr_ptr.q.val() - self.read_sync.dst_value.val();
        self.write.ready.next = self.used.val() < self.depth.val();
        self.wrote.next = self.write.enable.val() & self.write.ready.val();
        self.ram.write_address.next = bit_cast::<A, P>(self.wr_ptr.q.val());
        self.ram.write_data.next = bit_cast::<W, WORD_BITS>(self.write.data.val());
        self.ram.write_enable.next = self.wrote.val();
        if self.wrote.val() {
            self.wr_ptr.d.next = self.wr_ptr.q.val() + 1;
            if self.write.commit.val() {
                self.commit_ptr.d.next = self.wr_ptr.q.val() + 1;
            }
        }
        if self.write.drop.val() {
            self.wr_ptr.d.next = self.commit_ptr.q.val();
        }
        self.commit_sync.src_value.next = self.commit_ptr.q.val();
        // Read side.
        dff_setup!(self, read_clock, rd_ptr);
        self.commit_sync.dst_clock.next = self.read_clock.val();
        self.read_sync.src_clock.next = self.read_clock.val();
        self.ram.read_address.next = bit_cast::<A, P>(self.rd_ptr.q.val());
        self.read.valid.next = self.rd_ptr.q.val() != self.commit_sync.dst_value.val();
        self.read.data.next = self.ram.read_data.val();
        if self.read.valid.val() & self.read.ready.val() {
            self.rd_ptr.d.next = self.rd_ptr.q.val() + 1;
        }
        self.read_sync.src_value.next = self.rd_ptr.q.val();
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::cdc::two_clocks::{lint_with, Rng, TwoClocks, PERIODS};
    use crate::ethernet::frame_fifo::word;
    use crate::ethernet::frame_fifo::word::full as w;

    /// Frames of 1..=27 words (a PDU is 27) from a writer that waits on `ready`, read by a
    /// reader that stalls, at unrelated periods: every frame comes out whole and in order, and
    /// once a frame's first word is valid its words come a clock apart while the reader takes
    /// them (the frame was all there).
    #[test]
    fn whole_frames_in_order_at_unrelated_clocks() {
        for periods in PERIODS {
            let mut f = LutFrameFifo::<36, 5, 6>::default();
            f.connect_all();
            let mut rng = Rng(0x5eed);
            let (mut seq, mut expect) = (vec![], vec![]);
            let mut x = 0u32;
            for _ in 0..60 {
                let len = 1 + rng.next() as usize % 27;
                for i in 0..len {
                    seq.push(w(x, i + 1 == len));
                    expect.push(w(x, i + 1 == len));
                    x += 1;
                }
            }
            let mut clocks = TwoClocks::new(periods);
            let (mut t, mut got) = (0usize, vec![]);
            let mut in_frame = false;
            while got.len() < expect.len() {
                let e = clocks.next_edge();
                if e.clock == 0 {
                    if e.rising && f.write.enable.val() && f.write.ready.val() {
                        t += 1;
                    }
                    f.write_clock.next = e.rising.into();
                    assert!(simulate(&mut f, 1000));
                    if e.rising {
                        let offer = t < seq.len() && !rng.one_in(5);
                        f.write.enable.next = offer;
                        f.write.data.next = seq.get(t).copied().unwrap_or(0).into();
                        f.write.commit.next = offer && (seq[t] >> word::LAST) & 1 == 1;
                        assert!(simulate(&mut f, 1000));
                    }
                } else {
                    if e.rising && f.read.ready.val() {
                        if in_frame {
                            assert!(f.read.valid.val(), "periods {periods:?}: a gap inside a frame");
                        }
                        if f.read.valid.val() {
                            let v = f.read.data.val().to_u64();
                            in_frame = (v >> word::LAST) & 1 == 0;
                            got.push(v);
                        }
                    }
                    f.read_clock.next = e.rising.into();
                    assert!(simulate(&mut f, 1000));
                    if e.rising {
                        // The reader stalls only between frames.
                        f.read.ready.next = in_frame || !rng.one_in(3);
                        assert!(simulate(&mut f, 1000));
                    }
                }
                assert!(clocks.now < 4_000_000_000, "periods {periods:?}: stuck after {} words", got.len());
            }
            assert_eq!(got, expect, "periods {periods:?}");
        }
    }

    #[test]
    fn lints_clean() {
        let mut f = LutFrameFifo::<36, 5, 6>::default();
        f.connect_all();
        // The FIFO keeps the low 36 bits of the writers' 38-bit words.
        let unused = "lint_off -rule UNUSED -file \"*top.v\" -match \"*write$data*\"\n";
        lint_with("LutFrameFifo<36, 5, 6>", &generate_verilog(&f), unused);
    }
}
