//! MDIO (IEEE 802.3 clause 22) master that polls the link state of two PHYs, and a behavioural
//! PHY ([`MdioPhyModel`]) that answers MDIO reads in simulation.
//!
//! The master reads, from each PHY in turn (port 0's address, then port 1's), the standard
//! registers 0 (BMCR), 1 (BMSR), 4 (ANAR), 5 (ANLPAR), 9 (1000BASE-T control) and 10
//! (1000BASE-T status), forever, and after each PHY's six reads sets that port's byte of
//! `link_state` (the control link's link-state registers):
//!
//! | value | meaning |
//! |---|---|
//! | 0 | unknown: the PHY did not answer (turnaround bit not pulled low, or BMSR all ones) |
//! | 1 | link down (BMSR bit 2 low) |
//! | 2, 3, 4 | link up at 10, 100, 1000 Mb/s |
//!
//! The speed is what both ends advertise best when auto-negotiation is on (BMCR bit 12):
//! 1000 if a 1000BASE-T mode is both advertised (reg 9 bits 9/8) and offered by the partner
//! (reg 10 bits 11/10), else 100 if a 100BASE-TX mode is in ANAR ∧ ANLPAR (bits 8/7), else 10;
//! with auto-negotiation off, BMCR's speed bits (6, 13). Only standard registers are used, so
//! the same master serves the RTL8211F (5A-75B) and the B50612D (i5).
//!
//! Timing of one read (65 MDC periods of `2·half` clocks: MDC low for `half`, then high):
//! periods 0..32 preamble (ones), 32..46 start `01`, read `10`, PHY address, register address,
//! all driven by the master (`mdio_oe`) and changed at the start of the low half, so the PHY
//! sees them stable around the rising edge; 46..48 turnaround and 48..64 data, driven by the
//! PHY, sampled by the master on its rising edge of MDC (through a two-flop synchroniser of
//! `mdio_i`, so the value sampled is the one the PHY put out after the previous rising edge);
//! period 64 idle. `half` = 25 at 125 MHz gives MDC = 2.5 MHz, the clause 22 maximum (the board
//! top's 100 MHz core clock uses 20).

use rust_hdl::prelude::*;

/// The registers read from each PHY, in order.
pub const POLLED_REGISTERS: [u8; 6] = [0, 1, 4, 5, 9, 10];

/// MDC half period in clocks at 125 MHz for 2.5 MHz.
pub const DEFAULT_HALF_PERIOD: u32 = 25;

/// MDIO master polling two PHYs' link state.
#[derive(LogicBlock)]
pub struct MdioMaster {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// MDIO clock.
    pub mdc: Signal<Out, Bit>,
    /// Value driven on MDIO while `mdio_oe`.
    pub mdio_o: Signal<Out, Bit>,
    /// Drive MDIO (else released; the pull-up holds it high).
    pub mdio_oe: Signal<Out, Bit>,
    /// MDIO as seen on the pin.
    pub mdio_i: Signal<In, Bit>,
    /// Link state of ports 0 and 1 (bytes 0 and 1; bytes 2, 3 zero).
    pub link_state: Signal<Out, Bits<32>>,
    sync1: DFF<Bit>,
    sync2: DFF<Bit>,
    div: DFF<Bits<16>>,
    tick: DFFWithInit<Bit>,
    p31: DFF<Bit>,
    p47: DFF<Bit>,
    p63: DFF<Bit>,
    p64: DFF<Bit>,
    p_tx: DFF<Bit>,
    p_rx: DFF<Bit>,
    ri0: DFF<Bit>,
    ri5: DFF<Bit>,
    high: DFF<Bit>,
    period: DFF<Bits<7>>,
    reg_idx: DFF<Bits<3>>,
    port: DFF<Bit>,
    rdata: DFF<Bits<16>>,
    ta_ok: DFF<Bit>,
    present: DFF<Bit>,
    bmcr: DFF<Bits<16>>,
    bmsr: DFF<Bits<16>>,
    anar: DFF<Bits<16>>,
    anlpar: DFF<Bits<16>>,
    gctl: DFF<Bits<16>>,
    state0: DFF<Bits<8>>,
    state1: DFF<Bits<8>>,
    shift: DFF<Bits<14>>,
    cmd: Signal<Local, Bits<14>>,
    reg_addr: Signal<Local, Bits<14>>,
    phy_addr: Signal<Local, Bits<14>>,
    decoded: Signal<Local, Bits<8>>,
    half_m1: Constant<Bits<16>>,
    phy0: Constant<Bits<14>>,
    phy1: Constant<Bits<14>>,
}

impl MdioMaster {
    /// A master with MDC half periods of `half` clocks (≥ 4) polling PHY addresses `phys`.
    pub fn new(half: u32, phys: [u8; 2]) -> Self {
        assert!((4..=65535).contains(&half), "MDC half period {half} outside 4..=65535");
        assert!(phys.iter().all(|&a| a < 32), "PHY addresses {phys:?}: clause 22 has 0..=31");
        Self {
            clock: Default::default(),
            mdc: Default::default(),
            mdio_o: Default::default(),
            mdio_oe: Default::default(),
            mdio_i: Default::default(),
            link_state: Default::default(),
            sync1: Default::default(),
            sync2: Default::default(),
            div: Default::default(),
            tick: DFFWithInit::new(true),
            p31: Default::default(),
            p47: Default::default(),
            p63: Default::default(),
            p64: Default::default(),
            p_tx: Default::default(),
            p_rx: Default::default(),
            ri0: Default::default(),
            ri5: Default::default(),
            high: Default::default(),
            period: Default::default(),
            reg_idx: Default::default(),
            port: Default::default(),
            rdata: Default::default(),
            ta_ok: Default::default(),
            present: Default::default(),
            bmcr: Default::default(),
            bmsr: Default::default(),
            anar: Default::default(),
            anlpar: Default::default(),
            gctl: Default::default(),
            state0: Default::default(),
            state1: Default::default(),
            shift: Default::default(),
            cmd: Default::default(),
            reg_addr: Default::default(),
            phy_addr: Default::default(),
            decoded: Default::default(),
            half_m1: Constant::new(u64::from(half - 1).into()),
            phy0: Constant::new(u64::from(phys[0]).into()),
            phy1: Constant::new(u64::from(phys[1]).into()),
        }
    }
}

impl Logic for MdioMaster {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, sync1, sync2, div, tick, p31, p47, p63, p64, p_tx, p_rx, ri0, ri5, high, period, reg_idx,
            port, rdata, ta_ok, present, bmcr, bmsr, anar, anlpar, gctl, state0, state1, shift
        );
        self.sync1.d.next = self.mdio_i.val();
        self.sync2.d.next = self.sync1.q.val();
        self.mdc.next = self.high.q.val();
        self.link_state.next = (bit_cast::<32, 8>(self.state1.q.val()) << 8) | bit_cast::<32, 8>(self.state0.q.val());

        // The command of the current read: ST 01, OP 10, PHY address, register address.
        match self.reg_idx.q.val().index() {
            0 => {
                self.reg_addr.next = 0.into();
            }
            1 => {
                self.reg_addr.next = 1.into();
            }
            2 => {
                self.reg_addr.next = 4.into();
            }
            3 => {
                self.reg_addr.next = 5.into();
            }
            4 => {
                self.reg_addr.next = 9.into();
            }
            _ => {
                self.reg_addr.next = 10.into();
            }
        }
        if self.port.q.val() {
            self.phy_addr.next = self.phy1.val();
        } else {
            self.phy_addr.next = self.phy0.val();
        }
        self.cmd.next = (self.phy_addr.val() << 5) | self.reg_addr.val() | 0x1800;
        self.mdio_oe.next = self.period.q.val() < 46;
        self.mdio_o.next = true;
        if (self.period.q.val() >= 32) && (self.period.q.val() < 46) {
            self.mdio_o.next = self.shift.q.val().get_bit(13);
        }

        // The link state of this PHY from its registers (the last one, reg 10, in rdata).
        self.decoded.next = 0.into();
        if self.present.q.val() && (self.bmsr.q.val() != 0xffff) {
            if !self.bmsr.q.val().get_bit(2) {
                self.decoded.next = 1.into();
            } else if self.bmcr.q.val().get_bit(12) {
                if (self.gctl.q.val().get_bit(9) & self.rdata.q.val().get_bit(11))
                    | (self.gctl.q.val().get_bit(8) & self.rdata.q.val().get_bit(10))
                {
                    self.decoded.next = 4.into();
                } else if (self.anar.q.val() & self.anlpar.q.val() & 0x0180) != 0 {
                    self.decoded.next = 3.into();
                } else {
                    self.decoded.next = 2.into();
                }
            } else if self.bmcr.q.val().get_bit(6) & !self.bmcr.q.val().get_bit(13) {
                self.decoded.next = 4.into();
            } else if self.bmcr.q.val().get_bit(13) {
                self.decoded.next = 3.into();
            } else {
                self.decoded.next = 2.into();
            }
        }

        // tick is div == 0, from a register (div counts down from half_m1 >= 3).
        self.tick.d.next = self.div.q.val() == 1;
        // Decodes of period and reg_idx, a cycle late: both change only at a tick, and ticks are
        // at least 4 cycles apart.
        self.p31.d.next = self.period.q.val() == 31;
        self.p47.d.next = self.period.q.val() == 47;
        self.p63.d.next = self.period.q.val() == 63;
        self.p64.d.next = self.period.q.val() == 64;
        self.p_tx.d.next = (self.period.q.val() >= 32) && (self.period.q.val() < 46);
        self.p_rx.d.next = (self.period.q.val() >= 48) && (self.period.q.val() < 64);
        self.ri0.d.next = self.reg_idx.q.val() == 0;
        self.ri5.d.next = self.reg_idx.q.val() == 5;
        if !self.tick.q.val() {
            self.div.d.next = self.div.q.val() - 1;
        } else {
            self.div.d.next = self.half_m1.val();
            if !self.high.q.val() {
                // Rising edge of MDC: sample what the PHY put out after the previous one.
                self.high.d.next = true;
                if self.p47.q.val() {
                    self.ta_ok.d.next = !self.sync2.q.val();
                }
                if self.p_rx.q.val() {
                    self.rdata.d.next = (self.rdata.q.val() << 1) | bit_cast::<16, 1>(self.sync2.q.val().into());
                }
            } else {
                // Falling edge: the next period.
                self.high.d.next = false;
                self.period.d.next = self.period.q.val() + 1;
                if self.p31.q.val() {
                    self.shift.d.next = self.cmd.val();
                }
                if self.p_tx.q.val() {
                    self.shift.d.next = self.shift.q.val() << 1;
                }
                if self.p63.q.val() {
                    if self.ri0.q.val() {
                        self.present.d.next = self.ta_ok.q.val();
                    } else {
                        self.present.d.next = self.present.q.val() & self.ta_ok.q.val();
                    }
                    match self.reg_idx.q.val().index() {
                        0 => {
                            self.bmcr.d.next = self.rdata.q.val();
                        }
                        1 => {
                            self.bmsr.d.next = self.rdata.q.val();
                        }
                        2 => {
                            self.anar.d.next = self.rdata.q.val();
                        }
                        3 => {
                            self.anlpar.d.next = self.rdata.q.val();
                        }
                        4 => {
                            self.gctl.d.next = self.rdata.q.val();
                        }
                        _ => {}
                    }
                }
                if self.p64.q.val() {
                    self.period.d.next = 0.into();
                    if self.ri5.q.val() {
                        self.reg_idx.d.next = 0.into();
                        self.port.d.next = !self.port.q.val();
                        if self.port.q.val() {
                            self.state1.d.next = self.decoded.val();
                        } else {
                            self.state0.d.next = self.decoded.val();
                        }
                    } else {
                        self.reg_idx.d.next = self.reg_idx.q.val() + 1;
                    }
                }
            }
        }
    }
}

/// A PHY on an MDIO bus, for simulation: answers clause 22 reads of its address with its
/// registers (writes are ignored).
///
/// Call [`MdioPhyModel::step`] once a clock cycle with the MDC level and the bus level; it
/// returns what the PHY drives (`None`: released). Like a real PHY it samples the bus on the
/// rising edge of MDC and changes its output just after it: it waits for 32 ones, a start
/// `01`, the read opcode `10` and its address, then releases the bus for the first turnaround
/// bit, drives 0 for the second and the register's 16 bits, MSB first, and releases the bus
/// after the last.
#[derive(Debug, Clone)]
pub struct MdioPhyModel {
    /// PHY address (0..=31).
    pub address: u8,
    /// Register file.
    pub registers: [u16; 32],
    /// Reads answered.
    pub reads: u64,
    last_mdc: bool,
    ones: u32,
    cmd: Option<(u32, u16)>,
    reply: std::collections::VecDeque<Option<bool>>,
    drive: Option<bool>,
}

impl MdioPhyModel {
    /// A PHY at `address`, link down, auto-negotiation on, advertising 10/100/1000 full and
    /// half duplex (a partner offering nothing yet).
    pub fn new(address: u8) -> Self {
        let mut registers = [0u16; 32];
        registers[0] = 0x1140; // auto-negotiation enabled, 1000 Mb/s, full duplex
        registers[1] = 0x7969; // capabilities, auto-negotiation able, link down
        registers[2] = 0x001c; // PHY identifier (Realtek OUI)
        registers[3] = 0xc916; // RTL8211F
        registers[4] = 0x01e1; // 10/100 half and full, IEEE 802.3
        registers[9] = 0x0300; // 1000BASE-T full and half
        MdioPhyModel {
            address,
            registers,
            reads: 0,
            last_mdc: false,
            ones: 0,
            cmd: None,
            reply: Default::default(),
            drive: None,
        }
    }

    /// Link up at `mbps` (10, 100 or 1000) with a partner advertising that speed (full
    /// duplex), or down (`None`).
    pub fn set_link(&mut self, mbps: Option<u32>) {
        let r = &mut self.registers;
        r[1] &= !0x0024;
        r[5] = 0;
        r[10] = 0;
        if let Some(s) = mbps {
            r[1] |= 0x0024; // link status, auto-negotiation complete
            match s {
                1000 => {
                    r[5] = 0x41e1;
                    r[10] = 0x0800;
                }
                100 => r[5] = 0x4181,
                _ => r[5] = 0x4021,
            }
        }
    }

    /// One clock cycle: `mdc` and the bus level now; returns the PHY's drive from now on.
    pub fn step(&mut self, mdc: bool, bus: bool) -> Option<bool> {
        let rising = mdc && !self.last_mdc;
        self.last_mdc = mdc;
        if !rising {
            return self.drive;
        }
        if !self.reply.is_empty() {
            self.drive = self.reply.pop_front().unwrap_or(None);
            return self.drive;
        }
        match self.cmd {
            None => {
                if bus {
                    self.ones = self.ones.saturating_add(1);
                } else {
                    if self.ones >= 32 {
                        // ST bit 0 seen; 13 more command bits follow.
                        self.cmd = Some((1, 0));
                    }
                    self.ones = 0;
                }
            }
            Some((n, bits)) => {
                let bits = (bits << 1) | u16::from(bus);
                if n + 1 < 14 {
                    self.cmd = Some((n + 1, bits));
                } else {
                    self.cmd = None;
                    // bits: ST1, OP1, OP0, A4..A0, R4..R0 (ST0 was the 0 that started it).
                    let st1 = (bits >> 12) & 1;
                    let op = (bits >> 10) & 3;
                    let addr = ((bits >> 5) & 0x1f) as u8;
                    let reg = usize::from(bits & 0x1f);
                    if st1 == 1 && op == 0b10 && addr == self.address {
                        self.reads += 1;
                        let v = self.registers[reg];
                        self.reply.push_back(Some(false));
                        for i in (0..16).rev() {
                            self.reply.push_back(Some((v >> i) & 1 == 1));
                        }
                        self.reply.push_back(None);
                    }
                }
            }
        }
        self.drive
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::settle;

    /// The master against two model PHYs (one absent address in between), with links
    /// changing: every port's state follows within two polling rounds.
    #[test]
    fn polls_link_state_of_two_phys() {
        let half = 4;
        let mut uut = MdioMaster::new(half, [1, 3]);
        uut.connect_all();
        let mut phys = [MdioPhyModel::new(1), MdioPhyModel::new(3)];
        let round = 2 * 6 * 65 * 2 * half as usize;
        let run = |uut: &mut MdioMaster, phys: &mut [MdioPhyModel; 2], cycles: usize| {
            let mut bus = true;
            for _ in 0..cycles {
                settle(uut);
                let mdc = uut.mdc.val();
                let master = if uut.mdio_oe.val() { Some(uut.mdio_o.val()) } else { None };
                let drives: Vec<Option<bool>> = phys.iter_mut().map(|p| p.step(mdc, bus)).collect();
                let mut level = true; // pull-up
                for d in drives.iter().chain(std::iter::once(&master)).flatten() {
                    level &= *d;
                }
                assert!(!(master.is_some() && drives.iter().any(Option::is_some)), "master and PHY drive MDIO at once");
                bus = level;
                uut.mdio_i.next = bus;
                settle(uut);
                uut.clock.next = true.into();
                settle(uut);
                uut.clock.next = false.into();
            }
            uut.link_state.val().index() as u32
        };
        assert_eq!(run(&mut uut, &mut phys, 2 * round), 0x0101, "both down");
        phys[0].set_link(Some(1000));
        phys[1].set_link(Some(100));
        assert_eq!(run(&mut uut, &mut phys, 2 * round), 0x0304);
        phys[0].set_link(Some(10));
        phys[1].set_link(None);
        assert_eq!(run(&mut uut, &mut phys, 2 * round), 0x0102);
        // Forced 100 Mb/s (auto-negotiation off).
        phys[0].registers[0] = 0x2100;
        phys[0].registers[1] |= 0x0004;
        assert_eq!(run(&mut uut, &mut phys, 2 * round) & 0xff, 3);
        assert!(phys[0].reads >= 4 * 6 && phys[1].reads >= 4 * 6, "{} {}", phys[0].reads, phys[1].reads);

        // A PHY at another address than the master polls: unknown.
        let mut uut = MdioMaster::new(half, [1, 7]);
        uut.connect_all();
        phys[1].set_link(Some(1000));
        assert_eq!(run(&mut uut, &mut phys, 2 * round), 0x0003);
    }

    /// Verilator `-Wall` finds nothing in the MDIO master and the control link, with and without
    /// the straggler read-out (with the project's rust-hdl waivers: one file for every module,
    /// widths, and enum localparams).
    #[test]
    fn lint_wall_clean() {
        use crate::control_link::{BuildStamp, ControlIdentity, ControlLink};
        if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator) {
            return;
        }
        let mut m = MdioMaster::new(DEFAULT_HALF_PERIOD, [0, 1]);
        m.connect_all();
        let core = crate::CoreConfig::new(4, 64, 1024, 32).unwrap();
        let mut l = ControlLink::with_board(
            &core,
            ControlIdentity::stamp(0, 1085, BuildStamp::default()),
            46,
            Some([1, 2, 3, 4, 1, 8, 0, 0xa064, 0xbee3, 9]),
        );
        l.connect_all();
        let mut ls =
            ControlLink::new(&core.with_stragglers(true), ControlIdentity::stamp(0, 1085, BuildStamp::default()));
        ls.connect_all();
        // UNUSEDPARAM: rust-hdl declares a `LogicState` enum's values as localparams in every
        // module that holds one, also in the DFF that only stores it.
        let waivers = "`verilator_config\nlint_off -rule DECLFILENAME -file \"*top.v\"\n\
                       lint_off -rule WIDTH -file \"*top.v\"\nlint_off -rule UNUSEDPARAM -file \"*top.v\"\n";
        let blocks = [
            ("mdio", generate_verilog(&m)),
            ("control link", generate_verilog(&l)),
            ("control link with stragglers", generate_verilog(&ls)),
        ];
        for (what, v) in blocks {
            let (ok, log) = spotagg_testkit::verilator_lint(&v, waivers, "-Wall");
            assert!(ok, "{what}: verilator -Wall:\n{log}");
        }
    }

    /// The master at 125 MHz / 2.5 MHz synthesizes without latches.
    #[test]
    fn synthesizes() {
        use crate::verilog::synth_ecp5;
        if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Yosys) {
            return;
        }
        let mut m = MdioMaster::new(DEFAULT_HALF_PERIOD, [0, 1]);
        m.connect_all();
        let u = synth_ecp5(&generate_verilog(&m)).unwrap_or_else(|e| panic!("{e}"));
        println!("MDIO master: {u:?}");
        assert!(u.lut4 < 600, "{u:?}");
    }
}
