//! Colorlight i5 v7.0 (LFE5U-25F-6BG381C, two Broadcom B50612D PHYs on RGMII, 25 MHz clock
//! on P3), as documented by LiteX-Boards (`colorlight_i5.py`, from @wuxx's documentation).
//! Defined to show that a second board needs no change to the core; CI builds only the 5A-75B.
//!
//! Control link UART: TX J17, RX H18, LiteX-Boards' `serial` of this board (pins of the
//! SODIMM module, brought out on the extension board's connector as J1 pins 1 and 2).

use super::{COLORLIGHT_PHY_ADDRESSES, COLORLIGHT_PHY_DELAYS};
use crate::{Board, Ecp5Part, RgmiiSites, UartSites};

/// The board.
pub fn board() -> Board {
    Board {
        id: "colorlight-i5-v7",
        name: "Colorlight i5 v7.0",
        part: Ecp5Part::lfe5u_25f_6("CABGA381"),
        board_id: 0x0015,
        clk_in: ("P3", 25.0),
        led_n: Some("U16"),
        uart: UartSites { tx: "J17", rx: "H18", source: "LiteX-Boards colorlight_i5.py serial (tx J17, rx H18)" },
        phy_addresses: COLORLIGHT_PHY_ADDRESSES,
        phy_reset_n: "P4",
        mdc: "N5",
        mdio: "P5",
        eth: [
            RgmiiSites::new(["H2", "P2", "K2", "L1", "N1", "P1"], ["G1", "K1", "G2", "H1", "J1", "J3"]),
            RgmiiSites::new(["L19", "M20", "P20", "N19", "N20", "M19"], ["U19", "P19", "U20", "T19", "T20", "R20"]),
        ],
        phy_delays: COLORLIGHT_PHY_DELAYS,
        loader_board: Some("colorlight-i5"),
    }
}
