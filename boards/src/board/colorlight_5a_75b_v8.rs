//! Colorlight 5A-75B v8.0: LFE5U-25F-6BG256C, two Realtek RTL8211FD PHYs on RGMII, 25 MHz
//! clock from PHY U13 on P6. Pin-out as documented by the chubby75 project
//! (`5a-75b/hardware_V8.0.md`) and LiteX-Boards; checked against both.
//!
//! The PHYs share reset (R6), MDC (R5) and MDIO (T4) (chubby75 and LiteX-Boards' `eth` records
//! of this revision). Note from chubby75: the 25 MHz clock comes from PHY U13, so holding the
//! PHYs in reset stops the FPGA's clock.
//!
//! Control link UART: the connector pins of this board (J1..J8, HUB75) are driven through
//! 74HC245 buffers whose direction is fixed towards the connector, so none of them can
//! receive. The only user pins with a real input path are the user button (R7, on J19 `KEY+`)
//! and the user LED (T6, on J19 `DATA_LED-`). LiteX-Boards' `colorlight_5a_75b.py` uses
//! exactly these as its serial port on every revision (led = tx, button = rx; for v8.0 T6 and
//! R7, the same balls its 5A-75E v6.0 platform uses), so the UART here is: TX on T6 (the LED
//! flickers with responses), RX on R7, both on J19. LiteX notes some capacitance on the `KEY+`
//! pin of an older revision that may limit the baud rate: the divisor is a build parameter.

use super::{COLORLIGHT_PHY_ADDRESSES, COLORLIGHT_PHY_DELAYS};
use crate::{Board, Ecp5Part, RgmiiSites, UartSites};

/// The board.
pub fn board() -> Board {
    Board {
        id: "colorlight-5a-75b-v8",
        name: "Colorlight 5A-75B v8.0",
        part: Ecp5Part::lfe5u_25f_6("CABGA256"),
        board_id: 0x5a75,
        clk_in: ("P6", 25.0),
        led_n: Some("T6"),
        uart: UartSites {
            tx: "T6",
            rx: "R7",
            source: "J19: tx = user LED (DATA_LED-), rx = user button (KEY+); LiteX-Boards colorlight_5a_75b.py serial",
        },
        // Port 0 is PHY U11, port 1 U13 (the one that also gives the 25 MHz clock).
        phy_addresses: COLORLIGHT_PHY_ADDRESSES,
        phy_reset_n: "R6",
        mdc: "R5",
        mdio: "T4",
        eth: [
            RgmiiSites::new(["J1", "J2", "K2", "J3", "K1", "K3"], ["L1", "L2", "M2", "M1", "P1", "R1"]),
            RgmiiSites::new(["M16", "P16", "M15", "R16", "L15", "L16"], ["J16", "K14", "K16", "J15", "J14", "K15"]),
        ],
        phy_delays: COLORLIGHT_PHY_DELAYS,
        loader_board: Some("colorlight"),
    }
}
