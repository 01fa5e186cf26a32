//! The board's logic with its control plane: the [`SwitchFabric`] (MACs, FIFOs, core), the
//! control link on the UART pins, and the MDIO master polling both PHYs. This is everything of
//! the board top but the ECP5 primitives (PLL, DDR registers, delays, the MDIO pad), and what
//! the MAC-level board simulation runs.
//!
//! ```text
//! uart_rx/uart_tx ─ ControlLink ─ cfg_* (once the ROM job is loaded), pause ─ SwitchFabric
//!                       │  counter port: 0..32 the core's counters, 32..46 the port counters
//!                       └─ link_state ─ MdioMaster ─ mdc, mdio_o/mdio_oe/mdio_i
//! ```
//!
//! - At power-up the fabric's loader writes the job baked into its ROM; the control link's job
//!   registers hold the same values from the start, so `spotagg ctl status` shows the ROM job
//!   until a `configure` replaces it. A job written over the link takes effect at once.
//! - Counter registers: the core's 23 at 0x0200.., the fabric's port counters (port 0 good,
//!   bad FCS, runts, giants, overflow, sent; flooded; port 1 the same) at 0x0220.. as
//!   `spotagg_driver::control::protocol` maps them (46 in all). A snapshot holds the core's
//!   input at a frame boundary (the fabric's `pause`).
//! - Link state: ports 0 and 1 from the PHYs at the board's addresses; ports 2 and 3 read 0.

use crate::ethernet::gmii::GmiiPort;
use crate::tops::config_loader::config_writes;
use crate::tops::switch_fabric::{FabricStatus, SwitchFabric};
use rust_hdl::prelude::*;
use spotagg_driver::control::protocol::eaps::DomainSettings;
use spotagg_driver::control::protocol::reg;
use spotagg_driver::JobConfig;
use spotagg_hdl::control_link::{ControlIdentity, ControlLink, EapsRegisterPort};
use spotagg_hdl::eaps_gate::EapsTimebase;
use spotagg_hdl::mdio::MdioMaster;
use spotagg_hdl::straggler::StragglerRead;
use spotagg_hdl::CoreConfig;

/// Clocks of the EAPS node's clock per EAPS time unit on the board: 1 µs at 50 MHz (the unit
/// of the periods in the EAPS registers), whatever the build's [`CoreClock`](crate::tops::core_clock::CoreClock).
pub const EAPS_TIME_DIV: u32 = 50;

/// Build parameters of the control plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlParams {
    /// The identity registers (board id, version, baud divisor, …).
    pub identity: ControlIdentity,
    /// MDC half period in core clocks.
    pub mdc_half_period: u32,
    /// Clocks of `eaps_clock` per EAPS time unit (1 µs on a board: [`EAPS_TIME_DIV`]).
    pub eaps_time_div: u32,
    /// The PHYs' MDIO addresses, port 0 first.
    pub phy_addresses: [u8; 2],
}

/// Fabric (with a core for each of `J` jobs, docs/switch.md §8), control link and MDIO master.
#[derive(LogicBlock)]
pub struct BoardLogic<const J: usize = 1> {
    /// Core clock (the build's [`CoreClock`](crate::tops::core_clock::CoreClock) on the board; also the control plane's).
    pub core_clock: Signal<In, Clock>,
    /// Transmit clock of both ports (125 MHz).
    pub tx_clock: Signal<In, Clock>,
    /// The EAPS node's clock (50 MHz on the board; also its time base's).
    pub eaps_clock: Signal<In, Clock>,
    /// Start loading the configuration (the PLL has locked).
    pub start: Signal<In, Bit>,
    /// The two ports' GMII, port 0 first.
    pub eth: [GmiiPort; 2],
    /// Control link receive line (idle high).
    pub uart_rx: Signal<In, Bit>,
    /// Control link transmit line (idle high).
    pub uart_tx: Signal<Out, Bit>,
    /// MDIO clock.
    pub mdc: Signal<Out, Bit>,
    /// MDIO value to drive.
    pub mdio_o: Signal<Out, Bit>,
    /// Drive MDIO.
    pub mdio_oe: Signal<Out, Bit>,
    /// MDIO as seen on the pin.
    pub mdio_i: Signal<In, Bit>,
    /// The fabric's state.
    pub status: FabricStatus,
    fabric: SwitchFabric<J>,
    link: ControlLink,
    mdio: MdioMaster,
    /// The EAPS node's time: one unit every [`EAPS_TIME_DIV`] clocks of `eaps_clock`.
    timebase: EapsTimebase,
    port_counter_q: DFF<Bits<32>>,
    high_q: DFF<Bit>,
}

impl BoardLogic<1> {
    /// The board logic for a width-4 `core` with `job` in its ROM and the control plane of
    /// `params`.
    pub fn new(core: CoreConfig, job: &JobConfig, params: ControlParams) -> Self {
        BoardLogic::with_jobs(core, std::slice::from_ref(job), params)
    }
}

impl<const J: usize> BoardLogic<J> {
    /// The board logic with `J` width-4 cores, `jobs` (1..=J, the first J cores') in its ROM,
    /// and the control plane of `params`; the link's job registers read job 0's at power-up,
    /// and the job select 0x010F is a register of the link when `J` > 1.
    pub fn with_jobs(core: CoreConfig, jobs: &[JobConfig], params: ControlParams) -> Self {
        let job = &jobs[0];
        let w = config_writes(job);
        let mut regs = [0u32; 10];
        for (a, d) in w.iter().filter(|(a, _)| *a < 10 && *a != 6) {
            regs[usize::from(*a)] = *d;
        }
        Self {
            core_clock: Default::default(),
            tx_clock: Default::default(),
            eaps_clock: Default::default(),
            start: Default::default(),
            eth: Default::default(),
            uart_rx: Default::default(),
            uart_tx: Default::default(),
            mdc: Default::default(),
            mdio_o: Default::default(),
            mdio_oe: Default::default(),
            mdio_i: Default::default(),
            status: Default::default(),
            fabric: SwitchFabric::with_jobs(core, jobs),
            link: ControlLink::with_board(&core, params.identity, usize::from(reg::BOARD_COUNTER_COUNT), Some(regs))
                .with_jobs(J)
                .with_eaps(true),
            mdio: MdioMaster::new(params.mdc_half_period, params.phy_addresses),
            timebase: EapsTimebase::new(params.eaps_time_div),
            port_counter_q: Default::default(),
            high_q: Default::default(),
        }
    }
}

impl<const J: usize> BoardLogic<J> {
    /// The board logic without the EAPS node (`SwitchFabric::without_eaps`): the ports are a
    /// transparent bridge, and the control link answers the EAPS registers as unknown.
    pub fn without_eaps(mut self) -> Self {
        self.fabric = self.fabric.without_eaps();
        self.link = self.link.with_eaps(false);
        self
    }

    /// The board logic with these EAPS domains configured and enabled at power-up
    /// (`SwitchFabric::with_eaps`): the board protects its ring from the first clock, before
    /// anything is written over the control link.
    pub fn with_eaps_domains(mut self, domains: &[Option<DomainSettings>]) -> Self {
        self.fabric = self.fabric.with_eaps(domains, true);
        self
    }
}

impl<const J: usize> Logic for BoardLogic<J> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, core_clock, link, mdio);
        self.timebase.clock.next = self.eaps_clock.val();
        dff_setup!(self, core_clock, port_counter_q, high_q);
        self.fabric.core_clock.next = self.core_clock.val();
        self.fabric.tx_clock.next = self.tx_clock.val();
        self.fabric.eaps_clock.next = self.eaps_clock.val();
        self.fabric.start.next = self.start.val();
        for i in 0..2 {
            GmiiPort::link(&mut self.eth[i], &mut self.fabric.eth[i]);
        }
        FabricStatus::link(&mut self.status, &mut self.fabric.status);
        // Control link.
        self.link.uart_rx.next = self.uart_rx.val();
        self.uart_tx.next = self.link.uart_tx.val();
        self.fabric.cfg_write.next = self.link.cfg.write.val();
        self.fabric.cfg_address.next = self.link.cfg.address.val();
        self.fabric.cfg_data.next = self.link.cfg.data.val();
        self.fabric.pause.next = self.link.pause.val();
        self.link.core_idle.next = self.status.core_idle.val();
        self.fabric.counter_address.next = bit_cast::<5, 6>(self.link.counter.address.val());
        self.fabric.port_counter_address.next = bit_cast::<4, 6>(self.link.counter.address.val());
        // The counter reads are registered on their way back (the link expects one a cycle after
        // its address; the core's is registered in the core, before the choice between jobs), and
        // chosen between after that.
        self.port_counter_q.d.next = self.fabric.port_counter_data.val();
        self.high_q.d.next = self.link.counter.address.val().get_bit(5);
        if self.high_q.q.val() {
            self.link.counter.data.next = self.port_counter_q.q.val();
        } else {
            self.link.counter.data.next = self.fabric.counter_data_q.val();
        }
        // MDIO.
        self.mdc.next = self.mdio.mdc.val();
        self.mdio_o.next = self.mdio.mdio_o.val();
        self.mdio_oe.next = self.mdio.mdio_oe.val();
        self.mdio.mdio_i.next = self.mdio_i.val();
        self.link.link_state.next = self.mdio.link_state.val();
        // EAPS: the node acts on the PHYs' link state (ports 0 and 1: up at 10, 100 or 1000
        // Mb/s, codes 2..=4 of the port's byte).
        self.fabric.eaps_link_up.next =
            bit_cast::<2, 1>((self.mdio.link_state.val().get_bit(1) | self.mdio.link_state.val().get_bit(2)).into())
                | (bit_cast::<2, 1>(
                    (self.mdio.link_state.val().get_bit(9) | self.mdio.link_state.val().get_bit(10)).into(),
                ) << 1);
        self.fabric.eaps_now.next = self.timebase.now.val();
        // Its configuration and status registers over the control link (0x0700.., 0x0800..).
        EapsRegisterPort::join(&mut self.link.eaps, &mut self.fabric.eaps);
        StragglerRead::join(&mut self.fabric.straggler, &mut self.link.straggler);
    }
}

/// The Verilog of the board logic (top module `top`), for simulation.
pub fn board_logic_verilog(core: CoreConfig, job: &JobConfig, params: ControlParams) -> String {
    crate::tops::on_big_stack(|| {
        let mut b = BoardLogic::new(core, job, params);
        b.connect_all();
        generate_verilog(&b)
    })
}

/// The Verilog of the board logic with `J` cores and `jobs` in its ROM (top module `top`).
pub fn board_logic_verilog_jobs<const J: usize>(core: CoreConfig, jobs: &[JobConfig], params: ControlParams) -> String {
    crate::tops::on_big_stack(|| {
        let mut b = BoardLogic::<J>::with_jobs(core, jobs, params);
        b.connect_all();
        generate_verilog(&b)
    })
}
