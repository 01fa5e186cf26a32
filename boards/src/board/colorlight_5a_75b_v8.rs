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

use crate::{Board, Ecp5Part, PhyDelays, RgmiiSites, UartSites};

/// The board.
pub fn board() -> Board {
    Board {
        id: "colorlight-5a-75b-v8",
        name: "Colorlight 5A-75B v8.0",
        part: Ecp5Part { device: "--25k", package: "CABGA256", speed: 6, dp16kd: 56, luts: 24288 },
        board_id: 0x5a75,
        clk_in: ("P6", 25.0),
        led_n: Some("T6"),
        uart: UartSites {
            tx: "T6",
            rx: "R7",
            source: "J19: tx = user LED (DATA_LED-), rx = user button (KEY+); LiteX-Boards colorlight_5a_75b.py serial",
        },
        // ASSUMPTION: the RTL8211FD PHYAD straps are not documented for this board; 0 for U11
        // (port 0) and 1 for U13 (port 1) is the common choice. A wrong address shows as link
        // state "unknown" (no PHY answers), never as a false "down".
        phy_addresses: [0, 1],
        phy_reset_n: "R6",
        mdc: "R5",
        mdio: "T4",
        eth: [
            // U11
            RgmiiSites {
                rxc: "J1",
                rx_ctl: "J2",
                rxd: ["K2", "J3", "K1", "K3"],
                txc: "L1",
                tx_ctl: "L2",
                txd: ["M2", "M1", "P1", "R1"],
            },
            // U13
            RgmiiSites {
                rxc: "M16",
                rx_ctl: "P16",
                rxd: ["M15", "R16", "L15", "L16"],
                txc: "J16",
                tx_ctl: "K14",
                txd: ["K16", "J15", "J14", "K15"],
            },
        ],
        // RXD0/RXD1 strap RXDLY/TXDLY on the RTL8211FD. The straps' resistors are not
        // documented for this board: this records an ASSUMPTION (PHY delays receive, the FPGA
        // delays TXC) to be confirmed on hardware or overridden over MDIO by the board top.
        phy_delays: PhyDelays { rx_delay_in_phy: true, tx_delay_in_phy: false },
        loader_board: Some("colorlight"),
    }
}
