//! A simple dual-port block RAM: one write port, one read port, one clock.
//!
//! Timing: the read data is registered: `read_data` holds the word at the `read_address`
//! presented before the last rising edge (one cycle of latency). A write lands at the rising
//! edge; a read of the same address in the same cycle returns the old word (read-first).
//! Every word is zero at power-up in simulation (the FPGA's block RAM initial value). The Verilog is the inference template Yosys maps to
//! ECP5 DP16KD (or LUT RAM when small).

use rust_hdl::prelude::*;

interface_pair! {
    /// The ports of a simple dual-port RAM of `D`-bit words addressed with `A` bits, the RAM's end
    /// (timing as the RAM that serves them says).
    pub struct RamPort<const A: usize, const D: usize> join "RamClient";
    /// The ports of a simple dual-port RAM, the user's end.
    pub struct RamClient join "RamPort";
    {
        /// Read address.
        read_address: In Bits<A>,
        /// Word read.
        read_data: Out Bits<D>,
        /// Write address.
        write_address: In Bits<A>,
        /// Word to write.
        write_data: In Bits<D>,
        /// Write strobe.
        write_enable: In Bit,
    }
}

/// The words of a RAM block in simulation, zero at power-up: a read past the end gives zero, a
/// write past the end is lost (the Verilog's memory has exactly these words).
#[derive(Clone, Debug)]
pub(crate) struct RamWords<const D: usize>(pub Vec<Bits<D>>);

impl<const D: usize> RamWords<D> {
    /// `depth` zero words.
    pub fn new(depth: usize) -> Self {
        Self(vec![Bits::default(); depth])
    }

    /// The word at `address`.
    pub fn read(&self, address: usize) -> Bits<D> {
        self.0.get(address).copied().unwrap_or_default()
    }

    /// Writes `data` at `address` when `enable`.
    pub fn write(&mut self, enable: bool, address: usize, data: Bits<D>) {
        if let Some(w) = self.0.get_mut(address).filter(|_| enable) {
            *w = data;
        }
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// Simple dual-port RAM of `depth` words of `D` bits, addressed with `A` bits.
#[derive(LogicBlock)]
pub struct BlockRam<const A: usize, const D: usize> {
    /// Clock of both ports.
    pub clock: Signal<In, Clock>,
    /// Read address.
    pub read_address: Signal<In, Bits<A>>,
    /// Word at the read address of the previous cycle.
    pub read_data: Signal<Out, Bits<D>>,
    /// Write address.
    pub write_address: Signal<In, Bits<A>>,
    /// Word to write.
    pub write_data: Signal<In, Bits<D>>,
    /// Write strobe.
    pub write_enable: Signal<In, Bit>,
    _mem: RamWords<D>,
    _no_rw_check: bool,
    _distributed: bool,
}

impl<const A: usize, const D: usize> BlockRam<A, D> {
    /// A RAM of `depth` words (at most 2^A), zero at power-up.
    pub fn new(depth: usize) -> Self {
        assert!(depth >= 1 && depth <= (1 << A), "BlockRam depth {depth} does not fit {A} address bits");
        Self {
            clock: Default::default(),
            read_address: Default::default(),
            read_data: Default::default(),
            write_address: Default::default(),
            write_data: Default::default(),
            write_enable: Default::default(),
            _mem: RamWords::new(depth),
            _no_rw_check: false,
            _distributed: false,
        }
    }

    /// The RAM with words `base..base + words.len()` holding `words` at power-up (the block
    /// RAM's initial contents, an `initial` block that Yosys puts in its INITVAL), the rest as
    /// they were.
    pub fn with_contents(mut self, base: usize, words: &[u64]) -> Self {
        assert!(
            base + words.len() <= self._mem.len(),
            "{} initial words from {base} past the end of a RAM of {}",
            words.len(),
            self._mem.len()
        );
        for (i, w) in words.iter().enumerate() {
            self._mem.0[base + i] = (*w).into();
        }
        self
    }

    /// The RAM with its Verilog memory marked `no_rw_check`: for an owner that never reads a
    /// word in the cycle it is written, so Yosys adds no collision bypass and the block RAM's
    /// output goes straight to the owner's register. (The simulation stays read-first.)
    pub fn without_collision_check(mut self) -> Self {
        self._no_rw_check = true;
        self
    }

    /// The RAM in LUT RAM whatever its depth (`ram_style = "distributed"` on its Verilog
    /// memory): Yosys maps a RAM deeper than 32 words to a DP16KD, whose output without its
    /// register leaves 5.8 ns after the clock and may sit far from its reader on a large part,
    /// where LUT RAM is read through a few LUTs into its read register beside the logic. For
    /// small RAMs on a timing path (same cycle behaviour, no block RAM used).
    pub fn distributed(mut self) -> Self {
        self._distributed = true;
        self
    }

    /// The Verilog `initial` block of every word, empty when all are zero. Every word, zero or
    /// not, in the same text width: Yosys names cells after their source lines, and its results
    /// depend on the names, so the values must not move a line.
    fn initial_block(&self) -> String {
        if self._mem.0.iter().all(|w| !w.any()) {
            return String::new();
        }
        let digits = D.div_ceil(4);
        let words: Vec<String> = self
            ._mem
            .0
            .iter()
            .enumerate()
            .map(|(i, w)| format!("   mem[{i:2}] = {D}'h{:0digits$x};\n", w.index()))
            .collect();
        format!("\ninitial begin\n{}end\n", words.concat())
    }

    /// Number of words.
    pub fn depth(&self) -> usize {
        self._mem.len()
    }
}

impl<const A: usize, const D: usize> Logic for BlockRam<A, D> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            self.read_data.next = self._mem.read(self.read_address.val().index());
            self._mem.write(self.write_enable.val(), self.write_address.val().index(), self.write_data.val());
        }
    }

    fn connect(&mut self) {
        self.read_data.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(format!(
            "\
{attribute}{style}reg [{dmax}:0] mem [0:{last}];
{init}
always @(posedge clock) begin
   read_data <= mem[read_address];
   if (write_enable) begin
      mem[write_address] <= write_data;
   end
end
",
            attribute = if self._no_rw_check { "(* no_rw_check *)\n" } else { "" },
            style = if self._distributed { "(* ram_style = \"distributed\" *) " } else { "" },
            dmax = D - 1,
            last = self._mem.len() - 1,
            init = self.initial_block()
        ))
    }

    fn timing(&self) -> Vec<TimingInfo> {
        vec![TimingInfo {
            name: "block_ram".into(),
            clock: "clock".into(),
            inputs: vec!["read_address".into(), "write_address".into(), "write_data".into(), "write_enable".into()],
            outputs: vec!["read_data".into()],
        }]
    }
}

/// Verilog of ECP5 `DP16KD` blocks in 1024 × 18 mode holding `width` bits of up to 1024 words:
/// written on port A (`we`, `wa`, `wd`), read on port B (`ra`) with the output register on
/// (`REGMODE_B` = `OUTREG`, which Yosys does not infer), so the read data leaves a register
/// inside the block two enabled clocks after its address (`re` enables both read registers).
/// Address and data are given as vector names; `ra_bits`/`wa_bits` low bits are used.
#[allow(clippy::too_many_arguments)]
pub(crate) fn dp16kd_1024x18(
    name: &str,
    width: usize,
    clock: &str,
    ra: &str,
    ra_bits: usize,
    re: &str,
    wa: &str,
    wa_bits: usize,
    wd: &str,
    we: &str,
    out: &str,
) -> String {
    let pins = |port: &str, addr: &str, bits: usize, write: bool| -> String {
        (0..14)
            .map(|b| {
                let x = if b < 4 {
                    // Byte enables (on for writes) at 18 bits.
                    if write && b < 2 {
                        "1'b1".to_string()
                    } else {
                        "1'b0".to_string()
                    }
                } else if b - 4 < bits.min(10) {
                    format!("{addr}[{}]", b - 4)
                } else {
                    "1'b0".to_string()
                };
                format!(".AD{port}{b}({x})")
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut code = String::new();
    for k in 0..width.div_ceil(18) {
        let mut data = vec![];
        for pin in 0..18 {
            let bit = k * 18 + pin;
            if bit < width {
                data.push(format!(".DIA{pin}({wd}[{bit}])"));
                data.push(format!(".DOB{pin}({out}[{bit}])"));
            } else {
                data.push(format!(".DIA{pin}(1'b0)"));
            }
        }
        code += &format!(
            "DP16KD #(.DATA_WIDTH_A(18), .DATA_WIDTH_B(18), .REGMODE_A(\"NOREG\"), .REGMODE_B(\"OUTREG\"), \
.RESETMODE(\"SYNC\"), .CSDECODE_A(\"0b000\"), .CSDECODE_B(\"0b000\"), .WRITEMODE_A(\"NORMAL\"), \
.WRITEMODE_B(\"NORMAL\"), .GSR(\"DISABLED\")) {name}{k} (\n  .CLKA({clock}), .CEA(1'b1), .OCEA(1'b1), \
.WEA({we}), .RSTA(1'b0), .CSA0(1'b0), .CSA1(1'b0), .CSA2(1'b0),\n  {},\n  .CLKB({clock}), .CEB({re}), \
.OCEB({re}), .WEB(1'b0), .RSTB(1'b0), .CSB0(1'b0), .CSB1(1'b0), .CSB2(1'b0),\n  {},\n  {});\n",
            pins("A", wa, wa_bits, true),
            pins("B", ra, ra_bits, false),
            data.join(", ")
        );
    }
    code
}

/// Simple dual-port RAM of `depth` words of `D` bits with a registered output: read latency 2.
///
/// Timing: `read_data` holds the word at the `read_address` presented two enabled rising edges
/// ago (the RAM's own read register, then an output register with no logic in between, so the
/// block RAM's clock-to-output time is the only delay on that path). Both read registers hold
/// while `read_enable` is low (a stalled pipeline keeps its data). A write lands at the
/// rising edge; a read of the same address in the same cycle returns the old word (read-first).
/// Zero at power-up in simulation. Synthesis (up to 1024 words) instantiates ECP5 DP16KDs in
/// 1024 × 18 mode with the output register inside the block (`OUTREG`, which Yosys does not
/// infer); simulators, or synthesis with `SPOTAGG_INFERRED_RAM` defined, take the portable
/// template with the same cycle behaviour. A read of the word written in the same cycle is
/// read-first in the template and undefined in the DP16KD: the core never uses such a read.
#[derive(LogicBlock)]
pub struct PipelinedRam<const A: usize, const D: usize> {
    /// Clock of both ports.
    pub clock: Signal<In, Clock>,
    /// Read address.
    pub read_address: Signal<In, Bits<A>>,
    /// Read registers advance.
    pub read_enable: Signal<In, Bit>,
    /// Word at the read address of two enabled cycles before.
    pub read_data: Signal<Out, Bits<D>>,
    /// Write address.
    pub write_address: Signal<In, Bits<A>>,
    /// Word to write.
    pub write_data: Signal<In, Bits<D>>,
    /// Write strobe.
    pub write_enable: Signal<In, Bit>,
    _mem: RamWords<D>,
    _stage: Bits<D>,
}

impl<const A: usize, const D: usize> PipelinedRam<A, D> {
    /// A RAM of `depth` words (at most 2^A).
    pub fn new(depth: usize) -> Self {
        assert!(depth >= 1 && depth <= (1 << A), "PipelinedRam depth {depth} does not fit {A} address bits");
        Self {
            clock: Default::default(),
            read_address: Default::default(),
            read_enable: Default::default(),
            read_data: Default::default(),
            write_address: Default::default(),
            write_data: Default::default(),
            write_enable: Default::default(),
            _mem: RamWords::new(depth),
            _stage: Bits::default(),
        }
    }
}

impl<const A: usize, const D: usize> Logic for PipelinedRam<A, D> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            if self.read_enable.val() {
                self.read_data.next = self._stage;
                self._stage = self._mem.read(self.read_address.val().index());
            }
            self._mem.write(self.write_enable.val(), self.write_address.val().index(), self.write_data.val());
        }
    }

    fn connect(&mut self) {
        self.read_data.connect();
    }

    fn hdl(&self) -> Verilog {
        let model = format!(
            "\
reg [{dmax}:0] mem [0:{last}];
reg [{dmax}:0] stage;
reg [{dmax}:0] out;

always @(posedge clock) begin
   if (read_enable) begin
      stage <= mem[read_address];
      out <= stage;
   end
   if (write_enable) begin
      mem[write_address] <= write_data;
   end
end
assign read_data = out;
",
            dmax = D - 1,
            last = self._mem.len() - 1
        );
        // Simulators take the model; synthesis (Yosys defines SYNTHESIS) the DP16KDs with
        // their output register, unless SPOTAGG_INFERRED_RAM asks for the portable template.
        let code = if A <= 10 {
            format!(
                "`ifndef SYNTHESIS\n{model}`elsif SPOTAGG_INFERRED_RAM\n{model}`else\n{}`endif\n",
                dp16kd_1024x18(
                    "ram",
                    D,
                    "clock",
                    "read_address",
                    A,
                    "read_enable",
                    "write_address",
                    A,
                    "write_data",
                    "write_enable",
                    "read_data"
                )
            )
        } else {
            model
        };
        Verilog::Wrapper(Wrapper { code, cores: String::new() })
    }

    fn timing(&self) -> Vec<TimingInfo> {
        vec![TimingInfo {
            name: "pipelined_ram".into(),
            clock: "clock".into(),
            inputs: vec![
                "read_address".into(),
                "read_enable".into(),
                "write_address".into(),
                "write_data".into(),
                "write_enable".into(),
            ],
            outputs: vec!["read_data".into()],
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use crate::step::settle;

    /// The words of a RAM as the contract states them: a read past the end gives zero, a write
    /// past the end is lost.
    struct Words(Vec<u16>);

    impl Words {
        fn read(&self, address: usize) -> u16 {
            self.0.get(address).copied().unwrap_or(0)
        }

        fn write(&mut self, write: Option<(usize, u16)>) {
            if let Some(word) = write.and_then(|(a, _)| self.0.get_mut(a)) {
                *word = write.unwrap().1;
            }
        }
    }

    /// Mostly one of 6 addresses (the first, the last, past the end), so that reads and writes
    /// of one address meet often; sometimes any of the 2^A.
    fn pick(rng: &mut Rng, depth: usize, bits: usize) -> usize {
        let hot = [0, 1, 2, depth - 1, depth, (1 << bits) - 1];
        if rng.one_in(6) {
            rng.below(1 << bits) as usize
        } else {
            hot[rng.below(hot.len() as u64) as usize]
        }
    }

    /// Random traffic: (read address, write address, data, write enable); a quarter of the
    /// cycles write the address they read.
    fn traffic(rng: &mut Rng, depth: usize, bits: usize) -> (usize, usize, u16, bool) {
        let read = pick(rng, depth, bits);
        let write = if rng.one_in(4) { read } else { pick(rng, depth, bits) };
        (read, write, rng.next() as u16, rng.one_in(2))
    }

    /// A `BlockRam<4, 16>` of 12 words holding `initial` at power-up against a model of its
    /// contract: 16 cycles reading every address with no write (the power-up contents, zero
    /// past the end), then 3000 cycles of a random read and write (half enabled; strobe low,
    /// the address and data still change): every cycle's `read_data` from cycle 1 on is the
    /// word at the previous cycle's read address before that cycle's write (read-first), and
    /// reads met a write of a new word to their address in their own cycle and the one before.
    fn check_block_ram(mut b: BlockRam<4, 16>, initial: Vec<u16>, seed: u64, what: &str) {
        b.connect_all();
        assert_eq!(b.depth(), 12);
        let mut rng = Rng(seed);
        let mut words = Words(initial);
        let mut pending: Option<(usize, u16)> = None;
        let (mut same_cycle, mut cycle_after, mut checked) = (0, 0, 0);
        let mut last_write = None;
        for c in 0..3016u64 {
            let (ra, wa, wd, we) = if c < 16 { (c as usize, 0, 0, false) } else { traffic(&mut rng, 12, 4) };
            b.read_address.next = (ra as u64).into();
            b.write_address.next = (wa as u64).into();
            b.write_data.next = u64::from(wd).into();
            b.write_enable.next = we;
            settle(&mut b);
            if let Some((a, word)) = pending {
                let got = b.read_data.val().index() as u16;
                assert_eq!(got, word, "{what}, cycle {c}: read data of address {a} (read in cycle {})", c - 1);
                checked += 1;
            }
            let old = words.read(ra);
            pending = Some((ra, old));
            words.write(we.then_some((wa, wd)));
            if we && wa == ra && ra < 12 && old != wd {
                same_cycle += 1;
            }
            if last_write == Some(ra) {
                cycle_after += 1;
            }
            last_write = we.then_some(wa).filter(|&a| a < 12 && words.read(a) != old);
            tick!(&mut b);
        }
        assert!(
            checked == 3015 && same_cycle > 200 && cycle_after > 100,
            "{what}: {checked} {same_cycle} {cycle_after}"
        );
    }

    /// [`check_block_ram`] on a plain RAM.
    #[test]
    fn block_ram_follows_the_model_of_the_contract() {
        check_block_ram(BlockRam::new(12), vec![0; 12], 0x1357_9bdf_2468_ace0, "plain");
    }

    /// [`check_block_ram`] on a RAM with initial contents and on the distributed and
    /// no-collision-check variants (the same cycle behaviour in simulation).
    #[test]
    fn block_ram_variants_follow_the_model_of_the_contract() {
        let initial: Vec<u16> =
            (0..12).map(|i| if (3..10).contains(&i) { 0x1111 * (i as u16 - 2) } else { 0 }).collect();
        let contents: Vec<u64> = initial[3..10].iter().map(|&w| u64::from(w)).collect();
        check_block_ram(BlockRam::new(12).with_contents(3, &contents), initial, 0x0f1e_2d3c_4b5a_6978, "with contents");
        check_block_ram(BlockRam::new(12).distributed(), vec![0; 12], 0x7766_5544_3322_1100, "distributed");
        check_block_ram(BlockRam::new(12).without_collision_check(), vec![0; 12], 0xa5a5_5a5a_c3c3_3c3c, "no rw check");
    }

    /// A `PipelinedRam<5, 16>` of 24 words, 4000 cycles of a random read and write (half
    /// enabled) with `read_enable` high two cycles in three: from the second enabled edge on,
    /// every cycle's `read_data` is the word that the read address of the second-to-last
    /// enabled edge held before that edge's write (read-first), held through cycles with
    /// `read_enable` low, while writes land whatever `read_enable` is.
    #[test]
    fn pipelined_ram_follows_the_model_of_the_contract() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut b = PipelinedRam::<5, 16>::new(24);
        b.connect_all();
        let mut words = Words(vec![0; 24]);
        // The reads of the last two enabled edges, older first: (cycle, address, word).
        let mut reads: [Option<(u64, usize, u16)>; 2] = [None, None];
        let (mut same_cycle, mut held, mut checked) = (0, 0, 0);
        for c in 0..4000u64 {
            let (ra, wa, wd, we) = traffic(&mut rng, 24, 5);
            let re = !rng.one_in(3);
            b.read_address.next = (ra as u64).into();
            b.read_enable.next = re;
            b.write_address.next = (wa as u64).into();
            b.write_data.next = u64::from(wd).into();
            b.write_enable.next = we;
            settle(&mut b);
            if let Some((rc, a, word)) = reads[0] {
                let got = b.read_data.val().index() as u16;
                assert_eq!(got, word, "cycle {c}: read data of address {a} (read in cycle {rc})");
                checked += 1;
                held += usize::from(!re);
            }
            if re {
                let old = words.read(ra);
                reads = [reads[1], Some((c, ra, old))];
                if we && wa == ra && ra < 24 && old != wd {
                    same_cycle += 1;
                }
            }
            words.write(we.then_some((wa, wd)));
            tick!(&mut b);
        }
        assert!(checked > 3990 && same_cycle > 200 && held > 1000, "{checked} {same_cycle} {held}");
    }
}
