//! The core with its control link: what a board top instantiates. Ethernet streams as in
//! [`crate::core::Core`]; the configuration bus and the counter port are driven by the
//! [`crate::control_link::ControlLink`] from the serial pins `uart_rx`/`uart_tx`.
//!
//! Guarantees: those of the core and of the control link; the core's configuration changes
//! only through checked control-link requests. While the link takes a counter snapshot
//! (`pause`), the receive stream is held (`rx_ready` low) from the next frame boundary on:
//! a frame already begun is taken whole. `link_state` is the board's per-port link
//! state, one byte a port (0 = unknown when the board does not drive it).

use crate::config::CoreConfig;
use crate::control_link::{ControlIdentity, ControlLink};
use crate::core::Core;
use rust_hdl::prelude::*;

/// Core plus control link with `D`-bit stream beats.
#[derive(LogicBlock)]
pub struct CoreWithControl<const D: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Receive beat valid.
    pub rx_valid: Signal<In, Bit>,
    /// Receive beat.
    pub rx_data: Signal<In, Bits<D>>,
    /// Last beat of a received frame.
    pub rx_last: Signal<In, Bit>,
    /// Valid bytes of the last received beat.
    pub rx_bytes: Signal<In, Bits<4>>,
    /// The core takes the beat.
    pub rx_ready: Signal<Out, Bit>,
    /// Transmit beat valid.
    pub tx_valid: Signal<Out, Bit>,
    /// Transmit beat.
    pub tx_data: Signal<Out, Bits<D>>,
    /// Last beat of a sent frame.
    pub tx_last: Signal<Out, Bit>,
    /// Valid bytes of the last sent beat.
    pub tx_bytes: Signal<Out, Bits<4>>,
    /// Downstream takes the beat.
    pub tx_ready: Signal<In, Bit>,
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
            rx_valid: Default::default(),
            rx_data: Default::default(),
            rx_last: Default::default(),
            rx_bytes: Default::default(),
            rx_ready: Default::default(),
            tx_valid: Default::default(),
            tx_data: Default::default(),
            tx_last: Default::default(),
            tx_bytes: Default::default(),
            tx_ready: Default::default(),
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
        if self.rx_valid.val() & self.core.rx_ready.val() & !self.hold.val() {
            self.in_frame.d.next = !self.rx_last.val();
        }
        self.core.rx_valid.next = self.rx_valid.val() & !self.hold.val();
        self.core.rx_data.next = self.rx_data.val();
        self.core.rx_last.next = self.rx_last.val();
        self.core.rx_bytes.next = self.rx_bytes.val();
        self.rx_ready.next = self.core.rx_ready.val() & !self.hold.val();
        self.tx_valid.next = self.core.tx_valid.val();
        self.tx_data.next = self.core.tx_data.val();
        self.tx_last.next = self.core.tx_last.val();
        self.tx_bytes.next = self.core.tx_bytes.val();
        self.core.tx_ready.next = self.tx_ready.val();
        self.idle.next = self.core.idle.val();
        self.link.uart_rx.next = self.uart_rx.val();
        self.uart_tx.next = self.link.uart_tx.val();
        self.link.link_state.next = self.link_state.val();
        self.link.core_idle.next = self.core.idle.val();
        self.core.cfg_write.next = self.link.cfg_write.val();
        self.core.cfg_address.next = self.link.cfg_address.val();
        self.core.cfg_data.next = self.link.cfg_data.val();
        self.core.counter_address.next = bit_cast::<5, 6>(self.link.counter_address.val());
        // The core's counter read is combinational: registered here, as the link expects.
        self.counter_q.d.next = self.core.counter_data.val();
        self.link.counter_data.next = self.counter_q.q.val();
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
