//! The transmit side of a core (docs/switch.md §3): [`result_builder::ResultBuilder`], the
//! entry point, sends the frames the aggregator prepared in its two-half buffer. The aggregator
//! writes a reply's header words into that buffer with
//! [`header_buffer_writer::HeaderWriter`], each word composed by
//! [`header_composer::ReplyHeader`] from the request's header words and the job's settings.

pub mod header_buffer_writer;
pub mod header_composer;
pub mod result_builder;
