//! The control link's request parser: received bytes in, one verdict per request out
//! (`spotagg_driver::control::protocol`: frame layout and status codes).
//!
//! Request fields as the parser takes them (offsets in bytes):
//!
//! | offset | field | state |
//! |---|---|---|
//! | 0 | SYNC 0xA5 | idle: any other byte is ignored |
//! | 1 | opcode | header |
//! | 2..4 | address | header |
//! | 4 | count | header: opcode and count checked here |
//! | 5.. | 4·count data bytes (write) | data: stored in a 32-word buffer |
//! | end−2.. | CRC-16 | crc: compared a byte at a time; the verdict (CRC, then the address range, checked in registers while the CRC arrives) the next cycle |
//!
//! Inputs: received bytes (`rx_byte` with `rx_valid` for a cycle), `line_error` (a byte with a
//! low stop bit: no byte, but the line was not quiet), `answered` (the answer is sent) and
//! `data_address` (a word of the write to read). Outputs: one verdict per request (`done` for a
//! cycle with `status`, and `accepted`), the request (`address`, `count`, `last_index`, `write`,
//! `snapshot`) and the word `data_address` named (`data_word`).
//!
//! Contract: bytes other than SYNC outside a request are ignored. For each request that starts
//! with SYNC, `done` pulses once with the `status` that `protocol::parse_request` and the
//! register map give its bytes:
//! - a whole frame (its header good and all its bytes in): bad checksum, else unknown register
//!   unless every register it names exists for its access ([`RegisterRange`]), else ok, with
//!   `accepted`; in the cycle after its last CRC byte;
//! - a frame cut short: timeout, in the first cycle without a byte after `timeout` cycles
//!   without a byte or a line error;
//! - a header with another opcode or a count of 0 or above `MAX_COUNT`: bad opcode or bad
//!   length (the opcode first), once the line has been quiet (no byte, no line error) for
//!   `timeout` cycles after the header, whatever comes in that cycle (the frame's length is
//!   unknown, so the bytes up to then are skipped).
//!
//! From `done` until `answered` the parser takes no byte (a byte in the cycle of `answered` is
//! dropped too) and holds the request: `address`, `count` (`last_index` = count − 1), `write`,
//! `snapshot` (a read of 0x0200 first) and the words of a write, word i on `data_word` the
//! cycle after `data_address` is i; they stay until the next SYNC.
//!
//! Timing: byte pulses at least 4 cycles apart (the address-range check takes three cycles
//! after the count byte; a UART byte takes 10 bit times). `accepted` comes from a register;
//! `done` and `status` from registers and `rx_valid` (a timeout ends in a cycle without a
//! byte).

use crate::block_ram::BlockRam;
use crate::crc16::Crc16Step;
use crate::register_range::RegisterRange;
use rust_hdl::prelude::*;
use spotagg_driver::control::protocol::{Status, MAX_COUNT, REQUEST_SYNC};

/// Where the parser is in a request.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
enum ParserState {
    /// Waiting for SYNC.
    Idle,
    /// Opcode, address and count.
    Header,
    /// The words of a write, into the buffer.
    Data,
    /// The two CRC bytes.
    Crc,
    /// Skipping an unparseable request until the line is quiet.
    Discard,
    /// The verdict on a whole request.
    Verdict,
    /// The request is being answered: bytes are dropped until `answered`.
    Answering,
}

/// The request parser.
#[derive(LogicBlock)]
pub struct RequestParser {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// A byte was received (one cycle, with `rx_byte`).
    pub rx_valid: Signal<In, Bit>,
    /// The byte.
    pub rx_byte: Signal<In, Bits<8>>,
    /// A byte with a low stop bit was received: no byte, but the line was not quiet.
    pub line_error: Signal<In, Bit>,
    /// The request's answer is sent: take the next request.
    pub answered: Signal<In, Bit>,
    /// The request is over (one cycle): answer it with `status`.
    pub done: Signal<Out, Bit>,
    /// With `done`: the answer's `protocol::Status`.
    pub status: Signal<Out, Bits<8>>,
    /// With `done`: the status is ok, the request is to be carried out.
    pub accepted: Signal<Out, Bit>,
    /// The request is a write.
    pub write: Signal<Out, Bit>,
    /// The request is a read whose first register is the first counter (0x0200): a snapshot.
    pub snapshot: Signal<Out, Bit>,
    /// The request's first register.
    pub address: Signal<Out, Bits<16>>,
    /// Its number of registers.
    pub count: Signal<Out, Bits<8>>,
    /// `count` − 1: the index of its last word.
    pub last_index: Signal<Out, Bits<8>>,
    /// The index of a write's word to read.
    pub data_address: Signal<In, Bits<5>>,
    /// The word `data_address` named a cycle earlier.
    pub data_word: Signal<Out, Bits<32>>,
    state: DFF<ParserState>,
    header_index: DFF<Bits<2>>,
    opcode: DFF<Bits<8>>,
    first_register: DFF<Bits<16>>,
    register_count: DFF<Bits<8>>,
    last_word_index: DFF<Bits<8>>,
    word_index: DFF<Bits<8>>,
    at_last_word: DFF<Bit>,
    byte_in_word: DFF<Bits<2>>,
    partial_word: DFF<Bits<32>>,
    next_partial_word: Signal<Local, Bits<32>>,
    running_crc: DFF<Bits<16>>,
    crc_step: Crc16Step,
    crc_low_next: DFF<Bit>,
    crc_high_matched: DFF<Bit>,
    crc_matched: DFF<Bit>,
    request_ok: DFF<Bit>,
    discard_bad_opcode: DFF<Bit>,
    quiet_cycles: DFF<Bits<24>>,
    line_quiet: DFF<Bit>,
    words: BlockRam<5, 32>,
    range: RegisterRange,
    timeout_m1: Constant<Bits<24>>,
    sync: Constant<Bits<8>>,
    max_count: Constant<Bits<8>>,
    status_ok: Constant<Bits<8>>,
    status_bad_checksum: Constant<Bits<8>>,
    status_bad_length: Constant<Bits<8>>,
    status_unknown_register: Constant<Bits<8>>,
    status_timeout: Constant<Bits<8>>,
    status_bad_opcode: Constant<Bits<8>>,
}

/// A `protocol::Status` code as a constant of the generated Verilog.
pub(super) fn status_code(s: Status) -> Constant<Bits<8>> {
    Constant::new((s as u64).into())
}

impl RequestParser {
    /// A parser that times a frame out after `timeout` quiet cycles (1..2^24), checking the
    /// registers a request names against `range`.
    pub fn new(timeout: u32, range: RegisterRange) -> Self {
        assert!((1..1 << 24).contains(&timeout), "frame timeout {timeout} cycles: 1..2^24");
        Self {
            clock: Default::default(),
            rx_valid: Default::default(),
            rx_byte: Default::default(),
            line_error: Default::default(),
            answered: Default::default(),
            done: Default::default(),
            status: Default::default(),
            accepted: Default::default(),
            write: Default::default(),
            snapshot: Default::default(),
            address: Default::default(),
            count: Default::default(),
            last_index: Default::default(),
            data_address: Default::default(),
            data_word: Default::default(),
            state: Default::default(),
            header_index: Default::default(),
            opcode: Default::default(),
            first_register: Default::default(),
            register_count: Default::default(),
            last_word_index: Default::default(),
            word_index: Default::default(),
            at_last_word: Default::default(),
            byte_in_word: Default::default(),
            partial_word: Default::default(),
            next_partial_word: Default::default(),
            running_crc: Default::default(),
            crc_step: Default::default(),
            crc_low_next: Default::default(),
            crc_high_matched: Default::default(),
            crc_matched: Default::default(),
            request_ok: Default::default(),
            discard_bad_opcode: Default::default(),
            quiet_cycles: Default::default(),
            line_quiet: Default::default(),
            words: BlockRam::new(usize::from(MAX_COUNT)),
            range,
            timeout_m1: Constant::new(u64::from(timeout - 1).into()),
            sync: Constant::new(u64::from(REQUEST_SYNC).into()),
            max_count: Constant::new(u64::from(MAX_COUNT).into()),
            status_ok: status_code(Status::Ok),
            status_bad_checksum: status_code(Status::BadChecksum),
            status_bad_length: status_code(Status::BadLength),
            status_unknown_register: status_code(Status::UnknownRegister),
            status_timeout: status_code(Status::Timeout),
            status_bad_opcode: status_code(Status::BadOpcode),
        }
    }

    /// The same parser with its register map changed by `f` (the link's build options).
    pub fn map_registers(mut self, f: impl FnOnce(RegisterRange) -> RegisterRange) -> Self {
        let range = std::mem::replace(&mut self.range, RegisterRange::new(1));
        self.range = f(range);
        self
    }
}

impl Logic for RequestParser {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            header_index,
            opcode,
            first_register,
            register_count,
            last_word_index,
            word_index,
            at_last_word,
            byte_in_word,
            partial_word,
            running_crc,
            crc_low_next,
            crc_high_matched,
            crc_matched,
            request_ok,
            discard_bad_opcode,
            quiet_cycles,
            line_quiet
        );
        clock!(self, clock, words, range);
        self.address.next = self.first_register.q.val();
        self.count.next = self.register_count.q.val();
        self.last_index.next = self.last_word_index.q.val();
        self.write.next = self.range.write.val();
        self.snapshot.next = self.range.snapshot.val() & self.range.read.val();
        self.data_word.next = self.words.read_data.val();
        self.words.read_address.next = self.data_address.val();
        // Does every register of the request exist for its access? (From registers: the
        // address and count are complete two bytes, the CRC, before the verdict uses it.)
        self.range.op.next = self.opcode.q.val();
        self.range.address.next = self.first_register.q.val();
        self.range.count_m1.next = self.last_word_index.q.val();

        // CRC-16/CCITT-FALSE of the received byte, byte-wise form.
        self.crc_step.crc.next = self.running_crc.q.val();
        self.crc_step.data.next = self.rx_byte.val();
        self.next_partial_word.next = (self.partial_word.q.val() << 8) | bit_cast::<32, 8>(self.rx_byte.val());
        self.words.write_address.next = bit_cast::<5, 8>(self.word_index.q.val());
        self.words.write_data.next = self.next_partial_word.val();
        self.words.write_enable.next = false;
        // line_quiet is quiet_cycles >= timeout, from a register: set a cycle ahead.
        self.line_quiet.d.next = false;
        if self.rx_valid.val() || self.line_error.val() {
            self.quiet_cycles.d.next = 0.into();
        } else {
            self.line_quiet.d.next = self.quiet_cycles.q.val() >= self.timeout_m1.val();
            if self.quiet_cycles.q.val() != 0xff_ffff {
                self.quiet_cycles.d.next = self.quiet_cycles.q.val() + 1;
            }
        }
        // word_index == last_word_index a cycle late: the word index moves once in four bytes.
        self.at_last_word.d.next = self.word_index.q.val() == self.last_word_index.q.val();

        self.done.next = false;
        self.accepted.next = self.request_ok.q.val();
        self.request_ok.d.next = false;
        self.status.next = self.status_ok.val();
        match self.state.q.val() {
            ParserState::Idle => {
                if self.rx_valid.val() && (self.rx_byte.val() == self.sync.val()) {
                    self.state.d.next = ParserState::Header;
                    self.running_crc.d.next = 0xffff.into();
                    self.header_index.d.next = 0.into();
                }
            }
            ParserState::Header => {
                if self.rx_valid.val() {
                    self.running_crc.d.next = self.crc_step.updated.val();
                    self.header_index.d.next = self.header_index.q.val() + 1;
                    match self.header_index.q.val().index() {
                        0 => {
                            self.opcode.d.next = self.rx_byte.val();
                        }
                        1 => {
                            self.first_register.d.next = bit_cast::<16, 8>(self.rx_byte.val()) << 8;
                        }
                        2 => {
                            self.first_register.d.next =
                                self.first_register.q.val() | bit_cast::<16, 8>(self.rx_byte.val());
                        }
                        _ => {
                            self.register_count.d.next = self.rx_byte.val();
                            self.last_word_index.d.next = self.rx_byte.val() - 1;
                            self.word_index.d.next = 0.into();
                            self.byte_in_word.d.next = 0.into();
                            self.crc_low_next.d.next = false;
                            if !self.range.read.val() && !self.range.write.val() {
                                self.discard_bad_opcode.d.next = true;
                                self.state.d.next = ParserState::Discard;
                            } else if (self.rx_byte.val() == 0) || (self.rx_byte.val() > self.max_count.val()) {
                                self.discard_bad_opcode.d.next = false;
                                self.state.d.next = ParserState::Discard;
                            } else if self.range.write.val() {
                                self.state.d.next = ParserState::Data;
                            } else {
                                self.state.d.next = ParserState::Crc;
                            }
                        }
                    }
                } else if self.line_quiet.q.val() {
                    self.done.next = true;
                    self.status.next = self.status_timeout.val();
                    self.state.d.next = ParserState::Answering;
                }
            }
            ParserState::Data => {
                if self.rx_valid.val() {
                    self.running_crc.d.next = self.crc_step.updated.val();
                    self.partial_word.d.next = self.next_partial_word.val();
                    self.byte_in_word.d.next = self.byte_in_word.q.val() + 1;
                    if self.byte_in_word.q.val() == 3 {
                        self.words.write_enable.next = true;
                        self.word_index.d.next = self.word_index.q.val() + 1;
                        if self.at_last_word.q.val() {
                            self.state.d.next = ParserState::Crc;
                        }
                    }
                } else if self.line_quiet.q.val() {
                    self.done.next = true;
                    self.status.next = self.status_timeout.val();
                    self.state.d.next = ParserState::Answering;
                }
            }
            ParserState::Crc => {
                if self.rx_valid.val() {
                    // The CRC compared a byte at a time, the verdict in Verdict.
                    if !self.crc_low_next.q.val() {
                        self.crc_high_matched.d.next =
                            self.rx_byte.val() == bit_cast::<8, 16>(self.running_crc.q.val() >> 8);
                        self.crc_low_next.d.next = true;
                    } else {
                        self.crc_matched.d.next = self.crc_high_matched.q.val()
                            && (self.rx_byte.val() == bit_cast::<8, 16>(self.running_crc.q.val()));
                        // Accepted in Verdict, from a register (the range check is complete:
                        // the CRC's two bytes come at least 4 cycles after the count).
                        self.request_ok.d.next = self.crc_high_matched.q.val()
                            && (self.rx_byte.val() == bit_cast::<8, 16>(self.running_crc.q.val()))
                            && self.range.range_ok.val();
                        self.state.d.next = ParserState::Verdict;
                    }
                } else if self.line_quiet.q.val() {
                    self.done.next = true;
                    self.status.next = self.status_timeout.val();
                    self.state.d.next = ParserState::Answering;
                }
            }
            ParserState::Discard => {
                // Skip an unparseable frame until the line is quiet.
                if self.line_quiet.q.val() {
                    self.done.next = true;
                    self.status.next = self.status_bad_length.val();
                    if self.discard_bad_opcode.q.val() {
                        self.status.next = self.status_bad_opcode.val();
                    }
                    self.state.d.next = ParserState::Answering;
                }
            }
            ParserState::Verdict => {
                // The CRC first, then the registers, from registers.
                self.done.next = true;
                if !self.crc_matched.q.val() {
                    self.status.next = self.status_bad_checksum.val();
                } else if !self.range.range_ok.val() {
                    self.status.next = self.status_unknown_register.val();
                }
                self.state.d.next = ParserState::Answering;
            }
            ParserState::Answering => {
                if self.answered.val() {
                    self.state.d.next = ParserState::Idle;
                }
            }
        }
    }
}
