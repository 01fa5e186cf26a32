//! Colorlight i5 v7.0 (LFE5U-25F-6BG381C, two Broadcom B50612D PHYs on RGMII, 25 MHz clock
//! on P3), as documented by LiteX-Boards (`colorlight_i5.py`, from @wuxx's documentation).
//! Defined to show that a second board needs no change to the core; CI builds only the 5A-75B.
//!
//! Control link UART: TX J17, RX H18, LiteX-Boards' `serial` of this board (pins of the
//! SODIMM module, brought out on the extension board's connector as J1 pins 1 and 2).

use crate::{Board, Ecp5Part, PhyDelays, RgmiiSites, UartSites};

/// The board.
pub fn board() -> Board {
    Board {
        id: "colorlight-i5-v7",
        name: "Colorlight i5 v7.0",
        part: Ecp5Part { device: "--25k", package: "CABGA381", speed: 6, dp16kd: 56, luts: 24288 },
        board_id: 0x0015,
        clk_in: ("P3", 25.0),
        led_n: Some("U16"),
        uart: UartSites { tx: "J17", rx: "H18", source: "LiteX-Boards colorlight_i5.py serial (tx J17, rx H18)" },
        // ASSUMPTION, as on the 5A-75B: not confirmed on hardware.
        phy_addresses: [0, 1],
        phy_reset_n: "P4",
        mdc: "N5",
        mdio: "P5",
        eth: [
            RgmiiSites {
                rxc: "H2",
                rx_ctl: "P2",
                rxd: ["K2", "L1", "N1", "P1"],
                txc: "G1",
                tx_ctl: "K1",
                txd: ["G2", "H1", "J1", "J3"],
            },
            RgmiiSites {
                rxc: "L19",
                rx_ctl: "M20",
                rxd: ["P20", "N19", "N20", "M19"],
                txc: "U19",
                tx_ctl: "P19",
                txd: ["U20", "T19", "T20", "R20"],
            },
        ],
        // Assumed as on the 5A-75B; not confirmed on hardware.
        phy_delays: PhyDelays { rx_delay_in_phy: true, tx_delay_in_phy: false },
        loader_board: Some("colorlight-i5"),
    }
}
