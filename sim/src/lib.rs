//! spotagg reference switch (the executable specification of docs/switch.md) and the
//! simulation harnesses that drive the hardware descriptions.

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
pub mod metrics_http;
pub mod multi_job;
pub mod pcap;
pub mod reference;
#[cfg(feature = "hdl")]
pub mod rtl;
pub mod trace;
pub mod udp_switch;
#[cfg(feature = "hdl")]
pub mod verilator;
#[cfg(feature = "hdl")]
pub mod verilator_engine;
