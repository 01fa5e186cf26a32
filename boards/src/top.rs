//! The board top: the [`SwitchFabric`] (MACs, FIFOs, merge, core, dispatch, bridge) inside the
//! board's FPGA primitives.
//!
//! ```text
//! clk25 ─ EHXPLLL ─ clk125 ─ core clock, transmit clock of both ports
//! eth{i}_rxc/rx_ctl/rxd ─ RgmiiRx (IDDRX1F [+ DELAYG]) ─ GMII ─┐
//!                                                            SwitchFabric
//! eth{i}_txc/tx_ctl/txd ─ RgmiiTx (ODDRX1F [+ DELAYG]) ─ GMII ─┘
//! ```
//!
//! Port names are the board definition's ([`Board::pins`]): `clk25`, `led_n`, `phy_reset_n`,
//! `mdc`, `mdio`, `eth{0,1}_rxc`, `eth{i}_rx_ctl`, `eth{i}_rxd[3:0]`, `eth{i}_txc`,
//! `eth{i}_tx_ctl`, `eth{i}_txd[3:0]`; the module is `top`; the PLL's output net is `clk125`.
//!
//! - The core's configuration (the job) is loaded from a ROM once the PLL has locked; it is
//!   baked in at build time ([`BoardTop::new`]).
//! - `phy_reset_n` is held high (on the 5A-75B the 25 MHz clock comes from a PHY); MDC is low
//!   and MDIO is driven high (idle): the PHYs run on their strap settings.
//! - `led_n` blinks at about 1 Hz while the configuration is loaded (a heartbeat of clk125).
//! - RGMII delays follow [`Board::phy_delays`]: a `DELAYG` of about 2 ns where the PHY does not
//!   delay the clock itself.

use crate::ecp5::Pll25To125;
use crate::rgmii::{RgmiiRx, RgmiiTx};
use crate::switch_fabric::SwitchFabric;
use crate::Board;
use rust_hdl::prelude::*;
use spotagg_driver::JobConfig;
use spotagg_hdl::CoreConfig;

/// The board top.
#[derive(LogicBlock)]
pub struct BoardTop {
    /// 25 MHz oscillator.
    pub clk25: Signal<In, Clock>,
    /// User LED, active low.
    pub led_n: Signal<Out, Bit>,
    /// PHY reset, active low (held high).
    pub phy_reset_n: Signal<Out, Bit>,
    /// MDIO clock (held low).
    pub mdc: Signal<Out, Bit>,
    /// MDIO data (driven high, idle).
    pub mdio: Signal<Out, Bit>,
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
    pll: Pll25To125,
    rgmii_rx0: RgmiiRx,
    rgmii_rx1: RgmiiRx,
    rgmii_tx0: RgmiiTx,
    rgmii_tx1: RgmiiTx,
    fabric: SwitchFabric,
    heartbeat: DFF<Bits<27>>,
}

impl BoardTop {
    /// The top for `board`, a width-4 `core`, and `job` loaded at power-up.
    pub fn new(board: &Board, core: CoreConfig, job: &JobConfig) -> Self {
        Self {
            clk25: Default::default(),
            led_n: Default::default(),
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
            pll: Default::default(),
            rgmii_rx0: RgmiiRx::new(!board.phy_delays.rx_delay_in_phy),
            rgmii_rx1: RgmiiRx::new(!board.phy_delays.rx_delay_in_phy),
            rgmii_tx0: RgmiiTx::new(!board.phy_delays.tx_delay_in_phy),
            rgmii_tx1: RgmiiTx::new(!board.phy_delays.tx_delay_in_phy),
            fabric: SwitchFabric::new(core, job),
            heartbeat: Default::default(),
        }
    }
}

impl Logic for BoardTop {
    #[hdl_gen]
    fn update(&mut self) {
        self.pll.clkin.next = self.clk25.val();
        self.clk125.next = self.pll.clkout.val();
        self.heartbeat.clock.next = self.clk125.val();
        self.heartbeat.d.next = self.heartbeat.q.val() + 1;
        self.led_n.next = !(self.heartbeat.q.val().get_bit(26) & self.fabric.configured.val());
        self.phy_reset_n.next = true;
        self.mdc.next = false;
        self.mdio.next = true;
        // Receive.
        self.rgmii_rx0.rxc.next = self.eth0_rxc.val();
        self.rgmii_rx0.rx_ctl.next = self.eth0_rx_ctl.val();
        self.rgmii_rx0.rxd.next = self.eth0_rxd.val();
        self.rgmii_rx1.rxc.next = self.eth1_rxc.val();
        self.rgmii_rx1.rx_ctl.next = self.eth1_rx_ctl.val();
        self.rgmii_rx1.rxd.next = self.eth1_rxd.val();
        self.fabric.eth0_rx_clock.next = self.eth0_rxc.val();
        self.fabric.eth0_rxd.next = self.rgmii_rx0.gmii_rxd.val();
        self.fabric.eth0_rx_dv.next = self.rgmii_rx0.gmii_rx_dv.val();
        self.fabric.eth0_rx_er.next = self.rgmii_rx0.gmii_rx_er.val();
        self.fabric.eth1_rx_clock.next = self.eth1_rxc.val();
        self.fabric.eth1_rxd.next = self.rgmii_rx1.gmii_rxd.val();
        self.fabric.eth1_rx_dv.next = self.rgmii_rx1.gmii_rx_dv.val();
        self.fabric.eth1_rx_er.next = self.rgmii_rx1.gmii_rx_er.val();
        // Core.
        self.fabric.core_clock.next = self.clk125.val();
        self.fabric.start.next = self.pll.lock.val();
        self.fabric.counter_address.next = 0.into();
        self.fabric.port_counter_address.next = 0.into();
        // Transmit.
        self.rgmii_tx0.clock.next = self.clk125.val();
        self.rgmii_tx0.gmii_txd.next = self.fabric.eth0_txd.val();
        self.rgmii_tx0.gmii_tx_en.next = self.fabric.eth0_tx_en.val();
        self.rgmii_tx0.gmii_tx_er.next = self.fabric.eth0_tx_er.val();
        self.rgmii_tx1.clock.next = self.clk125.val();
        self.rgmii_tx1.gmii_txd.next = self.fabric.eth1_txd.val();
        self.rgmii_tx1.gmii_tx_en.next = self.fabric.eth1_tx_en.val();
        self.rgmii_tx1.gmii_tx_er.next = self.fabric.eth1_tx_er.val();
        self.eth0_txc.next = self.rgmii_tx0.txc.val();
        self.eth0_tx_ctl.next = self.rgmii_tx0.tx_ctl.val();
        self.eth0_txd.next = self.rgmii_tx0.txd.val();
        self.eth1_txc.next = self.rgmii_tx1.txc.val();
        self.eth1_tx_ctl.next = self.rgmii_tx1.tx_ctl.val();
        self.eth1_txd.next = self.rgmii_tx1.txd.val();
    }
}

/// The Verilog of the board top for `board`, a width-4 `core` and the `job` baked in: top
/// module `top`, ports named as in the board's LPF, the ECP5 primitives instantiated by name.
/// This is what synthesis (`yosys synth_ecp5 -top top`) takes.
pub fn board_verilog(board: &Board, core: CoreConfig, job: &JobConfig) -> String {
    let mut top = BoardTop::new(board, core, job);
    top.connect_all();
    generate_verilog(&top)
}

#[cfg(test)]
mod test {
    use super::*;
    use spotagg_driver::wire::PayloadSize;

    #[test]
    fn ports_match_the_board_pins() {
        let board = crate::colorlight_5a_75b_v8::board();
        let job = JobConfig::example(4, PayloadSize::B256, 4);
        let v = board_verilog(&board, CoreConfig::new(4, 4, 256, 32).unwrap(), &job);
        let header = &v[v.find("module top(").unwrap() + 11..];
        let ports: Vec<&str> = header[..header.find(");").unwrap()].split(',').map(str::trim).collect();
        for pin in board.pins() {
            let name = pin.port.split('[').next().unwrap();
            assert!(ports.contains(&name), "port {name} missing: {ports:?}");
        }
        for cell in ["EHXPLLL", "IDDRX1F", "ODDRX1F", "DELAYG"] {
            assert!(v.contains(cell), "{cell} not instantiated");
        }
        // The 5A-75B's PHYs delay RXC but not TXC: DELAYG of 80 taps on TXC only.
        assert!(v.contains("DEL_VALUE(80)"));
        assert!(v.contains("DEL_VALUE(0)"));
    }
}
