//! Board definitions: each board as typed data (part, pins, I/O standards, clocks, PHY delays;
//! the types are at the crate root) and the constraint file generated from it.

pub mod colorlight_5a_75b_v8;
pub mod colorlight_i5;
pub mod lpf;

use crate::PhyDelays;

/// The MDIO addresses of both Colorlight boards' PHYs, as assumed. ASSUMPTION: neither board
/// documents its PHYs' PHYAD straps or their RXDLY/TXDLY straps (on the 5A-75B's RTL8211FD,
/// RXD0/RXD1), and neither is confirmed on hardware. MDIO addresses 0 (port 0) and 1 (port 1) are the common
/// choice: a wrong address shows as link state "unknown" (no PHY answers), never as a false
/// "down". The PHYs are taken to delay receive and the FPGA to delay TXC (or a board top
/// overrides the straps over MDIO).
const COLORLIGHT_PHY_ADDRESSES: [u8; 2] = [0, 1];

/// The RGMII delays of the Colorlight boards' PHY straps, as assumed (see
/// [`COLORLIGHT_PHY_ADDRESSES`]).
const COLORLIGHT_PHY_DELAYS: PhyDelays = PhyDelays { rx_delay_in_phy: true, tx_delay_in_phy: false };
