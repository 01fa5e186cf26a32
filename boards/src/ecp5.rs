//! ECP5 primitives used by the board top, as black boxes with behavioural models.
//!
//! Each block's Verilog instantiates the vendor primitive by name (`EHXPLLL`, `IDDRX1F`,
//! `ODDRX1F`, `DELAYG`), which Yosys `synth_ecp5` knows from its cell library; nothing of
//! their insides is generated. Their `update` is a model for rust-hdl simulation:
//!
//! - [`Pll25To125`]: the output clock follows the input clock edge for edge (a simulation has
//!   no real frequencies), `lock` is high. On the chip: 25 MHz in, 125 MHz out (VCO 625 MHz).
//! - [`Iddrx1f`]: `q0` is `d` sampled at a rising edge of `sclk`, `q1` the sample at the
//!   following falling edge; both are presented at the next rising edge.
//! - [`Oddrx1f`]: `q` is `d0` (taken at a rising edge) while `sclk` is high, then `d1` (taken
//!   at the same rising edge) while it is low.
//! - [`Delayg`]: a fixed delay of `taps` × about 25 ps; the model is a wire.

use rust_hdl::prelude::*;

/// EHXPLLL configured for 125 MHz from 25 MHz.
#[derive(LogicBlock, Default)]
pub struct Pll25To125 {
    /// 25 MHz input.
    pub clkin: Signal<In, Clock>,
    /// 125 MHz output.
    pub clkout: Signal<Out, Clock>,
    /// The PLL has locked.
    pub lock: Signal<Out, Bit>,
}

impl Logic for Pll25To125 {
    fn update(&mut self) {
        self.clkout.next = self.clkin.val();
        self.lock.next = true;
    }
    fn connect(&mut self) {
        self.clkout.connect();
        self.lock.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: crate::core_top::pll_25_to_125("pll", "clkin", "clkout", "lock"),
            cores: String::new(),
        })
    }
}

/// Input DDR register, one bit.
#[derive(LogicBlock, Default)]
pub struct Iddrx1f {
    /// Pad input.
    pub d: Signal<In, Bit>,
    /// Clock.
    pub sclk: Signal<In, Clock>,
    /// Rising-edge sample.
    pub q0: Signal<Out, Bit>,
    /// Falling-edge sample.
    pub q1: Signal<Out, Bit>,
    _rise: Bit,
    _rise_held: Bit,
    _fall: Bit,
}

impl Logic for Iddrx1f {
    fn update(&mut self) {
        if self.sclk.pos_edge() {
            self.q0.next = self._rise_held;
            self.q1.next = self._fall;
            self._rise = self.d.val();
        }
        if self.sclk.neg_edge() {
            self._rise_held = self._rise;
            self._fall = self.d.val();
        }
    }
    fn connect(&mut self) {
        self.q0.connect();
        self.q1.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: "IDDRX1F iddr (.D(d), .SCLK(sclk), .RST(1'b0), .Q0(q0), .Q1(q1));\n".into(),
            cores: String::new(),
        })
    }
}

/// Output DDR register, one bit.
#[derive(LogicBlock, Default)]
pub struct Oddrx1f {
    /// Sent while the clock is high.
    pub d0: Signal<In, Bit>,
    /// Sent while the clock is low.
    pub d1: Signal<In, Bit>,
    /// Clock.
    pub sclk: Signal<In, Clock>,
    /// To the pad.
    pub q: Signal<Out, Bit>,
    _low: Bit,
}

impl Logic for Oddrx1f {
    fn update(&mut self) {
        if self.sclk.pos_edge() {
            self.q.next = self.d0.val();
            self._low = self.d1.val();
        }
        if self.sclk.neg_edge() {
            self.q.next = self._low;
        }
    }
    fn connect(&mut self) {
        self.q.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: "ODDRX1F oddr (.D0(d0), .D1(d1), .SCLK(sclk), .RST(1'b0), .Q(q));\n".into(),
            cores: String::new(),
        })
    }
}

/// Fixed delay element.
#[derive(LogicBlock)]
pub struct Delayg {
    /// Input.
    pub a: Signal<In, Bit>,
    /// Delayed output.
    pub z: Signal<Out, Bit>,
    _taps: u8,
}

impl Delayg {
    /// A delay of `taps` steps of about 25 ps (0..=127; 80 is about 2 ns, the RGMII skew).
    pub fn new(taps: u8) -> Self {
        assert!(taps < 128, "DELAYG taps = {taps} exceeds 127");
        Self { a: Default::default(), z: Default::default(), _taps: taps }
    }
}

impl Logic for Delayg {
    fn update(&mut self) {
        self.z.next = self.a.val();
    }
    fn connect(&mut self) {
        self.z.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: format!(
                "DELAYG #(.DEL_MODE(\"USER_DEFINED\"), .DEL_VALUE({})) delay (.A(a), .Z(z));\n",
                self._taps
            ),
            cores: String::new(),
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn ddr_models_round_trip_a_nibble_pair() {
        // An ODDR driving an IDDR on the same clock: a byte goes out as two nibbles per
        // clock and comes back whole.
        let mut o = Oddrx1f::default();
        let mut i = Iddrx1f::default();
        o.connect_all();
        i.connect_all();
        let mut got = vec![];
        for (k, &(d0, d1)) in [(true, false), (false, true), (true, true), (false, false), (false, false)].iter().enumerate() {
            for level in [true, false] {
                o.d0.next = d0;
                o.d1.next = d1;
                o.sclk.next = level.into();
                simulate(&mut o, 100);
                i.d.next = o.q.val();
                i.sclk.next = level.into();
                simulate(&mut i, 100);
            }
            let _ = k;
            got.push((i.q0.val(), i.q1.val()));
        }
        // Whatever the latency (here the IDDR sees the ODDR's new value at the same edge, a
        // zero-delay artefact), the pairs come back in order.
        let sent = [(true, false), (false, true), (true, true)];
        assert!(got.windows(3).any(|w| w == sent), "{got:?}");
    }
}
