//! Clock-domain crossings: small blocks of our own, each with the one discipline it relies on
//! written in its documentation, and tested in rust-hdl simulation with two clocks of unrelated
//! periods and linted by Verilator.
//!
//! Rules every block keeps (the verilog-ethernet / LiteX practice):
//! - a signal leaves its clock domain only from a flip-flop of that domain (no logic between the
//!   last register of the source and the first of the destination);
//! - a single bit that may change at any time crosses through two flip-flops ([`BitSync`]), and
//!   only where each bit means something on its own (a skew of a clock between bits is harmless);
//! - a pulse crosses as a toggle ([`PulseSync`]);
//! - a multi-bit value crosses only with a handshake that holds it stable in a source register
//!   from before the request until after the acknowledge: [`BusSync`] (a value, atomically),
//!   [`StreamCrossing`] (a stream, one word in flight), [`RequestAck`] (a question and its
//!   answer), all built on the same toggle request and acknowledge as [`Handshake`].
//!
//! rust-hdl 0.46 has synchronizers of its own (`BitSynchronizer`, `SyncSender`/`SyncReceiver`,
//! `VectorSynchronizer`, `AsynchronousFIFO`), not used here: `SyncSender` drives its request
//! flag combinationally from its `send` input and pulses it for a clock at the end of every
//! transfer (its `WaitDone` → `Idle`), which its receiver may take for a new request.
//!
//! nextpnr reports the paths between clocks but does not time them (the LPF says
//! `BLOCK ASYNCPATHS`); each block's documentation says why its crossing paths need no timing.

pub mod bit_sync;
pub mod bus_sync;
pub mod handshake;
pub mod pulse_sync;
pub mod request_ack;
pub mod stream_crossing;

pub use bit_sync::BitSync;
pub use bus_sync::BusSync;
pub use handshake::Handshake;
pub use pulse_sync::PulseSync;
pub use request_ack::RequestAck;
pub use stream_crossing::StreamCrossing;

/// Two clocks of unrelated periods for the blocks' tests: edges in time order.
#[cfg(test)]
pub(crate) mod two_clocks {
    /// Which clock edged, and whether it rose.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Edge {
        /// 0: the source clock, 1: the destination clock.
        pub clock: usize,
        /// A rising edge.
        pub rising: bool,
    }

    /// Clocks of periods `periods` (ps), first rising edges half a period in.
    pub struct TwoClocks {
        periods: [u64; 2],
        next: [u64; 2],
        high: [bool; 2],
        /// Time of the last edge, ps.
        pub now: u64,
    }

    impl TwoClocks {
        /// Source and destination periods in ps.
        pub fn new(periods: [u64; 2]) -> TwoClocks {
            TwoClocks { periods, next: periods.map(|p| p / 2), high: [false; 2], now: 0 }
        }

        /// The next edge of either clock (the source's first at a tie).
        pub fn next_edge(&mut self) -> Edge {
            let clock = if self.next[0] <= self.next[1] { 0 } else { 1 };
            self.now = self.next[clock];
            self.next[clock] += self.periods[clock] / 2;
            self.high[clock] = !self.high[clock];
            Edge { clock, rising: self.high[clock] }
        }
    }

    /// A xorshift generator for the tests' stimuli.
    pub struct Rng(pub u32);

    impl Rng {
        /// The next value.
        pub fn next(&mut self) -> u32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 17;
            self.0 ^= self.0 << 5;
            self.0
        }

        /// True one time in `n`, about.
        pub fn one_in(&mut self, n: u32) -> bool {
            self.next().is_multiple_of(n)
        }
    }

    /// The period pairs every block is tested with (ps): a fast source and a slow destination
    /// (the core clock into the EAPS node's), the other way round, and two close but unrelated
    /// periods.
    pub const PERIODS: [[u64; 2]; 3] = [[10_000, 20_000], [20_000, 10_000], [8_000, 7_300]];

    /// Verilator `-Wall` lint of a block's Verilog with rust-hdl's unavoidable waivers (one
    /// file; Rust integer literals as 32-bit constants).
    pub fn lint(what: &str, verilog: &str) {
        lint_with(what, verilog, "");
    }

    /// [`lint`] with `extra` waivers (Verilator configuration lines).
    pub fn lint_with(what: &str, verilog: &str, extra: &str) {
        if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator) {
            return;
        }
        let waivers = format!(
            "`verilator_config\nlint_off -rule DECLFILENAME -file \"*top.v\"\n\
             lint_off -rule WIDTH -file \"*top.v\"\n{extra}"
        );
        let (ok, log) = spotagg_testkit::verilator_lint(verilog, &waivers, "-Wall");
        assert!(ok, "{what}: verilator -Wall:\n{log}");
        let warnings: Vec<&str> = log.lines().filter(|l| l.starts_with("%Warning")).collect();
        assert!(warnings.is_empty(), "{what}: verilator -Wall:\n{log}");
    }
}
