//! 802.1Q for a tagged job (docs/switch.md §1 step 3 and §3): [`VlanUntag`] takes the tag out of
//! a received frame before the parser sees it, [`VlanTag`] puts the job's tag into every frame
//! the core sends. For an untagged job (VID 0 in the job's VLAN register) both are wires.
//!
//! The tag is word 3 of a frame (bytes 12..16: TPID, TCI), so on the core's 32-bit word
//! streams taking it out is dropping one word and putting it in is inserting one.
//!
//! [`VlanUntag`] tells the parser what it found, in three flags valid with the frame's last
//! word (and held until the next frame's first word):
//!
//! | flag | when | the parser counts |
//! |---|---|---|
//! | `stripped` | word 3 is 0x8100 with the job's VID and not the last word: it is dropped | the rest of §1 on the shorter frame |
//! | `short` | the frame ends before word 3 is whole (`L < 16`), or word 3 is its last word and carries the job's tag (so `L − 4 = 12`) | `truncated` (after the length and MAC checks) |
//! | `mismatch` | word 3 is whole and is not 0x8100 with the job's VID | `wrong_vlan` (after the length and MAC checks) |
//!
//! PCP and DEI are ignored. Timing: [`VlanUntag`] puts each word it passes on, with the flags as
//! they stand after it, into an output register (one clock of latency, a word a clock: the tag
//! compare and the parser's receive logic meet only at that register, where together they were
//! the core clock's deepest path on the board); [`VlanTag`] is combinational on the stream and
//! holds its input for the one cycle in which it sends the tag word. Both have `ready` a
//! function of the downstream `ready` and registers only (no path from data to `ready`), and
//! both compare the VID with 0 into a register (the configuration's compare is off the
//! stream's paths), so a VID written takes effect one clock later.

use crate::word_stream::{WordSink, WordSource};
use rust_hdl::prelude::*;

/// Takes a tagged job's tag out of each received frame.
#[derive(LogicBlock, Default)]
pub struct VlanUntag {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The job's VID; 0 for an untagged job (everything passes, no flag is raised).
    pub vid: Signal<In, Bits<12>>,
    /// Received words.
    pub word_in: WordSink,
    /// The same words, word 3 left out when it is the job's tag.
    pub word_out: WordSource,
    /// The frame's tag was the job's and was taken out.
    pub stripped: Signal<Out, Bit>,
    /// The frame is too short for the tag check (see the module doc).
    pub short: Signal<Out, Bit>,
    /// The frame's word 3 is not the job's tag.
    pub mismatch: Signal<Out, Bit>,
    /// No word waits in the output register.
    pub empty: Signal<Out, Bit>,
    /// Words of the frame taken so far, saturating at 4.
    index: DFF<Bits<3>>,
    held_stripped: DFF<Bit>,
    held_short: DFF<Bit>,
    held_mismatch: DFF<Bit>,
    /// The job is tagged (VID ≠ 0), registered: the VID is a configuration register, and the
    /// compare kept off the stream's paths (it takes effect a clock after the write).
    tagged_job: DFF<Bit>,
    at_tag: Signal<Local, Bit>,
    vid_match: Signal<Local, Bit>,
    now_stripped: Signal<Local, Bit>,
    now_short: Signal<Local, Bit>,
    now_mismatch: Signal<Local, Bit>,
    in_frame: Signal<Local, Bit>,
    f_stripped: Signal<Local, Bit>,
    f_short: Signal<Local, Bit>,
    f_mismatch: Signal<Local, Bit>,
    /// The output register takes a word this clock (it is free, or its word leaves).
    advance: Signal<Local, Bit>,
    o_valid: DFF<Bit>,
    o_data: DFF<Bits<32>>,
    o_last: DFF<Bit>,
    o_bytes: DFF<Bits<3>>,
    o_stripped: DFF<Bit>,
    o_short: DFF<Bit>,
    o_mismatch: DFF<Bit>,
}

impl Logic for VlanUntag {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            index,
            held_stripped,
            held_short,
            held_mismatch,
            tagged_job,
            o_valid,
            o_data,
            o_last,
            o_bytes,
            o_stripped,
            o_short,
            o_mismatch
        );
        self.tagged_job.d.next = self.vid.val() != 0;
        self.at_tag.next = self.tagged_job.q.val() & self.word_in.valid.val() & (self.index.q.val() == 3);
        // 0x8100: the 802.1Q TPID (a literal: hdl_gen writes a Rust constant's name, not its value).
        self.vid_match.next = (self.word_in.data.val().get_bits::<16>(16) == 0x8100)
            & (self.word_in.data.val().get_bits::<12>(0) == self.vid.val());
        self.now_stripped.next = self.at_tag.val() & !self.word_in.last.val() & self.vid_match.val();
        self.now_short.next = self.tagged_job.q.val()
            & self.word_in.valid.val()
            & self.word_in.last.val()
            & ((self.index.q.val() < 3)
                | ((self.index.q.val() == 3) & ((self.word_in.bytes.val() != 4) | self.vid_match.val())));
        self.now_mismatch.next =
            self.at_tag.val() & !(self.word_in.last.val() & (self.word_in.bytes.val() != 4)) & !self.vid_match.val();
        // The flags: what earlier words of this frame found (none at its first word), and this word.
        self.in_frame.next = self.index.q.val() != 0;
        self.f_stripped.next = (self.in_frame.val() & self.held_stripped.q.val()) | self.now_stripped.val();
        self.f_short.next = (self.in_frame.val() & self.held_short.q.val()) | self.now_short.val();
        self.f_mismatch.next = (self.in_frame.val() & self.held_mismatch.q.val()) | self.now_mismatch.val();
        // The stream, through the output register: word 3 is dropped (taken without being passed
        // on) when stripped. `ready` does not depend on the data (the upstream's data may depend
        // on `ready`): the register takes a word when it is free or its word leaves.
        self.advance.next = !self.o_valid.q.val() | self.word_out.ready.val();
        self.word_in.ready.next = self.advance.val();
        if self.advance.val() {
            self.o_valid.d.next = self.word_in.valid.val() & !self.now_stripped.val();
            self.o_data.d.next = self.word_in.data.val();
            self.o_last.d.next = self.word_in.last.val();
            self.o_bytes.d.next = self.word_in.bytes.val();
        }
        self.word_out.valid.next = self.o_valid.q.val();
        self.word_out.data.next = self.o_data.q.val();
        self.word_out.last.next = self.o_last.q.val();
        self.word_out.bytes.next = self.o_bytes.q.val();
        self.stripped.next = self.o_stripped.q.val();
        self.short.next = self.o_short.q.val();
        self.mismatch.next = self.o_mismatch.q.val();
        self.empty.next = !self.o_valid.q.val();
        if self.word_in.valid.val() & self.word_in.ready.val() {
            self.o_stripped.d.next = self.f_stripped.val();
            self.o_short.d.next = self.f_short.val();
            self.o_mismatch.d.next = self.f_mismatch.val();
            self.held_stripped.d.next = self.f_stripped.val();
            self.held_short.d.next = self.f_short.val();
            self.held_mismatch.d.next = self.f_mismatch.val();
            if self.word_in.last.val() {
                self.index.d.next = 0.into();
            } else if self.index.q.val() != 4 {
                self.index.d.next = self.index.q.val() + 1;
            }
        }
    }
}

/// Puts a tagged job's tag into each frame the core sends, after its source MAC.
#[derive(LogicBlock)]
pub struct VlanTag {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The tag's TCI (PCP << 13 | VID); a VID of 0 means an untagged job (a wire).
    pub tci: Signal<In, Bits<16>>,
    /// The frames without a tag.
    pub word_in: WordSink,
    /// The frames with the tag as word 3.
    pub word_out: WordSource,
    /// Words of the frame sent so far, saturating at 4 (3: the tag is due).
    index: DFF<Bits<3>>,
    /// The job is tagged (VID ≠ 0), registered (not named `tagged`: a SystemVerilog keyword
    /// Verilator refuses): the TCI is a configuration register, and its
    /// compare was on the core clock's deepest path on the board (through `ready` into the
    /// result builder); it takes effect a clock after the write.
    tag_on: DFF<Bit>,
    insert: Signal<Local, Bit>,
    /// The 802.1Q TPID in the tag word's top half.
    tpid_word: Constant<Bits<32>>,
}

impl Default for VlanTag {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            tci: Default::default(),
            word_in: Default::default(),
            word_out: Default::default(),
            index: Default::default(),
            tag_on: Default::default(),
            insert: Default::default(),
            tpid_word: Constant::new(0x8100_0000_u64.into()),
        }
    }
}

impl Logic for VlanTag {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, index, tag_on);
        self.tag_on.d.next = self.tci.val().get_bits::<12>(0) != 0;
        self.insert.next = self.tag_on.q.val() & (self.index.q.val() == 3);
        self.word_out.valid.next = self.word_in.valid.val();
        self.word_out.data.next = self.word_in.data.val();
        self.word_out.last.next = self.word_in.last.val();
        self.word_out.bytes.next = self.word_in.bytes.val();
        self.word_in.ready.next = self.word_out.ready.val();
        if self.insert.val() {
            self.word_out.valid.next = true;
            self.word_out.data.next = self.tpid_word.val() | bit_cast::<32, 16>(self.tci.val());
            self.word_out.last.next = false;
            self.word_out.bytes.next = 4.into();
            self.word_in.ready.next = false;
        }
        if self.word_out.valid.val() & self.word_out.ready.val() {
            if self.word_out.last.val() {
                self.index.d.next = 0.into();
            } else if self.index.q.val() != 4 {
                self.index.d.next = self.index.q.val() + 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use crate::bench::{frame_words, word_bytes};

    /// The contract of the module doc for one frame: the bytes passed on and the three flags.
    fn model(vid: u16, f: &[u8]) -> (Vec<u8>, [bool; 3]) {
        if vid == 0 {
            return (f.to_vec(), [false; 3]);
        }
        if f.len() < 16 {
            return (f.to_vec(), [false, true, false]);
        }
        let ours = f[12..14] == [0x81, 0x00] && (u16::from_be_bytes([f[14], f[15]]) & 0xfff) == vid;
        match (ours, f.len() == 16) {
            (true, false) => ([&f[..12], &f[16..]].concat(), [true, false, false]),
            (true, true) => (f.to_vec(), [false, true, false]),
            (false, _) => (f.to_vec(), [false, false, true]),
        }
    }

    /// A frame with the bytes 12..16 chosen to hit each case: the job's tag (any PCP/DEI),
    /// another VID, VID 0, another TPID, untagged; lengths 0..=80.
    fn frame(rng: &mut Rng, vid: u16) -> Vec<u8> {
        let len = match rng.next() % 4 {
            0 => (rng.next() % 24) as usize,
            _ => (rng.next() % 81) as usize,
        };
        let mut f: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let tci: u16 = match rng.next() % 5 {
            0 | 1 => (rng.next() as u16 & 0xf000) | vid,
            2 => rng.next() as u16,
            3 => rng.next() as u16 & 0xf000,
            _ => vid,
        };
        let tpid: [u8; 2] = if rng.next().is_multiple_of(6) { [0x88, 0xa8] } else { [0x81, 0x00] };
        for (i, b) in [tpid[0], tpid[1], (tci >> 8) as u8, tci as u8].into_iter().enumerate() {
            if 12 + i < f.len() {
                f[12 + i] = b;
            }
        }
        f
    }

    /// The stream and the flags with the frame's last word out, as the model says, whatever the
    /// stalls on either side.
    #[test]
    fn untag_passes_drops_and_flags_as_the_model() {
        let mut b = VlanUntag::default();
        b.connect_all();
        let mut rng = Rng(0x5eed_1a2b);
        let mut seen = [0usize; 4];
        for case in 0..600 {
            let vid = if case % 7 == 0 { 0 } else { 1 + (rng.next() % 4094) as u16 };
            let f = frame(&mut rng, vid);
            if f.is_empty() {
                continue;
            }
            let (want, flags) = model(vid, &f);
            b.vid.next = u64::from(vid).into();
            // A VID written takes effect a clock later (the module doc).
            b.word_in.valid.next = false;
            b.word_out.ready.next = false;
            tick!(&mut b);
            let input = frame_words(&f);
            let mut out: Vec<(u64, bool, u64)> = Vec::new();
            let mut got_flags = None;
            let mut i = 0;
            let mut cycles = 0;
            // Until the frame's last word has left (the flags come with it).
            while out.last().is_none_or(|w| !w.1) {
                cycles += 1;
                assert!(cycles < 400, "stuck");
                let beat = input.get(i).copied().unwrap_or((0, false, 4));
                b.word_in.offer(i < input.len() && !rng.next().is_multiple_of(4), beat);
                b.word_out.ready.next = !rng.next().is_multiple_of(3);
                crate::step::settle(&mut b);
                if let Some(w) = b.word_out.taken() {
                    if w.1 {
                        got_flags = Some([b.stripped.val(), b.short.val(), b.mismatch.val()]);
                    }
                    out.push(w);
                }
                let moved = b.word_in.moves();
                tick!(&mut b);
                if moved {
                    i += 1;
                }
            }
            b.word_in.valid.next = false;
            tick!(&mut b);
            assert!(b.empty.val());
            assert_eq!(word_bytes(&out), want, "case {case}: vid {vid}, {f:02x?}");
            assert!(out.last().is_some_and(|w| w.1), "case {case}: the last word ends the frame");
            assert_eq!(got_flags, Some(flags), "case {case}: vid {vid}, {f:02x?}");
            let kind = flags.iter().position(|&x| x).map_or(3, |k| k);
            seen[kind] += 1;
        }
        assert!(seen.iter().all(|&n| n > 30), "every outcome exercised: {seen:?}");
    }

    #[test]
    fn tag_inserts_the_tci_after_the_source_mac() {
        let mut b = VlanTag::default();
        b.connect_all();
        let mut rng = Rng(0x7a9_0001);
        for case in 0..200 {
            let tci: u16 = if case % 5 == 0 { rng.next() as u16 & 0xf000 } else { rng.next() as u16 | 1 };
            let len = 42 + (rng.next() % 60) as usize;
            let f: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let want = if tci & 0xfff == 0 {
                f.clone()
            } else {
                [&f[..12], &[0x81, 0x00, (tci >> 8) as u8, tci as u8][..], &f[12..]].concat()
            };
            b.tci.next = u64::from(tci).into();
            b.word_in.valid.next = false;
            b.word_out.ready.next = false;
            tick!(&mut b);
            let input = frame_words(&f);
            let (mut i, mut out, mut cycles) = (0, Vec::new(), 0);
            while out.last().is_none_or(|w: &(u64, bool, u64)| !w.1) {
                cycles += 1;
                assert!(cycles < 800, "stuck");
                let beat = input.get(i).copied().unwrap_or((0, false, 4));
                b.word_in.offer(i < input.len() && !rng.next().is_multiple_of(4), beat);
                b.word_out.ready.next = !rng.next().is_multiple_of(3);
                crate::step::settle(&mut b);
                out.extend(b.word_out.taken());
                if b.word_in.moves() {
                    i += 1;
                }
                tick!(&mut b);
            }
            assert_eq!(word_bytes(&out), want, "case {case}: tci {tci:#06x}");
        }
    }
}
