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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use crate::register_range::tests::exists;
    use spotagg_driver::control::protocol::{
        parse_request, read_request, reg, write_request, Request, RequestError, OP_READ, OP_WRITE,
    };

    const TIMEOUT: u64 = 40;
    const COUNTERS: u32 = 24;
    const STRAGGLERS: u32 = 16;

    /// The register map of a parser built `with_jobs(2)` and `with_eaps(true)`: does every
    /// register of a request exist for its access?
    fn registers_exist(request: &Request) -> bool {
        let write = matches!(request, Request::Write { .. });
        let (first, n) = (u32::from(request.address()), u32::from(request.count()));
        let eaps = |a: u32| if write { (0x0700..=0x07FF).contains(&a) } else { (0x0800..=0x08FF).contains(&a) };
        (write && first == u32::from(reg::JOB_SELECT) && n == 1)
            || (first..first + n).all(|a| a <= 0xFFFF && (exists(a, write, COUNTERS, STRAGGLERS) || eaps(a)))
    }

    /// The contract's verdict on the bytes of one request: its status, and the length of its
    /// frame when the header is good and the frame whole (the verdict follows its last byte;
    /// any other waits for a quiet line).
    fn model(frame: &[u8]) -> (Status, Option<usize>) {
        let status = match parse_request(frame) {
            Ok((r, _)) if registers_exist(&r) => Status::Ok,
            Ok(_) => Status::UnknownRegister,
            Err(RequestError::Incomplete) => Status::Timeout,
            Err(e) => e.status().unwrap(),
        };
        if frame.len() < 5 || ![OP_READ, OP_WRITE].contains(&frame[1]) || !(1..=MAX_COUNT).contains(&frame[4]) {
            return (status, None);
        }
        let len = 7 + if frame[1] == OP_WRITE { 4 * usize::from(frame[4]) } else { 0 };
        (status, (len <= frame.len()).then_some(len))
    }

    /// A request near the edges of the register map, sometimes damaged: a bit flipped, cut
    /// short, another opcode or a count out of range.
    fn request(rng: &mut Rng) -> Vec<u8> {
        let bases = [0x0000u16, 0x0100, 0x0109, 0x010A, 0x010F, 0x0180, 0x0200, 0x0300, 0x0400, 0x0600, 0x0700, 0x0800];
        let address = match rng.below(8) {
            0 => rng.next() as u16,
            _ => {
                let base = bases[rng.below(bases.len() as u64) as usize];
                base.wrapping_add(rng.below(40) as u16).wrapping_sub(4)
            }
        };
        let most = if rng.one_in(3) { MAX_COUNT } else { 4 };
        let count = 1 + rng.below(u64::from(most)) as u8;
        let mut v = if rng.one_in(2) {
            read_request(address, count)
        } else {
            write_request(address, &(0..count).map(|_| rng.next() as u32).collect::<Vec<_>>())
        };
        match rng.below(12) {
            0 => {
                let i = 1 + rng.below(v.len() as u64 - 1) as usize;
                v[i] ^= 1 << rng.below(8);
            }
            1 => v.truncate(1 + rng.below(v.len() as u64 - 1) as usize),
            2 => v[1] = [0x00, 0x03, 0x81, REQUEST_SYNC][rng.below(4) as usize],
            3 => v[4] = [0, MAX_COUNT + 1, 0x80, 0xFF][rng.below(4) as usize],
            _ => {}
        }
        v
    }

    /// What the parser said in a cycle with `done` up.
    #[derive(Debug, PartialEq)]
    struct Verdict {
        cycle: u64,
        status: u8,
        accepted: bool,
    }

    struct Bench {
        uut: RequestParser,
        cycle: u64,
    }

    impl Bench {
        /// One clock cycle with these inputs; the verdict if `done` was up.
        fn cycle(&mut self, byte: Option<u8>, line_error: bool, answered: bool) -> Option<Verdict> {
            let b = &mut self.uut;
            b.rx_valid.next = byte.is_some();
            b.rx_byte.next = u64::from(byte.unwrap_or(0)).into();
            b.line_error.next = line_error;
            b.answered.next = answered;
            crate::step::settle(b);
            let v = b.done.val().then(|| Verdict {
                cycle: self.cycle,
                status: b.status.val().index() as u8,
                accepted: b.accepted.val(),
            });
            assert!(!b.accepted.val() || b.done.val(), "cycle {}: accepted without done", self.cycle);
            tick!(b);
            self.cycle += 1;
            v
        }

        /// `n` cycles of a quiet line; the verdicts.
        fn quiet(&mut self, n: u64) -> Vec<Verdict> {
            (0..n).filter_map(|_| self.cycle(None, false, false)).collect()
        }
    }

    /// Requests of every kind, their bytes 4..=timeout + 1 cycles apart with low stop bits
    /// between them, ignored bytes before SYNC, and bytes while the verdict is answered: one
    /// verdict each, the model's, in the cycle the contract says, with the request held.
    #[test]
    fn one_verdict_per_request_as_the_model() {
        let range =
            RegisterRange::new(COUNTERS as usize).with_stragglers(STRAGGLERS as usize).with_jobs(2).with_eaps(true);
        let mut b = Bench { uut: RequestParser::new(TIMEOUT as u32, range), cycle: 0 };
        b.uut.connect_all();
        let mut rng = Rng(0x9a55_e7e7);
        let mut seen = [0usize; 6];
        for case in 0..600 {
            // Bytes other than SYNC before a request are ignored.
            for _ in 0..rng.below(3) {
                assert_eq!(b.quiet(3 + rng.below(60)), vec![], "case {case}: idle");
                let junk = match rng.next() as u8 {
                    REQUEST_SYNC => 0,
                    x => x,
                };
                assert_eq!(b.cycle(Some(junk), false, false), None, "case {case}: idle");
            }
            assert_eq!(b.quiet(3 + rng.below(20)), vec![], "case {case}: idle");
            let frame = request(&mut rng);
            let (status, whole) = model(&frame);
            seen[status as usize] += 1;
            let (mut verdicts, mut byte_cycles, mut error_cycles) = (vec![], vec![], vec![]);
            for (i, &byte) in frame.iter().enumerate() {
                if i > 0 {
                    let gap = if rng.one_in(8) { TIMEOUT } else { 3 + rng.below(8) };
                    let error_at = rng.one_in(10).then(|| rng.below(gap));
                    for g in 0..gap {
                        if error_at == Some(g) {
                            error_cycles.push(b.cycle);
                        }
                        verdicts.extend(b.cycle(None, error_at == Some(g), false));
                    }
                }
                byte_cycles.push(b.cycle);
                verdicts.extend(b.cycle(Some(byte), false, false));
            }
            let at = match whole {
                Some(len) => {
                    verdicts.extend(b.quiet(1));
                    byte_cycles[len - 1] + 1
                }
                None => {
                    if rng.one_in(4) {
                        // A low stop bit after the last byte: the line was not quiet.
                        verdicts.extend(b.quiet(1 + rng.below(TIMEOUT)));
                        error_cycles.push(b.cycle);
                        verdicts.extend(b.cycle(None, true, false));
                    }
                    verdicts.extend(b.quiet(TIMEOUT + 1));
                    // A frame times out once the line has been quiet for `timeout` cycles and
                    // no byte comes in the next; a discarded one (the header read) ends then
                    // whatever comes.
                    let discard = status != Status::Timeout;
                    let quiet_before = |x: u64| {
                        !byte_cycles.iter().chain(&error_cycles).any(|&e| e + TIMEOUT >= x && e < x)
                            && (discard || !byte_cycles.contains(&x))
                    };
                    let from = if discard { byte_cycles[4] } else { byte_cycles[0] };
                    (from + 1..).find(|&x| quiet_before(x)).unwrap()
                }
            };
            let want = Verdict { cycle: at, status: status as u8, accepted: status == Status::Ok };
            assert_eq!(verdicts, vec![want], "case {case}: {frame:02x?}");
            // The request held, and the words of an accepted write.
            if whole.is_some() {
                let u = &b.uut;
                let count = frame[4];
                assert_eq!(u.address.val().index() as u16, u16::from_be_bytes([frame[2], frame[3]]), "case {case}");
                assert_eq!((u.count.val().index() as u8, u.last_index.val().index() as u8), (count, count - 1));
                assert_eq!(u.write.val(), frame[1] == OP_WRITE, "case {case}");
                assert_eq!(u.snapshot.val(), frame[1] == OP_READ && frame[2..4] == [0x02, 0x00], "case {case}");
            }
            if let (Ok((Request::Write { words, .. }, _)), Status::Ok) = (parse_request(&frame), status) {
                for (i, &w) in words.iter().enumerate() {
                    b.uut.data_address.next = (i as u64).into();
                    assert_eq!(b.quiet(1), vec![]);
                    assert_eq!(b.uut.data_word.val().index() as u32, w, "case {case}: word {i}");
                }
            }
            // Bytes until `answered` (a whole request among them) are dropped, and so is a byte
            // in the cycle of `answered`.
            let extra = if rng.one_in(2) { read_request(0x0000, 1) } else { vec![rng.next() as u8; 3] };
            for &byte in &extra {
                assert_eq!(b.quiet(3 + rng.below(8)), vec![], "case {case}: answering");
                assert_eq!(b.cycle(Some(byte), false, false), None, "case {case}: answering");
            }
            assert_eq!(b.quiet(3), vec![], "case {case}: answering");
            let sync = rng.one_in(2).then_some(REQUEST_SYNC);
            assert_eq!(b.cycle(sync, false, true), None, "case {case}: answered");
        }
        assert!(seen.iter().all(|&n| n >= 15), "every status exercised: {seen:?}");
    }
}
