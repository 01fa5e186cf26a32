//! The GMII byte interface of one Ethernet port as a pair of rust-hdl interfaces: the MAC's end
//! ([`GmiiPort`]: receive in, transmit out, with the receive clock the PHY gives) and the
//! PHY's end ([`GmiiPhy`], the RGMII adapters'). A block with a port holds a `GmiiPort` (the
//! fabric and the board logic hold `[GmiiPort; 2]`, port 0 first) and passes it down with
//! `GmiiPort::link`; the board top joins it to the RGMII adapter's `GmiiPhy`.
//!
//! The transmit side has no clock of its own here: both ports send on the board's one
//! 125 MHz transmit clock, which the blocks take apart.

use rust_hdl::prelude::*;

/// The MAC's end of a GMII port.
#[derive(LogicInterface, Default)]
#[join = "GmiiPhy"]
pub struct GmiiPort {
    /// Receive clock from the PHY (125 MHz at 1 Gb/s).
    pub rx_clock: Signal<In, Clock>,
    /// Receive data.
    pub rxd: Signal<In, Bits<8>>,
    /// Receive data valid.
    pub rx_dv: Signal<In, Bit>,
    /// Receive error.
    pub rx_er: Signal<In, Bit>,
    /// Transmit data.
    pub txd: Signal<Out, Bits<8>>,
    /// Transmit enable.
    pub tx_en: Signal<Out, Bit>,
    /// Transmit error.
    pub tx_er: Signal<Out, Bit>,
}

/// The PHY's end of a GMII port.
#[derive(LogicInterface, Default)]
#[join = "GmiiPort"]
pub struct GmiiPhy {
    /// Receive clock.
    pub rx_clock: Signal<Out, Clock>,
    /// Receive data.
    pub rxd: Signal<Out, Bits<8>>,
    /// Receive data valid.
    pub rx_dv: Signal<Out, Bit>,
    /// Receive error.
    pub rx_er: Signal<Out, Bit>,
    /// Transmit data.
    pub txd: Signal<In, Bits<8>>,
    /// Transmit enable.
    pub tx_en: Signal<In, Bit>,
    /// Transmit error.
    pub tx_er: Signal<In, Bit>,
}

/// The Verilog name of signal `name` of port `port` of a block's `eth: [GmiiPort; 2]` (the
/// switch fabric's and the board logic's top-level ports), e.g. `eth$0$rxd`.
pub fn port_name(port: usize, name: &str) -> String {
    format!("eth${port}${name}")
}
