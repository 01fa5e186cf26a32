//! The transmit side of a core (docs/switch.md §3): [`result_builder::ResultBuilder`], the
//! entry point, sends the frames the aggregator prepared in its two-half buffer. The aggregator
//! writes a reply's header words into that buffer with [`header_writer::HeaderWriter`], each
//! word computed by [`reply_header::ReplyHeader`] from the request's header words.

pub mod header_writer;
pub mod reply_header;
pub mod result_builder;
