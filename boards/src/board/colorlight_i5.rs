//! The Colorlight i5 v7.0 (LFE5U-25F-6BG381C) and i9 v7.2 (LFE5U-45F-6BG381C): the same
//! SODIMM module with two Broadcom B50612D PHYs on RGMII and a 25 MHz clock on P3, as
//! documented by LiteX-Boards (`colorlight_i5.py`, from @wuxx's documentation; its `i9`
//! platform is the i5's I/O list with the user LED moved from U16 to L2, on the 45F part).
//! One function, [`colorlight_sodimm`], gives both; they differ in the part, the LED, the
//! board number and openFPGALoader's board name.
//!
//! Control link UART: TX J17, RX H18, LiteX-Boards' `serial` of this board (pins of the
//! SODIMM module, brought out on the extension board's connector as J1 pins 1 and 2).

use super::{COLORLIGHT_PHY_ADDRESSES, COLORLIGHT_PHY_DELAYS};
use crate::{Board, Ecp5Part, RgmiiSites, UartSites};

/// What tells the i5 and the i9 apart.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    /// `--board` identifier.
    pub id: &'static str,
    /// Human name.
    pub name: &'static str,
    /// The FPGA (always in the CABGA381 package).
    pub part: Ecp5Part,
    /// Number written in the identity registers.
    pub board_id: u16,
    /// Ball of the active-low user LED.
    pub led_n: &'static str,
    /// openFPGALoader's `--board` name.
    pub loader_board: &'static str,
}

/// The Colorlight i5 v7.0.
pub const I5_V7: Variant = Variant {
    id: "colorlight-i5-v7",
    name: "Colorlight i5 v7.0",
    part: Ecp5Part::lfe5u_25f_6("CABGA381"),
    board_id: 0x0015,
    led_n: "U16",
    loader_board: "colorlight-i5",
};

/// The Colorlight i9 v7.2: LFE5U-45F, LED on L2 (LiteX-Boards' `_io_v7_2`).
pub const I9_V7_2: Variant = Variant {
    id: "colorlight-i9",
    name: "Colorlight i9 v7.2",
    part: Ecp5Part::lfe5u_45f_6("CABGA381"),
    board_id: 0x0019,
    led_n: "L2",
    loader_board: "colorlight-i9",
};

/// The module's pinout with the part and the other differences of `v`.
pub fn colorlight_sodimm(v: Variant) -> Board {
    Board {
        id: v.id,
        name: v.name,
        part: v.part,
        board_id: v.board_id,
        clk_in: ("P3", 25.0),
        led_n: Some(v.led_n),
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
        loader_board: Some(v.loader_board),
    }
}

/// The Colorlight i5 v7.0.
pub fn board() -> Board {
    colorlight_sodimm(I5_V7)
}

/// The Colorlight i9 v7.2.
pub fn i9() -> Board {
    colorlight_sodimm(I9_V7_2)
}
