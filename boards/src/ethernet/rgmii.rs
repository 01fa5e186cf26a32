//! RGMII ↔ GMII around the ECP5 DDR registers.
//!
//! Receive ([`RgmiiRx`]): each of `rxd[3:0]` and `rx_ctl` goes through an `IDDRX1F` clocked by
//! `rxc`: the rising-edge sample is the low nibble and RX_DV, the falling-edge sample the high
//! nibble and RX_DV xor RX_ER (RGMII 2.0). GMII out, one byte a `rxc` clock. When the PHY does
//! not delay RXC, a `DELAYG` of about 2 ns sits in each data/control input.
//!
//! Transmit ([`RgmiiTx`]): each of `txd[3:0]` and `tx_ctl` is an `ODDRX1F` on the transmit
//! clock: the low nibble and TX_EN while the clock is high, the high nibble and TX_EN xor TX_ER
//! while it is low; TXC is an `ODDRX1F` sending 1 then 0 (edge-aligned with the data), through
//! a `DELAYG` of about 2 ns when the PHY does not delay it itself.

use crate::ecp5::{Delayg, Iddrx1f, Oddrx1f};
use rust_hdl::prelude::*;

/// DELAYG taps for the RGMII skew (about 2 ns at about 25 ps a tap).
pub const RGMII_SKEW_TAPS: u8 = 80;

/// RGMII receive to GMII.
#[derive(LogicBlock)]
pub struct RgmiiRx {
    /// Receive clock from the PHY.
    pub rxc: Signal<In, Clock>,
    /// RX_CTL pin.
    pub rx_ctl: Signal<In, Bit>,
    /// RXD pins.
    pub rxd: Signal<In, Bits<4>>,
    /// GMII data.
    pub gmii_rxd: Signal<Out, Bits<8>>,
    /// GMII data valid.
    pub gmii_rx_dv: Signal<Out, Bit>,
    /// GMII error.
    pub gmii_rx_er: Signal<Out, Bit>,
    delay0: Delayg,
    delay1: Delayg,
    delay2: Delayg,
    delay3: Delayg,
    delay_ctl: Delayg,
    ddr0: Iddrx1f,
    ddr1: Iddrx1f,
    ddr2: Iddrx1f,
    ddr3: Iddrx1f,
    ddr_ctl: Iddrx1f,
}

impl RgmiiRx {
    /// Receive side; `delay` adds the 2 ns skew in the FPGA (PHY without RX delay).
    pub fn new(delay: bool) -> Self {
        let t = if delay { RGMII_SKEW_TAPS } else { 0 };
        Self {
            rxc: Default::default(),
            rx_ctl: Default::default(),
            rxd: Default::default(),
            gmii_rxd: Default::default(),
            gmii_rx_dv: Default::default(),
            gmii_rx_er: Default::default(),
            delay0: Delayg::new(t),
            delay1: Delayg::new(t),
            delay2: Delayg::new(t),
            delay3: Delayg::new(t),
            delay_ctl: Delayg::new(t),
            ddr0: Default::default(),
            ddr1: Default::default(),
            ddr2: Default::default(),
            ddr3: Default::default(),
            ddr_ctl: Default::default(),
        }
    }
}

impl Logic for RgmiiRx {
    #[hdl_gen]
    fn update(&mut self) {
        self.ddr0.sclk.next = self.rxc.val();
        self.ddr1.sclk.next = self.rxc.val();
        self.ddr2.sclk.next = self.rxc.val();
        self.ddr3.sclk.next = self.rxc.val();
        self.ddr_ctl.sclk.next = self.rxc.val();
        self.delay0.a.next = self.rxd.val().get_bit(0);
        self.delay1.a.next = self.rxd.val().get_bit(1);
        self.delay2.a.next = self.rxd.val().get_bit(2);
        self.delay3.a.next = self.rxd.val().get_bit(3);
        self.delay_ctl.a.next = self.rx_ctl.val();
        self.ddr0.d.next = self.delay0.z.val();
        self.ddr1.d.next = self.delay1.z.val();
        self.ddr2.d.next = self.delay2.z.val();
        self.ddr3.d.next = self.delay3.z.val();
        self.ddr_ctl.d.next = self.delay_ctl.z.val();
        self.gmii_rxd.next = 0.into();
        self.gmii_rxd.next = self.gmii_rxd.val().replace_bit(0, self.ddr0.q0.val());
        self.gmii_rxd.next = self.gmii_rxd.val().replace_bit(1, self.ddr1.q0.val());
        self.gmii_rxd.next = self.gmii_rxd.val().replace_bit(2, self.ddr2.q0.val());
        self.gmii_rxd.next = self.gmii_rxd.val().replace_bit(3, self.ddr3.q0.val());
        self.gmii_rxd.next = self.gmii_rxd.val().replace_bit(4, self.ddr0.q1.val());
        self.gmii_rxd.next = self.gmii_rxd.val().replace_bit(5, self.ddr1.q1.val());
        self.gmii_rxd.next = self.gmii_rxd.val().replace_bit(6, self.ddr2.q1.val());
        self.gmii_rxd.next = self.gmii_rxd.val().replace_bit(7, self.ddr3.q1.val());
        self.gmii_rx_dv.next = self.ddr_ctl.q0.val();
        self.gmii_rx_er.next = self.ddr_ctl.q0.val() ^ self.ddr_ctl.q1.val();
    }
}

/// GMII to RGMII transmit.
#[derive(LogicBlock)]
pub struct RgmiiTx {
    /// Transmit clock (125 MHz).
    pub clock: Signal<In, Clock>,
    /// GMII data.
    pub gmii_txd: Signal<In, Bits<8>>,
    /// GMII enable.
    pub gmii_tx_en: Signal<In, Bit>,
    /// GMII error.
    pub gmii_tx_er: Signal<In, Bit>,
    /// TXC pin.
    pub txc: Signal<Out, Bit>,
    /// TX_CTL pin.
    pub tx_ctl: Signal<Out, Bit>,
    /// TXD pins.
    pub txd: Signal<Out, Bits<4>>,
    ddr0: Oddrx1f,
    ddr1: Oddrx1f,
    ddr2: Oddrx1f,
    ddr3: Oddrx1f,
    ddr_ctl: Oddrx1f,
    ddr_clk: Oddrx1f,
    clk_delay: Delayg,
}

impl RgmiiTx {
    /// Transmit side; `delay` adds the 2 ns TXC skew in the FPGA (PHY without TX delay).
    pub fn new(delay: bool) -> Self {
        Self {
            clock: Default::default(),
            gmii_txd: Default::default(),
            gmii_tx_en: Default::default(),
            gmii_tx_er: Default::default(),
            txc: Default::default(),
            tx_ctl: Default::default(),
            txd: Default::default(),
            ddr0: Default::default(),
            ddr1: Default::default(),
            ddr2: Default::default(),
            ddr3: Default::default(),
            ddr_ctl: Default::default(),
            ddr_clk: Default::default(),
            clk_delay: Delayg::new(if delay { RGMII_SKEW_TAPS } else { 0 }),
        }
    }
}

impl Logic for RgmiiTx {
    #[hdl_gen]
    fn update(&mut self) {
        self.ddr0.sclk.next = self.clock.val();
        self.ddr1.sclk.next = self.clock.val();
        self.ddr2.sclk.next = self.clock.val();
        self.ddr3.sclk.next = self.clock.val();
        self.ddr_ctl.sclk.next = self.clock.val();
        self.ddr_clk.sclk.next = self.clock.val();
        self.ddr0.d0.next = self.gmii_txd.val().get_bit(0);
        self.ddr1.d0.next = self.gmii_txd.val().get_bit(1);
        self.ddr2.d0.next = self.gmii_txd.val().get_bit(2);
        self.ddr3.d0.next = self.gmii_txd.val().get_bit(3);
        self.ddr0.d1.next = self.gmii_txd.val().get_bit(4);
        self.ddr1.d1.next = self.gmii_txd.val().get_bit(5);
        self.ddr2.d1.next = self.gmii_txd.val().get_bit(6);
        self.ddr3.d1.next = self.gmii_txd.val().get_bit(7);
        self.ddr_ctl.d0.next = self.gmii_tx_en.val();
        self.ddr_ctl.d1.next = self.gmii_tx_en.val() ^ self.gmii_tx_er.val();
        self.ddr_clk.d0.next = true;
        self.ddr_clk.d1.next = false;
        self.clk_delay.a.next = self.ddr_clk.q.val();
        self.txc.next = self.clk_delay.z.val();
        self.tx_ctl.next = self.ddr_ctl.q.val();
        self.txd.next = 0.into();
        self.txd.next = self.txd.val().replace_bit(0, self.ddr0.q.val());
        self.txd.next = self.txd.val().replace_bit(1, self.ddr1.q.val());
        self.txd.next = self.txd.val().replace_bit(2, self.ddr2.q.val());
        self.txd.next = self.txd.val().replace_bit(3, self.ddr3.q.val());
    }
}
