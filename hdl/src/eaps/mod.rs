//! EAPS ring protection (docs/eaps.md) in hardware: [`eaps_node::EapsNode`], the entry point,
//! runs `D` domains on two ring ports, one event at a time through [`eaps_step::DomainStep`]
//! (a domain's registers, configuration and events are the types of [`domain`]),
//! with PDUs received and sent by [`eaps_pdu`] and other EDP frames checked by [`eaps_esl`].
//! The board around it holds the domains' configuration ([`eaps_registers::EapsRegisters`]),
//! the node's time base and the data plane's VLAN gate ([`eaps_gate`]).

pub mod domain;
pub mod eaps_esl;
pub mod eaps_gate;
pub mod eaps_node;
pub mod eaps_pdu;
pub mod eaps_registers;
pub mod eaps_step;
