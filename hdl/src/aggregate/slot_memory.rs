//! The slot memory: for every slot and set, k int32 values and the two int8 exponent maxima.
//!
//! Values live in `slots × 2 × (max_payload / 4)` words, word `(slot · 2 + set) · kmax + i`
//! holding element i; the exponents in a second RAM, one word per slot: bits 15..8 `e0` and
//! 7..0 `e1` of set 0, bits 31..24 and 23..16 of set 1.
//!
//! Timing contract:
//! - Values: read latency [`VALUE_READ_LATENCY`] (5): `read_data` in cycle t + 5 is the word at
//!   the `read_address` of cycle t. A write presented in cycle t lands one edge later than a
//!   plain block RAM write (the inputs are registered first), which keeps the order of reads and
//!   writes: a read presented in the same cycle as a write to its address returns the old word
//!   (read-first), a read presented later the new one. The pipeline: input registers (one
//!   fan-out point for address and data), the banks' block RAM read, a register right after each
//!   bank (nothing between a block RAM output and a flip-flop), an 8:1 bank mux into a register
//!   per group of 8 banks, a group mux into the output register.
//! - The values are split in banks of 1024 words (two ECP5 DP16KD each in 1024 × 18 mode, side
//!   by side), so no bank needs a depth mux after its RAM outputs. Synthesis instantiates the
//!   DP16KDs with their output register on (`OUTREG`, the register after each bank is inside
//!   the block); simulators, or synthesis with `SPOTAGG_INFERRED_RAM` defined, take a portable
//!   template with the same cycle behaviour.
//! - Exponents: a small RAM (LUT RAM at any slot count, [`BlockRam::distributed`]), read data
//!   one cycle after the address.
//!
//! Values are never cleared: the first contribution of a round writes them (docs/switch.md §2),
//! so stale values are never read as a sum.

use crate::block_ram::{dp16kd_1024x18, BlockRam, RamPort, RamWords};
use crate::config::CoreConfig;
use rust_hdl::prelude::*;

/// Cycles from a value read address to its data.
pub const VALUE_READ_LATENCY: usize = 5;
/// Words per value bank.
pub const BANK_WORDS: usize = 1024;

/// The value banks: 16-bit word addresses, 32-bit words, read latency 5 (module doc).
#[derive(LogicBlock)]
pub struct BankedRam {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Read address.
    pub read_address: Signal<In, Bits<16>>,
    /// Word at the read address of five cycles before.
    pub read_data: Signal<Out, Bits<32>>,
    /// Write address.
    pub write_address: Signal<In, Bits<16>>,
    /// Word to write.
    pub write_data: Signal<In, Bits<32>>,
    /// Write strobe.
    pub write_enable: Signal<In, Bit>,
    _mem: RamWords<32>,
    _ra: usize,
    _wa: usize,
    _wd: Bits<32>,
    _we: bool,
    _s1: Bits<32>,
    _s2: Bits<32>,
    _s3: Bits<32>,
}

impl BankedRam {
    /// Banks for at least `words` words (whole banks of [`BANK_WORDS`], at most 64).
    pub fn new(words: usize) -> Self {
        let banks = words.div_ceil(BANK_WORDS);
        assert!((1..=64).contains(&banks), "BankedRam of {words} words needs {banks} banks");
        Self {
            clock: Default::default(),
            read_address: Default::default(),
            read_data: Default::default(),
            write_address: Default::default(),
            write_data: Default::default(),
            write_enable: Default::default(),
            _mem: RamWords::new(banks * BANK_WORDS),
            _ra: 0,
            _wa: 0,
            _wd: Bits::default(),
            _we: false,
            _s1: Bits::default(),
            _s2: Bits::default(),
            _s3: Bits::default(),
        }
    }

    /// Number of banks.
    pub fn banks(&self) -> usize {
        self._mem.len() / BANK_WORDS
    }
}

impl Logic for BankedRam {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            self.read_data.next = self._s3;
            self._s3 = self._s2;
            self._s2 = self._s1;
            self._s1 = self._mem.read(self._ra);
            self._mem.write(self._we, self._wa, self._wd);
            self._ra = self.read_address.val().index();
            self._wa = self.write_address.val().index();
            self._wd = self.write_data.val();
            self._we = self.write_enable.val();
        }
    }

    fn connect(&mut self) {
        self.read_data.connect();
    }

    fn hdl(&self) -> Verilog {
        let model = "\
         reg [31:0] mem [0:1023];
         reg [31:0] stage;
         reg [31:0] qr;
         always @(posedge clock) begin
            stage <= mem[ra_r[9:0]];
            qr <= stage;
            if (we_r && (wa_r[15:10] == b)) begin
               mem[wa_r[9:0]] <= wd_r;
            end
         end
         assign q = qr;
";
        let ram = dp16kd_1024x18(
            "ram",
            32,
            "clock",
            "ra_r",
            10,
            "1'b1",
            "wa_r",
            10,
            "wd_r",
            "we_r && (wa_r[15:10] == b)",
            "q",
        );
        // Simulators take the model; synthesis (Yosys defines SYNTHESIS) the DP16KDs with
        // their output register, unless SPOTAGG_INFERRED_RAM asks for the portable template.
        let code = format!(
            "\
localparam BANKS = {banks};
reg [15:0] ra_r;
reg [15:0] wa_r;
reg [31:0] wd_r;
reg we_r;
reg [5:0] sel0;
reg [5:0] sel1;
reg [2:0] sel2;
reg [31:0] out;
wire [2047:0] bank_q;
reg [255:0] group_q;
genvar b;
generate
   for (b = 0; b < 64; b = b + 1) begin : bank
      if (b < BANKS) begin : used
         wire [31:0] q;
`ifndef SYNTHESIS
{model}`elsif SPOTAGG_INFERRED_RAM
{model}`else
{ram}`endif
         assign bank_q[32 * b +: 32] = q;
      end else begin : unused
         assign bank_q[32 * b +: 32] = 32'd0;
      end
   end
endgenerate

integer g;
always @(posedge clock) begin
   ra_r <= read_address;
   wa_r <= write_address;
   wd_r <= write_data;
   we_r <= write_enable;
   sel0 <= ra_r[15:10];
   sel1 <= sel0;
   sel2 <= sel1[5:3];
   for (g = 0; g < 8; g = g + 1) begin
      group_q[32 * g +: 32] <= bank_q[32 * (8 * g + sel1[2:0]) +: 32];
   end
   out <= group_q[32 * sel2 +: 32];
end
assign read_data = out;
",
            banks = self.banks()
        );
        Verilog::Wrapper(Wrapper { code, cores: String::new() })
    }

    fn timing(&self) -> Vec<TimingInfo> {
        vec![TimingInfo {
            name: "banked_ram".into(),
            clock: "clock".into(),
            inputs: vec!["read_address".into(), "write_address".into(), "write_data".into(), "write_enable".into()],
            outputs: vec!["read_data".into()],
        }]
    }
}

/// Values and exponents of every slot and set.
#[derive(LogicBlock)]
pub struct SlotMemory {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The values: read data [`VALUE_READ_LATENCY`] cycles after the address, read-first
    /// (module doc).
    pub values: RamPort<16, 32>,
    /// The exponents, one word a slot: read data one cycle after the address.
    pub exponents: RamPort<6, 32>,
    value_banks: BankedRam,
    exponent_ram: BlockRam<6, 32>,
}

impl SlotMemory {
    /// The slot memory of a core.
    pub fn new(config: &CoreConfig) -> Self {
        Self {
            clock: Default::default(),
            values: Default::default(),
            exponents: Default::default(),
            value_banks: BankedRam::new(config.slot_memory_words()),
            exponent_ram: BlockRam::new(config.slots).distributed(),
        }
    }
}

impl Logic for SlotMemory {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, value_banks, exponent_ram);
        self.value_banks.read_address.next = self.values.read_address.val();
        self.values.read_data.next = self.value_banks.read_data.val();
        self.value_banks.write_address.next = self.values.write_address.val();
        self.value_banks.write_data.next = self.values.write_data.val();
        self.value_banks.write_enable.next = self.values.write_enable.val();
        self.exponent_ram.read_address.next = self.exponents.read_address.val();
        self.exponents.read_data.next = self.exponent_ram.read_data.val();
        self.exponent_ram.write_address.next = self.exponents.write_address.val();
        self.exponent_ram.write_data.next = self.exponents.write_data.val();
        self.exponent_ram.write_enable.next = self.exponents.write_enable.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use crate::step::settle;
    use std::collections::VecDeque;

    /// A RAM as the contract states it: `words` (a read past the end gives zero, a write past
    /// the end is lost), each cycle's read taking the word as it is before that cycle's write
    /// (read-first; every later read sees the write) and given `latency` cycles later.
    struct Model {
        words: Vec<u32>,
        /// The reads in flight, oldest first: (cycle, address, word), `None` before the first.
        pending: VecDeque<Option<(u64, usize, u32)>>,
    }

    impl Model {
        fn new(depth: usize, latency: usize) -> Self {
            Model { words: vec![0; depth], pending: std::iter::repeat_n(None, latency).collect() }
        }

        /// Cycle `c`: the read due now (presented `latency` cycles ago: cycle, address, word),
        /// then this cycle's read of `read` and write.
        fn cycle(&mut self, c: u64, read: usize, write: Option<(usize, u32)>) -> Option<(u64, usize, u32)> {
            let due = self.pending.pop_front().flatten();
            self.pending.push_back(Some((c, read, self.words.get(read).copied().unwrap_or(0))));
            if let Some((a, w)) = write {
                if let Some(word) = self.words.get_mut(a) {
                    *word = w;
                }
            }
            due
        }
    }

    /// Mostly one of the `hot` addresses (so reads and writes of one address meet often),
    /// sometimes any below `span`.
    fn pick(rng: &mut Rng, hot: &[usize], span: usize) -> usize {
        if rng.one_in(8) {
            rng.below(span as u64) as usize
        } else {
            hot[rng.below(hot.len() as u64) as usize]
        }
    }

    /// Random traffic on one port: (read address, write address, data, write enable); a
    /// quarter of the cycles write the address they read.
    fn traffic(rng: &mut Rng, hot: &[usize], span: usize) -> (usize, usize, u32, bool) {
        let read = pick(rng, hot, span);
        let write = if rng.one_in(4) { read } else { pick(rng, hot, span) };
        (read, write, rng.next() as u32, rng.one_in(2))
    }

    /// 4 slots of 1024-byte payloads: 2048 value words (2 banks), 4 exponent words.
    fn small() -> SlotMemory {
        let mut b = SlotMemory::new(&CoreConfig::new(4, 4, 1024, 4).unwrap());
        b.connect_all();
        assert_eq!((b.value_banks.banks(), b.exponent_ram.depth()), (2, 4));
        b
    }

    /// 4000 cycles of a read and a write (half of them enabled; strobe low, the address and
    /// data still change) on the value port, mostly on 8 addresses of both banks and the first
    /// past the end, sometimes anywhere in the 16-bit space; the exponent port busy at the same
    /// time: every cycle's `read_data` from cycle 5 on is the model's (latency 5, read-first),
    /// and many reads met a write of a new word to their address in their own cycle (old word)
    /// or in the cycle before (new word).
    #[test]
    fn values_follow_the_model_of_the_contract() {
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        let mut b = small();
        let hot = [0, 1, 2, 1023, 1024, 1025, 2047, 2048];
        let mut model = Model::new(2048, VALUE_READ_LATENCY);
        let (mut same_cycle, mut cycle_after, mut checked) = (0, 0, 0);
        let mut last_write = None;
        for c in 0..4000u64 {
            let (ra, wa, wd, we) = traffic(&mut rng, &hot, 1 << 16);
            b.values.read_address.next = (ra as u64).into();
            b.values.write_address.next = (wa as u64).into();
            b.values.write_data.next = u64::from(wd).into();
            b.values.write_enable.next = we;
            let (era, ewa, ewd, ewe) = traffic(&mut rng, &[0, 1, 2, 3], 64);
            b.exponents.read_address.next = (era as u64).into();
            b.exponents.write_address.next = (ewa as u64).into();
            b.exponents.write_data.next = u64::from(ewd).into();
            b.exponents.write_enable.next = ewe;
            settle(&mut b);
            let old = model.words.get(ra).copied();
            if let Some((rc, a, word)) = model.cycle(c, ra, we.then_some((wa, wd))) {
                let got = b.values.read_data.val().index() as u32;
                assert_eq!(got, word, "cycle {c}: read data of address {a} (read in cycle {rc})");
                checked += 1;
            }
            if we && wa == ra && old.is_some_and(|w| w != wd) {
                same_cycle += 1;
            }
            if last_write == Some(ra) {
                cycle_after += 1;
            }
            last_write = we.then_some(wa).filter(|&a| a < 2048 && old != Some(wd));
            tick!(&mut b);
        }
        assert!(checked == 3995 && same_cycle > 300 && cycle_after > 100, "{checked} {same_cycle} {cycle_after}");
    }

    /// 4000 cycles of a read and a write on the exponent port, on the 4 slots' words and two
    /// past the end (4 and 63), the value port busy at the same time: every cycle's
    /// `read_data` from cycle 1 on is the model's (latency 1, read-first, past the end zero).
    #[test]
    fn exponents_follow_the_model_of_the_contract() {
        let mut rng = Rng(0xfedc_ba98_7654_3210);
        let mut b = small();
        let mut model = Model::new(4, 1);
        let (mut same_cycle, mut checked) = (0, 0);
        for c in 0..4000u64 {
            let (ra, wa, wd, we) = traffic(&mut rng, &[0, 1, 2, 3, 4, 63], 64);
            b.exponents.read_address.next = (ra as u64).into();
            b.exponents.write_address.next = (wa as u64).into();
            b.exponents.write_data.next = u64::from(wd).into();
            b.exponents.write_enable.next = we;
            let (vra, vwa, vwd, vwe) = traffic(&mut rng, &[0, 1, 2, 3], 1 << 16);
            b.values.read_address.next = (vra as u64).into();
            b.values.write_address.next = (vwa as u64).into();
            b.values.write_data.next = u64::from(vwd).into();
            b.values.write_enable.next = vwe;
            settle(&mut b);
            if we && wa == ra && ra < 4 {
                same_cycle += 1;
            }
            if let Some((rc, a, word)) = model.cycle(c, ra, we.then_some((wa, wd))) {
                let got = b.exponents.read_data.val().index() as u32;
                assert_eq!(got, word, "cycle {c}: read data of address {a} (read in cycle {rc})");
                checked += 1;
            }
            tick!(&mut b);
        }
        assert!(checked == 3999 && same_cycle > 300, "{checked} {same_cycle}");
    }
}
