//! RGMII ↔ GMII around the ECP5 DDR registers: one port's adapter ([`Rgmii`]), its GMII side a
//! [`GmiiPhy`] that the board logic's [`crate::ethernet::gmii::GmiiPort`] joins.
//!
//! Receive: each of `rxd[3:0]` and `rx_ctl` goes through an `IDDRX1F` clocked by `rxc`: the
//! rising-edge sample is the low nibble and RX_DV, the falling-edge sample the high nibble and
//! RX_DV xor RX_ER (RGMII 2.0). GMII out, one byte a `rxc` clock, with `rxc` as its receive
//! clock. When the PHY does not delay RXC, a `DELAYG` of about 2 ns sits in each data/control
//! input.
//!
//! Transmit: each of `txd[3:0]` and `tx_ctl` is an `ODDRX1F` on the transmit clock: the low
//! nibble and TX_EN while the clock is high, the high nibble and TX_EN xor TX_ER while it is
//! low; TXC is an `ODDRX1F` sending 1 then 0 (edge-aligned with the data), through a `DELAYG`
//! of about 2 ns when the PHY does not delay it itself.

use crate::ecp5::{Delayg, Iddrx1f, Oddrx1f};
use crate::ethernet::gmii::GmiiPhy;
use crate::PhyDelays;
use rust_hdl::prelude::*;

/// DELAYG taps for the RGMII skew (about 2 ns at about 25 ps a tap).
pub const RGMII_SKEW_TAPS: u8 = 80;

/// One RGMII port.
#[derive(LogicBlock)]
pub struct Rgmii {
    /// Receive clock from the PHY.
    pub rxc: Signal<In, Clock>,
    /// RX_CTL pin.
    pub rx_ctl: Signal<In, Bit>,
    /// RXD pins.
    pub rxd: Signal<In, Bits<4>>,
    /// Transmit clock (125 MHz).
    pub tx_clock: Signal<In, Clock>,
    /// TXC pin.
    pub txc: Signal<Out, Bit>,
    /// TX_CTL pin.
    pub tx_ctl: Signal<Out, Bit>,
    /// TXD pins.
    pub txd: Signal<Out, Bits<4>>,
    /// The GMII side.
    pub gmii: GmiiPhy,
    /// Receive: RXD bits 0..4, then RX_CTL.
    rx_delay: [Delayg; 5],
    rx_ddr: [Iddrx1f; 5],
    /// Transmit: TXD bits 0..4, TX_CTL, then TXC.
    tx_ddr: [Oddrx1f; 6],
    txc_delay: Delayg,
}

impl Rgmii {
    /// One port; a `DELAYG` of 2 ns in the FPGA on each side whose delay the PHY does not add.
    pub fn new(delays: PhyDelays) -> Self {
        let taps = |in_phy: bool| if in_phy { 0 } else { RGMII_SKEW_TAPS };
        let rx_taps = taps(delays.rx_delay_in_phy);
        Self {
            rxc: Default::default(),
            rx_ctl: Default::default(),
            rxd: Default::default(),
            tx_clock: Default::default(),
            txc: Default::default(),
            tx_ctl: Default::default(),
            txd: Default::default(),
            gmii: Default::default(),
            rx_delay: std::array::from_fn(|_| Delayg::new(rx_taps)),
            rx_ddr: Default::default(),
            tx_ddr: Default::default(),
            txc_delay: Delayg::new(taps(delays.tx_delay_in_phy)),
        }
    }
}

impl Logic for Rgmii {
    #[hdl_gen]
    fn update(&mut self) {
        // Receive.
        self.gmii.rx_clock.next = self.rxc.val();
        for i in 0..4 {
            self.rx_delay[i].a.next = self.rxd.val().get_bit(i);
        }
        self.rx_delay[4].a.next = self.rx_ctl.val();
        for i in 0..5 {
            self.rx_ddr[i].sclk.next = self.rxc.val();
            self.rx_ddr[i].d.next = self.rx_delay[i].z.val();
        }
        self.gmii.rxd.next = 0.into();
        for i in 0..4 {
            self.gmii.rxd.next = self.gmii.rxd.val().replace_bit(i, self.rx_ddr[i].q0.val());
            self.gmii.rxd.next = self.gmii.rxd.val().replace_bit(i + 4, self.rx_ddr[i].q1.val());
        }
        self.gmii.rx_dv.next = self.rx_ddr[4].q0.val();
        self.gmii.rx_er.next = self.rx_ddr[4].q0.val() ^ self.rx_ddr[4].q1.val();
        // Transmit.
        for i in 0..6 {
            self.tx_ddr[i].sclk.next = self.tx_clock.val();
        }
        self.txd.next = 0.into();
        for i in 0..4 {
            self.tx_ddr[i].d0.next = self.gmii.txd.val().get_bit(i);
            self.tx_ddr[i].d1.next = self.gmii.txd.val().get_bit(i + 4);
            self.txd.next = self.txd.val().replace_bit(i, self.tx_ddr[i].q.val());
        }
        self.tx_ddr[4].d0.next = self.gmii.tx_en.val();
        self.tx_ddr[4].d1.next = self.gmii.tx_en.val() ^ self.gmii.tx_er.val();
        self.tx_ctl.next = self.tx_ddr[4].q.val();
        self.tx_ddr[5].d0.next = true;
        self.tx_ddr[5].d1.next = false;
        self.txc_delay.a.next = self.tx_ddr[5].q.val();
        self.txc.next = self.txc_delay.z.val();
    }
}
