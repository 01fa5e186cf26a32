//! One EAPS domain's types, shared by the node ([`crate::eaps_node::EapsNode`]), which holds
//! every domain's registers and configuration, and its domain step
//! ([`crate::eaps_step::DomainStep`]), which updates one domain's: the state and the
//! protocol registers, the configuration as the step reads it and as the board's registers
//! hold it, the event being handled and the causes of a transition.

use rust_hdl::prelude::*;

/// The causes of a transition as status word 6 carries them.
pub mod cause {
    /// No transition yet.
    pub const NONE: u32 = 0;
    /// Enabled.
    pub const ENABLED: u32 = 1;
    /// The master's HEALTH came back.
    pub const HEALTH_RETURNED: u32 = 2;
    /// A LINK-DOWN PDU arrived.
    pub const LINK_DOWN_PDU: u32 = 3;
    /// Port 0 went down.
    pub const LOCAL_LINK_DOWN0: u32 = 4;
    /// Port 1 went down.
    pub const LOCAL_LINK_DOWN1: u32 = 5;
    /// Port 0 came up.
    pub const LOCAL_LINK_UP0: u32 = 6;
    /// Port 1 came up.
    pub const LOCAL_LINK_UP1: u32 = 7;
    /// The fail timer expired.
    pub const FAIL_TIMER: u32 = 8;
    /// RING-UP-FLUSH-FDB arrived.
    pub const RING_UP_FLUSH: u32 = 9;
    /// A HEALTH carrying the master's Complete state opened a port whose hold had run out
    /// (docs/eaps.md §4).
    pub const HEALTH_COMPLETE: u32 = 10;
}

/// A domain's state.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
pub enum DomState {
    /// Not enabled.
    Idle,
    /// Master, no HEALTH back yet.
    Init,
    /// Master, ring complete.
    Complete,
    /// Master, ring broken.
    Failed,
    /// Transit, both ports forwarding.
    LinksUp,
    /// Transit, a port down.
    LinksDown,
    /// Transit, a restored port blocked until RING-UP, or until HEALTH-Complete once its timer
    /// has armed it (docs/eaps.md §4).
    PreForwarding,
}

/// A domain's protocol registers, as one step reads and writes them back.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct DomRegs {
    /// The state.
    pub state: DomState,
    /// Forwarding on ports 0 (bit 0) and 1.
    pub fwd: Bits<2>,
    /// The hello sequence.
    pub hello_seq: Bits<16>,
    /// Armed timers: hello, fail, pre-forwarding 0, 1, other master (bits 0..=4).
    pub armed: Bits<5>,
    /// The hello deadline.
    pub hello_at: Bits<32>,
    /// The fail deadline.
    pub fail_at: Bits<32>,
    /// Port 0's pre-forwarding deadline.
    pub pf0_at: Bits<32>,
    /// Port 1's.
    pub pf1_at: Bits<32>,
    /// The other-master deadline.
    pub om_at: Bits<32>,
}

/// The configuration of the domain being stepped, as [`EapsDomainCfg`] holds it (the fields
/// the step and the emitter read).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct DomCfg {
    /// The domain exists.
    pub active: Bit,
    /// Master (else transit).
    pub master: Bit,
    /// The primary port.
    pub primary: Bit,
    /// Fail-timer action send-alert.
    pub send_alert: Bit,
    /// Control VLAN.
    pub control_vlan: Bits<12>,
    /// Hello period.
    pub hello: Bits<32>,
    /// Fail period.
    pub fail: Bits<32>,
    /// Pre-forwarding period.
    pub pre_forwarding: Bits<32>,
    /// The PDUs' hello timer field.
    pub hello_field: Bits<16>,
    /// Their fail timer field.
    pub fail_field: Bits<16>,
}

interface_pair! {
    /// One domain's configuration, as the node reads it (quasi-static: change it only while
    /// `enable` is low).
    pub struct EapsDomainCfg join "EapsDomainCfgSource";
    /// The end that holds a domain's configuration (`crate::eaps_registers::EapsRegisters`).
    pub struct EapsDomainCfgSource join "EapsDomainCfg";
    {
        /// The domain exists.
        active: In Bit,
        /// Master (else transit).
        master: In Bit,
        /// The primary port.
        primary: In Bit,
        /// Fail-timer action send-alert (else open-secondary).
        send_alert: In Bit,
        /// Control VLAN.
        control_vlan: In Bits<12>,
        /// First protected VLAN (the data plane's filter reads the range).
        protected_lo: In Bits<12>,
        /// Last protected VLAN.
        protected_hi: In Bits<12>,
        /// Hello period, time units.
        hello: In Bits<32>,
        /// Fail period.
        fail: In Bits<32>,
        /// Pre-forwarding period.
        pre_forwarding: In Bits<32>,
        /// The hello timer field of the PDUs (ms).
        hello_field: In Bits<16>,
        /// The fail timer field.
        fail_field: In Bits<16>,
    }
}

/// The EAPS event being handled (not a training job). The node's register and the step's input
/// that hold it are `event_kind` (`event` is a Verilog keyword); rust-hdl writes the variants
/// into the Verilog as the localparams `Event$Enable`, ….
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
pub enum Event {
    /// `enable` rose.
    Enable,
    /// A port's link went down.
    LinkDown,
    /// A port's link came up.
    LinkUp,
    /// A PDU arrived.
    Frame,
    /// Timers are due.
    Timers,
}
