//! The streams the blocks pass frames on, as rust-hdl interfaces: bytes ([`byte_stream`], the
//! MAC side and the EAPS node's ports) and 32-bit words or wider beats ([`word_stream`], the
//! core's), with the width adapters between the core's external beats and its internal words
//! ([`stream_width::RxWidth`], [`stream_width::TxWidth`]).

pub mod byte_stream;
pub mod stream_width;
pub mod word_stream;
