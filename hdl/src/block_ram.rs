//! A simple dual-port block RAM: one write port, one read port, one clock.
//!
//! Timing: the read data is registered: `read_data` holds the word at the `read_address`
//! presented before the last rising edge (one cycle of latency). A write lands at the rising
//! edge; a read of the same address in the same cycle returns the old word (read-first).
//! Every word is zero at power-up in simulation (the FPGA's block RAM initial value). The Verilog is the inference template Yosys maps to
//! ECP5 DP16KD (or LUT RAM when small).

use rust_hdl::prelude::*;

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
    _mem: Vec<Bits<D>>,
}

impl<const A: usize, const D: usize> BlockRam<A, D> {
    /// A RAM of `depth` words (at most 2^A).
    pub fn new(depth: usize) -> Self {
        assert!(
            depth >= 1 && depth <= (1 << A),
            "BlockRam depth {depth} does not fit {A} address bits"
        );
        Self {
            clock: Default::default(),
            read_address: Default::default(),
            read_data: Default::default(),
            write_address: Default::default(),
            write_data: Default::default(),
            write_enable: Default::default(),
            _mem: vec![Bits::<D>::default(); depth],
        }
    }

    /// Number of words.
    pub fn depth(&self) -> usize {
        self._mem.len()
    }
}

impl<const A: usize, const D: usize> Logic for BlockRam<A, D> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            let ra = self.read_address.val().index();
            self.read_data.next = if ra < self._mem.len() {
                self._mem[ra]
            } else {
                Bits::default()
            };
            if self.write_enable.val() {
                let wa = self.write_address.val().index();
                if wa < self._mem.len() {
                    self._mem[wa] = self.write_data.val();
                }
            }
        }
    }

    fn connect(&mut self) {
        self.read_data.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(format!(
            "\
reg [{dmax}:0] mem [0:{last}];

always @(posedge clock) begin
   read_data <= mem[read_address];
   if (write_enable) begin
      mem[write_address] <= write_data;
   end
end
",
            dmax = D - 1,
            last = self._mem.len() - 1
        ))
    }

    fn timing(&self) -> Vec<TimingInfo> {
        vec![TimingInfo {
            name: "block_ram".into(),
            clock: "clock".into(),
            inputs: vec![
                "read_address".into(),
                "write_address".into(),
                "write_data".into(),
                "write_enable".into(),
            ],
            outputs: vec!["read_data".into()],
        }]
    }
}

/// Simple dual-port RAM of `depth` words of `D` bits with a registered output: read latency 2.
///
/// Timing: `read_data` holds the word at the `read_address` presented two enabled rising edges
/// ago (the RAM's own read register, then an output register with no logic in between, so the
/// block RAM's clock-to-output time is the only delay on that path). Both read registers hold
/// while `read_enable` is low (a stalled pipeline keeps its data). A write lands at the
/// rising edge; a read of the same address in the same cycle returns the old word (read-first).
/// Zero at power-up in simulation. Yosys maps the template to DP16KD with the output register
/// in the fabric right after the block (it does not infer the DP16KD's own OUTREG).
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
    _mem: Vec<Bits<D>>,
    _stage: Bits<D>,
}

impl<const A: usize, const D: usize> PipelinedRam<A, D> {
    /// A RAM of `depth` words (at most 2^A).
    pub fn new(depth: usize) -> Self {
        assert!(
            depth >= 1 && depth <= (1 << A),
            "PipelinedRam depth {depth} does not fit {A} address bits"
        );
        Self {
            clock: Default::default(),
            read_address: Default::default(),
            read_enable: Default::default(),
            read_data: Default::default(),
            write_address: Default::default(),
            write_data: Default::default(),
            write_enable: Default::default(),
            _mem: vec![Bits::<D>::default(); depth],
            _stage: Bits::default(),
        }
    }
}

impl<const A: usize, const D: usize> Logic for PipelinedRam<A, D> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            if self.read_enable.val() {
                self.read_data.next = self._stage;
                let ra = self.read_address.val().index();
                self._stage = if ra < self._mem.len() {
                    self._mem[ra]
                } else {
                    Bits::default()
                };
            }
            if self.write_enable.val() {
                let wa = self.write_address.val().index();
                if wa < self._mem.len() {
                    self._mem[wa] = self.write_data.val();
                }
            }
        }
    }

    fn connect(&mut self) {
        self.read_data.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(format!(
            "\
reg [{dmax}:0] mem [0:{last}];
reg [{dmax}:0] stage;

always @(posedge clock) begin
   if (read_enable) begin
      stage <= mem[read_address];
      read_data <= stage;
   end
   if (write_enable) begin
      mem[write_address] <= write_data;
   end
end
",
            dmax = D - 1,
            last = self._mem.len() - 1
        ))
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
