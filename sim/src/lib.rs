//! spotagg simulation: the harnesses that drive the hardware descriptions (the rust-hdl
//! simulation `rtl`, the Verilator harness `verilator` and `verilator_engine`, the board
//! model `board_model`, GMII framing [`gmii`]), the trace generator [`trace`], pcap I/O
//! [`pcap`], the cluster simulator [`cluster`] and the EAPS ring simulators [`eaps`].
//!
//! Everything here is checked against the executable specifications of `spotagg_spec` (the
//! reference switch, the multi-job router, the EAPS reference node): the traces are classified
//! and answered by the reference switch, the hardware engines are compared with it frame for
//! frame, and the hardware EAPS nodes run in rings beside reference nodes. Without the `hdl`
//! feature (the default has it) the crate has no rust-hdl: the rust-hdl and Verilator modules
//! are left out.

/// `Eq` and `Ord` for `$t` by the key `$key(&self)` (for the events of a simulation's queue).
macro_rules! ord_by_key {
    ($t:ty, $key:expr) => {
        impl PartialEq for $t {
            fn eq(&self, o: &Self) -> bool {
                $key(self) == $key(o)
            }
        }
        impl Eq for $t {}
        impl PartialOrd for $t {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }
        impl Ord for $t {
            fn cmp(&self, o: &Self) -> std::cmp::Ordering {
                $key(self).cmp(&$key(o))
            }
        }
    };
}

#[cfg(feature = "hdl")]
pub mod board_model;
pub mod cluster;
pub mod eaps;
pub mod gmii;
pub mod pcap;
#[cfg(feature = "hdl")]
pub mod rtl;
pub mod trace;
#[cfg(feature = "hdl")]
pub mod verilator;
#[cfg(feature = "hdl")]
pub mod verilator_engine;
