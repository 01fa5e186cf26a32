//! spotagg boards: each board is typed data (FPGA part, pins, I/O standards, clocks), and the
//! constraint file is generated from it. A board is added by writing one more module that
//! returns a [`Board`]; nothing in the core changes.
//!
//! The modules by role:
//! - [`board`](mod@board): the board definitions and the LPF generated from them;
//! - [`cdc`]: the clock-domain crossings (synchronizers, handshakes);
//! - [`ethernet`]: the Ethernet blocks (RGMII/GMII, MACs, FIFOs, merge, routing, dispatch);
//! - [`ecp5`]: the ECP5 primitives (PLL, DDR registers, delays, the MDIO pad, FIFO RAM);
//! - [`tops`]: the layers from the synthesized top down to the core (a table there says which
//!   is synthesized, which simulated, and which is the core);
//! - [`flow`]: the open toolchain flow (Yosys, nextpnr, ecppack).

pub mod board;
pub mod cdc;
pub mod ecp5;
pub mod ethernet;
pub mod flow;
pub mod tops;

/// An ECP5 part as nextpnr-ecp5 names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ecp5Part {
    /// nextpnr device flag: `--25k`, `--45k`, `--85k`, `--um5g-45k`, …
    pub device: &'static str,
    /// Package, e.g. `CABGA256`.
    pub package: &'static str,
    /// Speed grade (6, 7 or 8).
    pub speed: u8,
    /// Total DP16KD block RAMs of the part.
    pub dp16kd: usize,
    /// Total LUT4s of the part.
    pub luts: usize,
}

impl Ecp5Part {
    /// The LFE5U-25F at speed grade 6 (56 DP16KD, 24,288 LUT4) in `package`.
    pub const fn lfe5u_25f_6(package: &'static str) -> Ecp5Part {
        Ecp5Part { device: "--25k", package, speed: 6, dp16kd: 56, luts: 24288 }
    }

    /// The LFE5U-45F at speed grade 6 (108 DP16KD, 43,848 LUT4: nextpnr-ecp5's `TRELLIS_COMB`
    /// count of the `--45k` device, 44k in Lattice's data sheet) in `package`.
    pub const fn lfe5u_45f_6(package: &'static str) -> Ecp5Part {
        Ecp5Part { device: "--45k", package, speed: 6, dp16kd: 108, luts: 43848 }
    }
}

/// Electrical standard of a pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoStandard {
    /// 3.3 V LVCMOS.
    Lvcmos33,
    /// 2.5 V LVCMOS.
    Lvcmos25,
}

impl IoStandard {
    /// The LPF `IO_TYPE` value.
    pub fn lpf(self) -> &'static str {
        match self {
            IoStandard::Lvcmos33 => "LVCMOS33",
            IoStandard::Lvcmos25 => "LVCMOS25",
        }
    }
}

/// Output slew rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slew {
    /// Fast edges (RGMII transmit).
    Fast,
    /// Slow edges.
    Slow,
}

/// One pin: the top-level port bit it carries and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// Top-level port name (the board top uses the same name).
    pub port: String,
    /// Ball of the package.
    pub site: &'static str,
    /// I/O standard.
    pub io: IoStandard,
    /// Output drive in mA, where set.
    pub drive: Option<u8>,
    /// Slew rate, where set.
    pub slew: Option<Slew>,
    /// Weak pull-up.
    pub pull_up: bool,
    /// Open-drain output.
    pub open_drain: bool,
}

impl Pin {
    /// A 3.3 V pin with default drive.
    pub fn lvcmos33(port: impl Into<String>, site: &'static str) -> Pin {
        Pin {
            port: port.into(),
            site,
            io: IoStandard::Lvcmos33,
            drive: None,
            slew: None,
            pull_up: false,
            open_drain: false,
        }
    }
    /// The same pin with fast slew and the given drive.
    pub fn fast(mut self, drive: u8) -> Pin {
        self.slew = Some(Slew::Fast);
        self.drive = Some(drive);
        self
    }
}

/// A clock entering the FPGA on a pin, with its frequency constraint.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockPin {
    /// Top-level port name.
    pub port: String,
    /// Frequency in MHz.
    pub mhz: f64,
}

/// One RGMII port to a Gigabit PHY: sites of each signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RgmiiSites {
    /// Receive clock from the PHY (125 MHz at 1 Gb/s).
    pub rxc: &'static str,
    /// Receive control (RX_DV / RX_ER).
    pub rx_ctl: &'static str,
    /// Receive data, bit 0 first.
    pub rxd: [&'static str; 4],
    /// Transmit clock to the PHY.
    pub txc: &'static str,
    /// Transmit control (TX_EN / TX_ER).
    pub tx_ctl: &'static str,
    /// Transmit data, bit 0 first.
    pub txd: [&'static str; 4],
}

impl RgmiiSites {
    /// The sites of each side in the order a schematic groups them: clock, control, then data
    /// bits 0..4 (`rx`: RXC, RX_CTL, RXD0..3; `tx`: TXC, TX_CTL, TXD0..3).
    pub const fn new(rx: [&'static str; 6], tx: [&'static str; 6]) -> RgmiiSites {
        RgmiiSites {
            rxc: rx[0],
            rx_ctl: rx[1],
            rxd: [rx[2], rx[3], rx[4], rx[5]],
            txc: tx[0],
            tx_ctl: tx[1],
            txd: [tx[2], tx[3], tx[4], tx[5]],
        }
    }
}

/// The control link's serial port: the two pins and where they were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UartSites {
    /// Transmit (FPGA to host).
    pub tx: &'static str,
    /// Receive (host to FPGA); gets a weak pull-up (idle high when nothing is connected).
    pub rx: &'static str,
    /// What the pins are on the board and the source of the assignment.
    pub source: &'static str,
}

/// What the PHY straps do to RGMII timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhyDelays {
    /// The PHY delays RXC by about 2 ns (the FPGA samples RX data without a delay of its own).
    pub rx_delay_in_phy: bool,
    /// The PHY delays TXC by about 2 ns (the FPGA sends TXC edge-aligned with TX data).
    pub tx_delay_in_phy: bool,
}

/// A board with two Gigabit Ethernet ports on RGMII.
#[derive(Debug, Clone, PartialEq)]
pub struct Board {
    /// Identifier used on the command line (`--board`).
    pub id: &'static str,
    /// Human name.
    pub name: &'static str,
    /// The FPGA.
    pub part: Ecp5Part,
    /// Number written in the identity registers.
    pub board_id: u16,
    /// The oscillator input.
    pub clk_in: (&'static str, f64),
    /// Active-low user LED, if any. Not a pin of the board top (on the 5A-75B it is the UART's
    /// transmit line); the LPF still locates `led_n` there for tops that drive it (the
    /// core-only top), and nextpnr ignores the constraint where no port has that name.
    pub led_n: Option<&'static str>,
    /// The control link's serial port.
    pub uart: UartSites,
    /// MDIO addresses of the two PHYs, port 0 first.
    pub phy_addresses: [u8; 2],
    /// Shared PHY reset (active low), MDC and MDIO.
    pub phy_reset_n: &'static str,
    /// MDIO clock.
    pub mdc: &'static str,
    /// MDIO data.
    pub mdio: &'static str,
    /// The two Ethernet ports, port 0 first.
    pub eth: [RgmiiSites; 2],
    /// RGMII delays set by the PHY straps.
    pub phy_delays: PhyDelays,
    /// openFPGALoader's `--board` name, if it knows the board, else its default cable.
    pub loader_board: Option<&'static str>,
}

impl Board {
    /// Every pin of the board top, in a fixed order.
    pub fn pins(&self) -> Vec<Pin> {
        let mut v = vec![Pin::lvcmos33("clk25", self.clk_in.0)];
        v.push(Pin::lvcmos33("uart_tx", self.uart.tx));
        let mut rx = Pin::lvcmos33("uart_rx", self.uart.rx);
        rx.pull_up = true;
        v.push(rx);
        v.push(Pin::lvcmos33("phy_reset_n", self.phy_reset_n));
        v.push(Pin::lvcmos33("mdc", self.mdc));
        let mut mdio = Pin::lvcmos33("mdio", self.mdio);
        mdio.pull_up = true;
        v.push(mdio);
        for (i, e) in self.eth.iter().enumerate() {
            v.push(Pin::lvcmos33(format!("eth{i}_rxc"), e.rxc));
            v.push(Pin::lvcmos33(format!("eth{i}_rx_ctl"), e.rx_ctl));
            for (b, s) in e.rxd.iter().enumerate() {
                v.push(Pin::lvcmos33(format!("eth{i}_rxd[{b}]"), s));
            }
            v.push(Pin::lvcmos33(format!("eth{i}_txc"), e.txc).fast(8));
            v.push(Pin::lvcmos33(format!("eth{i}_tx_ctl"), e.tx_ctl).fast(8));
            for (b, s) in e.txd.iter().enumerate() {
                v.push(Pin::lvcmos33(format!("eth{i}_txd[{b}]"), s).fast(8));
            }
        }
        v
    }

    /// Clocks entering on pins, with their constraints.
    pub fn clocks(&self) -> Vec<ClockPin> {
        let mut v = vec![ClockPin { port: "clk25".into(), mhz: self.clk_in.1 }];
        for i in 0..self.eth.len() {
            v.push(ClockPin { port: format!("eth{i}_rxc"), mhz: 125.0 });
        }
        v
    }

    /// The user LED as a pin (`led_n`, open drain), for tops that drive it.
    pub fn led_pin(&self) -> Option<Pin> {
        self.led_n.map(|site| {
            let mut p = Pin::lvcmos33("led_n", site);
            p.open_drain = true;
            p
        })
    }

    /// Checks that no site is used twice by the board top and that the PHY addresses are
    /// distinct clause 22 addresses; returns the first problem.
    pub fn check(&self) -> Result<(), String> {
        let [a, b] = self.phy_addresses;
        if a > 31 || b > 31 || a == b {
            return Err(format!("board {}: PHY addresses {a} and {b} must be distinct and at most 31", self.id));
        }
        let pins = self.pins();
        for (i, a) in pins.iter().enumerate() {
            if let Some(b) = pins[i + 1..].iter().find(|b| b.site == a.site) {
                return Err(format!("board {}: site {} is given to both {} and {}", self.id, a.site, a.port, b.port));
            }
        }
        Ok(())
    }
}

/// Every board spotagg knows.
pub fn boards() -> Vec<Board> {
    vec![board::colorlight_5a_75b_v8::board(), board::colorlight_i5::board(), board::colorlight_i5::i9()]
}

/// A board by its identifier; the error lists the known ones.
pub fn board(id: &str) -> Result<Board, String> {
    boards().into_iter().find(|b| b.id == id).ok_or_else(|| {
        format!("unknown board {id:?}; known boards: {}", boards().iter().map(|b| b.id).collect::<Vec<_>>().join(", "))
    })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn every_board_is_consistent() {
        for b in boards() {
            b.check().unwrap();
            assert_eq!(b.pins().iter().filter(|p| p.port.starts_with("eth")).count(), 24);
            assert_eq!(b.pins().iter().filter(|p| p.port.starts_with("uart_")).count(), 2);
        }
        assert!(board("nope").unwrap_err().contains("colorlight-5a-75b-v8"));
    }
}
