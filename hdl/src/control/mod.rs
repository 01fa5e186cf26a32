//! Configuration and monitoring: [`control_link::ControlLink`], the entry point, takes requests
//! over a UART ([`uart`], framed with [`crc16`], checked against the register map by
//! [`register_range`]) and drives the core's configuration bus into
//! [`crate::config_registers::ConfigRegisters`] (the job's settings every block reads, at the
//! crate's root because the blocks of every folder read them). The MDIO
//! master ([`mdio::MdioMaster`]) polls the PHYs for the link state the link reports.

pub mod control_link;
pub mod crc16;
pub mod mdio;
pub mod register_range;
pub mod uart;
