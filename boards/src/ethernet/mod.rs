//! The Ethernet blocks of the board logic, portable rust-hdl (no FPGA primitive): RGMII to
//! GMII in the port's clocks, the MACs, the FIFOs between clock domains, and the frame merge,
//! routing, bridge table and result dispatch between the two ports and the core.

pub mod byte_packer;
pub mod crc32;
pub mod eth_port;
pub mod frame_arbiter;
pub mod frame_fifo;
pub mod gmii;
pub mod lut_frame_fifo;
pub mod mac_rx;
pub mod mac_table;
pub mod mac_tx;
pub mod pdu_merge;
pub mod result_dispatcher;
pub mod rgmii;
pub mod rx_classifier;
pub mod rx_router;
pub mod stream;
pub mod stream_slice;
