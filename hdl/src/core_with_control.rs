//! The core with its control link: what a board top instantiates. Ethernet streams as in
//! [`crate::core::Core`]; the configuration bus and the counter port are driven by the
//! [`crate::control_link::ControlLink`] from the serial pins `uart_rx`/`uart_tx`.
//!
//! Guarantees: those of the core and of the control link; the core's configuration changes
//! only through checked control-link requests. While the link takes a counter snapshot
//! (`pause`), the receive stream is held (`rx.ready` low) from the next frame boundary on:
//! a frame already begun is taken whole. `link_state` is the board's per-port link
//! state, one byte a port (0 = unknown when the board does not drive it).

use crate::config::CoreConfig;
use crate::config_registers::ConfigBusDriver;
use crate::control_link::{ControlIdentity, ControlLink};
use crate::core::Core;
use crate::straggler::StragglerRead;
use crate::word_stream::{BeatSink, BeatSource};
use rust_hdl::prelude::*;

/// Core plus control link with `D`-bit stream beats.
#[derive(LogicBlock)]
pub struct CoreWithControl<const D: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The received frames, `D` bits a beat.
    pub rx: BeatSink<D>,
    /// The frames sent, `D` bits a beat.
    pub tx: BeatSource<D>,
    /// Serial receive line of the control link (idle high).
    pub uart_rx: Signal<In, Bit>,
    /// Serial transmit line of the control link (idle high).
    pub uart_tx: Signal<Out, Bit>,
    /// Link state of ports 0..=3, one byte each.
    pub link_state: Signal<In, Bits<32>>,
    /// Nothing in flight.
    pub idle: Signal<Out, Bit>,
    core: Core<D>,
    link: ControlLink,
    in_frame: DFF<Bit>,
    counter_q: DFF<Bits<32>>,
    hold: Signal<Local, Bit>,
}

impl<const D: usize> CoreWithControl<D> {
    /// The core built with `config` and a control link answering `identity`.
    pub fn new(config: CoreConfig, identity: ControlIdentity) -> Self {
        Self {
            clock: Default::default(),
            rx: Default::default(),
            tx: Default::default(),
            uart_rx: Default::default(),
            uart_tx: Default::default(),
            link_state: Default::default(),
            idle: Default::default(),
            core: Core::new(config),
            link: ControlLink::new(&config, identity),
            in_frame: Default::default(),
            counter_q: Default::default(),
            hold: Default::default(),
        }
    }
}

impl<const D: usize> Logic for CoreWithControl<D> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, core, link);
        dff_setup!(self, clock, in_frame, counter_q);
        // Between frames, a snapshot holds the receive stream.
        self.hold.next = self.link.pause.val() & !self.in_frame.q.val();
        if self.rx.valid.val() & self.core.rx.ready.val() & !self.hold.val() {
            self.in_frame.d.next = !self.rx.last.val();
        }
        self.core.rx.valid.next = self.rx.valid.val() & !self.hold.val();
        self.core.rx.data.next = self.rx.data.val();
        self.core.rx.last.next = self.rx.last.val();
        self.core.rx.bytes.next = self.rx.bytes.val();
        self.rx.ready.next = self.core.rx.ready.val() & !self.hold.val();
        BeatSource::<D>::link(&mut self.tx, &mut self.core.tx);
        self.idle.next = self.core.idle.val();
        self.link.uart_rx.next = self.uart_rx.val();
        self.uart_tx.next = self.link.uart_tx.val();
        self.link.link_state.next = self.link_state.val();
        StragglerRead::join(&mut self.core.straggler, &mut self.link.straggler);
        self.link.core_idle.next = self.core.idle.val();
        ConfigBusDriver::join(&mut self.link.cfg, &mut self.core.cfg);
        self.core.counter.address.next = bit_cast::<5, 6>(self.link.counter.address.val());
        // The core's counter read is combinational: registered here, as the link expects.
        self.counter_q.d.next = self.core.counter.data.val();
        self.link.counter.data.next = self.counter_q.q.val();
    }
}

/// The Verilog of the core with control link built with `config` (top module `top`).
pub fn core_with_control_verilog(config: &CoreConfig, identity: ControlIdentity) -> String {
    fn v<const D: usize>(c: &CoreConfig, id: ControlIdentity) -> String {
        let mut b = CoreWithControl::<D>::new(*c, id);
        b.connect_all();
        generate_verilog(&b)
    }
    match config.width_bytes {
        1 => v::<8>(config, identity),
        4 => v::<32>(config, identity),
        8 => v::<64>(config, identity),
        w => panic!("width_bytes = {w} is not supported"),
    }
}
