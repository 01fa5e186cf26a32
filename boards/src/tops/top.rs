//! The board top: the [`BoardLogic`] (MACs, FIFOs, merge, core, dispatch, bridge, control
//! link, MDIO master) inside the board's FPGA primitives.
//!
//! ```text
//! clk25 ─ EHXPLLL ─ clk125 ─ transmit clock of both ports (MACs, RGMII transmit)
//!                 ├ clk100 ─ core clock (100 or 83.33 MHz): merge, core, dispatch, bridge, control plane
//!                 └ clk50 ── the EAPS node's clock (and its time base)
//! eth{i}_rxc/rx_ctl/rxd ─ Rgmii: IDDRX1F [+ DELAYG] ─ GMII ─┐
//!                                                         BoardLogic ─ uart_tx, uart_rx
//! eth{i}_txc/tx_ctl/txd ─ Rgmii: ODDRX1F [+ DELAYG] ─ GMII ─┘    └─ mdc, mdio (BB pad)
//! ```
//!
//! Port names are the board definition's ([`Board::pins`]): `clk25`, `uart_tx`, `uart_rx`,
//! `phy_reset_n`, `mdc`, `mdio`, `eth{0,1}_rxc`, `eth{i}_rx_ctl`, `eth{i}_rxd[3:0]`,
//! `eth{i}_txc`, `eth{i}_tx_ctl`, `eth{i}_txd[3:0]`; the module is `top`; the PLL's output nets
//! are `pll.clk125`, `pll.clk100` (the core clock, whatever its frequency) and `pll.clk50`.
//!
//! Clocks: the 125 MHz clocks (both receive clocks, the transmit clock) carry only the MACs and
//! the FIFOs' ends; the core runs at the build's [`CoreClock`] (100 MHz with one job, 83.33 MHz
//! with two), which keeps up with both ports at line rate (the board-level simulation runs the
//! four clocks at their periods with back-to-back frames on both ports, nothing dropped). This is how LiteX and verilog-ethernet designs separate a
//! system clock from the PHY clocks; it lets the 125 MHz clocks meet their constraint with room
//! to spare where a 125 MHz core did not.
//!
//! - The core's configuration (the job) is loaded from a ROM once the PLL has locked; it is
//!   baked in at build time ([`BoardTop::new`], with the flow's build stamp) and is the power-up default: the control link
//!   (8N1 on `uart_tx`/`uart_rx`, 115200 baud by default) reads it back and replaces it at run
//!   time, reads every counter (the core's and the MACs') as one snapshot, and the link state
//!   of both ports.
//! - `phy_reset_n` is held high (on the 5A-75B the 25 MHz clock comes from a PHY). The MDIO
//!   master reads each PHY's registers at 2.5 MHz (MDC) through an ECP5 `BB` on `mdio`; it
//!   writes nothing, so the PHYs run on their strap settings.
//! - No LED is driven: the 5A-75B's user LED is the UART's transmit line (it flickers with
//!   each response).
//! - RGMII delays follow [`Board::phy_delays`]: a `DELAYG` of about 2 ns where the PHY does not
//!   delay the clock itself.

use crate::ecp5::mdio_pad::BidirPad;
use crate::ecp5::BoardPll;
use crate::ethernet::gmii::GmiiPort;
use crate::ethernet::rgmii::Rgmii;
use crate::tops::board_logic::{BoardLogic, ControlParams, EAPS_TIME_DIV};
use crate::tops::core_clock::CoreClock;
use crate::Board;
use rust_hdl::prelude::*;
use spotagg_driver::control::protocol::eaps::DomainSettings;
use spotagg_driver::JobConfig;
use spotagg_hdl::control_link::{BuildStamp, ControlIdentity};
use spotagg_hdl::CoreConfig;

/// The control plane of `board` with the core clock `clock`: its identity (with the UART's
/// clocks per bit and the flow's `build` stamp) and the MDC half period, counted in `clock`,
/// and the EAPS time unit, counted in the node's 50 MHz clock.
pub fn control_params(board: &Board, clock: CoreClock, build: BuildStamp) -> ControlParams {
    ControlParams {
        identity: ControlIdentity::stamp(u32::from(board.board_id), clock.baud_divisor(), build),
        mdc_half_period: clock.mdc_half_period(),
        eaps_time_div: EAPS_TIME_DIV,
        phy_addresses: board.phy_addresses,
    }
}

/// The EAPS node's clock in MHz (the PLL's `CLKOS2`): the node handles a few control PDUs a
/// hello period, and its long paths get 20 ns (docs/eaps.md §12).
pub const EAPS_CLOCK_MHZ: u32 = 50;

/// DP16KD block RAMs the board top takes besides its cores' slots and their frame and reply
/// buffers: the ports' receive and transmit FIFOs and the fabric's other buffers. Measured on the
/// 5A-75B at 30 slots (55 of 56 DP16KD: 30 slots, 4 buffers, 21 here; docs/performance.md, "The
/// board"). `spotagg build` starts its slot search from it, so that the search's first synthesis
/// is not one that cannot fit.
pub const BOARD_TOP_DP16KD: usize = 21;

/// The board top.
#[derive(LogicBlock)]
pub struct BoardTop<const J: usize = 1> {
    /// 25 MHz oscillator.
    pub clk25: Signal<In, Clock>,
    /// Control link transmit line.
    pub uart_tx: Signal<Out, Bit>,
    /// Control link receive line.
    pub uart_rx: Signal<In, Bit>,
    /// PHY reset, active low (held high).
    pub phy_reset_n: Signal<Out, Bit>,
    /// MDIO clock.
    pub mdc: Signal<Out, Bit>,
    /// MDIO data.
    pub mdio: Signal<InOut, Bit>,
    /// Port 0 receive clock.
    pub eth0_rxc: Signal<In, Clock>,
    /// Port 0 RX_CTL.
    pub eth0_rx_ctl: Signal<In, Bit>,
    /// Port 0 RXD.
    pub eth0_rxd: Signal<In, Bits<4>>,
    /// Port 0 TXC.
    pub eth0_txc: Signal<Out, Bit>,
    /// Port 0 TX_CTL.
    pub eth0_tx_ctl: Signal<Out, Bit>,
    /// Port 0 TXD.
    pub eth0_txd: Signal<Out, Bits<4>>,
    /// Port 1 receive clock.
    pub eth1_rxc: Signal<In, Clock>,
    /// Port 1 RX_CTL.
    pub eth1_rx_ctl: Signal<In, Bit>,
    /// Port 1 RXD.
    pub eth1_rxd: Signal<In, Bits<4>>,
    /// Port 1 TXC.
    pub eth1_txc: Signal<Out, Bit>,
    /// Port 1 TX_CTL.
    pub eth1_tx_ctl: Signal<Out, Bit>,
    /// Port 1 TXD.
    pub eth1_txd: Signal<Out, Bits<4>>,
    clk125: Signal<Local, Clock>,
    clk100: Signal<Local, Clock>,
    clk50: Signal<Local, Clock>,
    pll: BoardPll,
    rgmii: [Rgmii; 2],
    logic: BoardLogic<J>,
    mdio_pad: BidirPad,
}

impl<const J: usize> BoardTop<J> {
    /// The top for `board`, `J` width-4 cores (one a job, docs/switch.md §8; the first loaded
    /// with `job` at power-up, the others empty until the control link writes them), the core
    /// clock of `J` cores ([`CoreClock::for_jobs`]: 100 MHz for one, 83.33 MHz for two), the
    /// control link at 115200 baud, its identity with the flow's `build` stamp, MDC at 2.5 MHz
    /// at most, the EAPS time unit 1 µs, each counted in that clock.
    pub fn new(board: &Board, core: CoreConfig, job: &JobConfig, build: BuildStamp) -> Self {
        let clock = CoreClock::for_jobs(J);
        Self::with_control(board, core, job, control_params(board, clock, build), clock)
    }

    /// The top with the control plane of `params` and the core clock `clock` on the PLL's
    /// `CLKOS` (`params` counted in it).
    pub fn with_control(
        board: &Board,
        core: CoreConfig,
        job: &JobConfig,
        params: ControlParams,
        clock: CoreClock,
    ) -> Self {
        Self {
            clk25: Default::default(),
            uart_tx: Default::default(),
            uart_rx: Default::default(),
            phy_reset_n: Default::default(),
            mdc: Default::default(),
            mdio: Default::default(),
            eth0_rxc: Default::default(),
            eth0_rx_ctl: Default::default(),
            eth0_rxd: Default::default(),
            eth0_txc: Default::default(),
            eth0_tx_ctl: Default::default(),
            eth0_txd: Default::default(),
            eth1_rxc: Default::default(),
            eth1_rx_ctl: Default::default(),
            eth1_rxd: Default::default(),
            eth1_txc: Default::default(),
            eth1_tx_ctl: Default::default(),
            eth1_txd: Default::default(),
            clk125: Default::default(),
            clk100: Default::default(),
            clk50: Default::default(),
            pll: BoardPll::new(clock),
            rgmii: std::array::from_fn(|_| Rgmii::new(board.phy_delays)),
            logic: BoardLogic::with_jobs(core, std::slice::from_ref(job), params),
            mdio_pad: Default::default(),
        }
    }
}

impl<const J: usize> BoardTop<J> {
    /// The top without the EAPS node (`BoardLogic::without_eaps`).
    pub fn without_eaps(mut self) -> Self {
        self.logic = self.logic.without_eaps();
        self
    }

    /// The top with these EAPS domains configured and enabled at power-up
    /// (`BoardLogic::with_eaps_domains`).
    pub fn with_eaps_domains(mut self, domains: &[Option<DomainSettings>]) -> Self {
        self.logic = self.logic.with_eaps_domains(domains);
        self
    }
}

/// The EAPS node of a board top (`spotagg build`: the default, `--no-eaps`, `--eaps-config`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EapsBuild {
    /// No node: the two ports are a transparent bridge and the EAPS registers answer unknown.
    Off,
    /// The node, with no domain until the control link configures one (a transparent bridge
    /// until then).
    #[default]
    On,
    /// The node with these domains configured and enabled at power-up, as `spotagg ctl eaps
    /// configure` would write them (docs/control.md); the control link can still rewrite them.
    Baked(Vec<Option<DomainSettings>>),
}

impl EapsBuild {
    /// Whether the node is built in.
    pub fn built(&self) -> bool {
        *self != EapsBuild::Off
    }
}

impl<const J: usize> Logic for BoardTop<J> {
    #[hdl_gen]
    fn update(&mut self) {
        self.pll.clkin.next = self.clk25.val();
        self.clk125.next = self.pll.clk_tx.val();
        self.clk100.next = self.pll.clk_core.val();
        self.clk50.next = self.pll.clk_eaps.val();
        self.phy_reset_n.next = true;
        Signal::<InOut, Bit>::link(&mut self.mdio, &mut self.mdio_pad.b);
        self.mdc.next = self.logic.mdc.val();
        self.mdio_pad.o.next = self.logic.mdio_o.val();
        self.mdio_pad.oe.next = self.logic.mdio_oe.val();
        self.logic.mdio_i.next = self.mdio_pad.i.val();
        self.logic.uart_rx.next = self.uart_rx.val();
        self.uart_tx.next = self.logic.uart_tx.val();
        self.logic.core_clock.next = self.clk100.val();
        self.logic.tx_clock.next = self.clk125.val();
        self.logic.eaps_clock.next = self.clk50.val();
        self.logic.start.next = self.pll.lock.val();
        // The ports: pins to RGMII adapters, their GMII to the board logic's.
        self.rgmii[0].rxc.next = self.eth0_rxc.val();
        self.rgmii[0].rx_ctl.next = self.eth0_rx_ctl.val();
        self.rgmii[0].rxd.next = self.eth0_rxd.val();
        self.eth0_txc.next = self.rgmii[0].txc.val();
        self.eth0_tx_ctl.next = self.rgmii[0].tx_ctl.val();
        self.eth0_txd.next = self.rgmii[0].txd.val();
        self.rgmii[1].rxc.next = self.eth1_rxc.val();
        self.rgmii[1].rx_ctl.next = self.eth1_rx_ctl.val();
        self.rgmii[1].rxd.next = self.eth1_rxd.val();
        self.eth1_txc.next = self.rgmii[1].txc.val();
        self.eth1_tx_ctl.next = self.rgmii[1].tx_ctl.val();
        self.eth1_txd.next = self.rgmii[1].txd.val();
        for i in 0..2 {
            self.rgmii[i].tx_clock.next = self.clk125.val();
            GmiiPort::join(&mut self.logic.eth[i], &mut self.rgmii[i].gmii);
        }
    }
}

/// The Verilog of the board top for `board`, a width-4 `core` and the `job` baked in: top
/// module `top`, ports named as in the board's LPF, the ECP5 primitives instantiated by name.
/// The identity's git hash and build date are 0 (unknown); [`board_verilog_stamped`] gives
/// them. They are block RAM contents (`INITVAL`), so the netlist is the same either way.
pub fn board_verilog(board: &Board, core: CoreConfig, job: &JobConfig) -> String {
    board_verilog_stamped(board, core, job, BuildStamp::default())
}

/// [`board_verilog`] with the build flow's `build` stamp in the control link's identity: what
/// synthesis (`yosys synth_ecp5 -top top`) takes by default (`spotagg build`: one job, the EAPS
/// node built in).
pub fn board_verilog_stamped(board: &Board, core: CoreConfig, job: &JobConfig, build: BuildStamp) -> String {
    board_verilog_jobs(board, core, job, build, 1, &EapsBuild::On)
}

/// [`board_verilog_stamped`] with a core for each of `jobs` (1..=2) jobs (docs/switch.md §8),
/// `job` in the first one's ROM, and the EAPS node if `eaps` (docs/eaps.md §12; else the
/// ports are a transparent bridge).
pub fn board_verilog_jobs(
    board: &Board,
    core: CoreConfig,
    job: &JobConfig,
    build: BuildStamp,
    jobs: usize,
    eaps: &EapsBuild,
) -> String {
    fn v<const J: usize>(
        board: &Board,
        core: CoreConfig,
        job: &JobConfig,
        build: BuildStamp,
        eaps: &EapsBuild,
    ) -> String {
        let mut top = BoardTop::<J>::new(board, core, job, build);
        top = match eaps {
            EapsBuild::Off => top.without_eaps(),
            EapsBuild::On => top,
            EapsBuild::Baked(domains) => top.with_eaps_domains(domains),
        };
        top.connect_all();
        generate_verilog(&top)
    }
    assert!(
        (1..=spotagg_hdl::job_router::MAX_JOBS).contains(&jobs),
        "{jobs} jobs: the hardware is built for 1..={}",
        spotagg_hdl::job_router::MAX_JOBS
    );
    // The board top with its EAPS node is deep enough to overflow a test thread's stack in
    // rust-hdl's generation.
    crate::tops::on_big_stack(|| {
        if jobs == 1 {
            v::<1>(board, core, job, build, eaps)
        } else {
            v::<2>(board, core, job, build, eaps)
        }
    })
}

#[cfg(test)]
mod test {
    use super::*;
    use spotagg_driver::wire::PayloadSize;

    #[test]
    fn ports_match_the_board_pins() {
        let board = crate::board::colorlight_5a_75b_v8::board();
        let job = JobConfig::example(4, PayloadSize::B256, 4);
        let v = board_verilog(&board, CoreConfig::new(4, 4, 256, 32).unwrap(), &job);
        let header = &v[v.find("module top(").unwrap() + 11..];
        let ports: Vec<&str> = header[..header.find(");").unwrap()].split(',').map(str::trim).collect();
        for pin in board.pins() {
            let name = pin.port.split('[').next().unwrap();
            assert!(ports.contains(&name), "port {name} missing: {ports:?}");
        }
        for cell in ["EHXPLLL", "IDDRX1F", "ODDRX1F", "DELAYG", "BB"] {
            assert!(v.contains(cell), "{cell} not instantiated");
        }
        // The 5A-75B's PHYs delay RXC but not TXC: DELAYG of 80 taps on TXC only.
        assert!(v.contains("DEL_VALUE(80)"));
        assert!(v.contains("DEL_VALUE(0)"));
    }

    /// The PLL's dividers give the frequencies the LPF constrains and the control plane's
    /// divisors assume, for each core clock a build has: VCO inside 400–800 MHz, CLKOP = the
    /// transmit clock, CLKOS = the core clock, CLKOS2 = the EAPS node's
    /// clock (1 µs its time unit, whatever the core clock); 115200 baud within 0.1 %, MDC at
    /// most 2.5 MHz.
    #[test]
    fn pll_dividers_match_the_constraints() {
        let board = crate::board::colorlight_i5::i9();
        for (jobs, clock) in [(1, CoreClock::for_jobs(1)), (2, CoreClock::for_jobs(2))] {
            let mut pll = BoardPll::new(clock);
            pll.connect_all();
            let Verilog::Wrapper(w) = pll.hdl() else { panic!("the PLL is a wrapper") };
            let param = |name: &str| -> f64 {
                let at = w.code.find(&format!(".{name}(")).unwrap_or_else(|| panic!("{name} missing")) + name.len() + 2;
                w.code[at..at + w.code[at..].find(')').unwrap()].parse().unwrap()
            };
            let vco = 25.0 * param("CLKFB_DIV") * param("CLKOP_DIV") / param("CLKI_DIV");
            assert!((400.0..=800.0).contains(&vco), "VCO {vco} MHz");
            let lpf = crate::board::lpf::lpf_with_core_clock(&board, clock);
            let lpf_mhz = |net: &str| -> f64 {
                let line = lpf.lines().find(|l| l.contains(&format!("NET \"{net}\""))).expect("the net's constraint");
                line.split_whitespace().nth(3).unwrap().parse().unwrap()
            };
            let core_mhz = vco / param("CLKOS_DIV");
            assert_eq!(vco / param("CLKOP_DIV"), lpf_mhz(crate::board::lpf::PLL_CLOCK_NET));
            assert!((core_mhz - lpf_mhz(crate::board::lpf::CORE_CLOCK_NET)).abs() < 1e-5, "{jobs} jobs: {core_mhz}");
            assert_eq!(core_mhz, clock.mhz());
            assert!(w.code.contains(&format!("FREQUENCY_PIN_CLKOS=\"{}\"", clock.mhz_text())));
            let p = control_params(&board, clock, BuildStamp::default());
            let baud = core_mhz * 1e6 / f64::from(p.identity.baud_divisor);
            assert!((baud / 115_200.0 - 1.0).abs() < 1e-3, "{jobs} jobs: {baud} baud");
            let mdc = core_mhz / f64::from(2 * p.mdc_half_period);
            assert!(mdc <= 2.5 && mdc > 2.4, "{jobs} jobs: MDC {mdc} MHz");
            // CLKOS2: the EAPS node's clock, its time base one unit (1 µs) every eaps_time_div.
            assert_eq!(vco / param("CLKOS2_DIV"), lpf_mhz(crate::board::lpf::EAPS_CLOCK_NET));
            assert_eq!(vco / param("CLKOS2_DIV"), f64::from(EAPS_CLOCK_MHZ));
            assert!(w.code.contains(&format!("FREQUENCY_PIN_CLKOS2=\"{EAPS_CLOCK_MHZ}\"")));
            assert!(w.code.contains(".CLKOS2_ENABLE(\"ENABLED\")") && w.code.contains(".CLKOS2(clk50)"));
            assert_eq!(p.eaps_time_div, EAPS_CLOCK_MHZ, "{jobs} jobs: 1 µs a time unit");
        }
        assert_eq!(CoreClock::for_jobs(1).mhz(), 100.0, "a board of one job keeps its 100 MHz core");
    }
}
