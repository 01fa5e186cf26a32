//! The control link's wire protocol: one definition for the driver ([`super::Control`]), the
//! hardware (`spotagg_hdl::control_link`) and the tests.
//!
//! A host sends one request and waits for its response; the board never speaks unasked.
//! Every field is big-endian; the checksum is CRC-16/CCITT-FALSE (polynomial 0x1021, initial
//! value 0xFFFF, no reflection, no final XOR) over every byte after SYNC and before the CRC.
//!
//! Request:
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 1 | SYNC = 0xA5 |
//! | 1 | 1 | opcode: 0x01 read, 0x02 write |
//! | 2 | 2 | first register address |
//! | 4 | 1 | count of 32-bit registers, 1..=[`MAX_COUNT`] (consecutive addresses) |
//! | 5 | 4·count | data words (write only) |
//! | end−2 | 2 | CRC-16 over offsets 1..end−2 |
//!
//! Response:
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 1 | SYNC = 0x5A |
//! | 1 | 1 | [`Status`] |
//! | 2 | 1 | count of data words that follow (the request's count for an ok read, else 0) |
//! | 3 | 4·count | data words |
//! | end−2 | 2 | CRC-16 over offsets 1..end−2 |
//!
//! Guarantees of the hardware side: bytes outside a frame that are not SYNC are ignored; a
//! frame is acted on only when it is whole, its CRC matches and every register it names exists
//! for that access, so a bad or partial frame changes nothing and is answered with an error:
//! a bad CRC with [`Status::BadChecksum`]; an opcode other than read/write with
//! [`Status::BadOpcode`], and a count of 0 or above [`MAX_COUNT`] with [`Status::BadLength`],
//! both once the line has been quiet for the frame timeout; a register range that leaves a
//! region, or a read of a write-only / write of a read-only register, with
//! [`Status::UnknownRegister`]; a frame that stops for more than the frame timeout
//! ([`FRAME_TIMEOUT_BITS`] bit times without a byte) with [`Status::Timeout`].
//!
//! Register map (address: access, meaning). All registers are 32 bits.
//!
//! | address | access | register |
//! |---|---|---|
//! | 0x0000 | R | magic 0x5350_4147 ("SPAG") |
//! | 0x0001 | R | board id ([`BoardId`]) |
//! | 0x0002 | R | design version: major << 16 \| minor << 8 \| patch |
//! | 0x0003 | R | git hash, first 32 bits (0 when unknown) |
//! | 0x0004 | R | build date, days since 1970-01-01 (0 when unknown) |
//! | 0x0005 | R | build parameter: stream width in bytes |
//! | 0x0006 | R | build parameter: slots |
//! | 0x0007 | R | build parameter: max payload bytes |
//! | 0x0008 | R | build parameter: max workers |
//! | 0x0009 | R | UART clocks per bit (baud divisor) |
//! | 0x000A | R | number of counter registers C (24: the core's only; 46: a board's, with its MAC counters) |
//! | 0x0100 | RW | switch MAC bytes 0..2 (low 16 bits) — core register 0x00 |
//! | 0x0101 | RW | switch MAC bytes 2..6 — core register 0x01 |
//! | 0x0102 | RW | switch IPv4 — core register 0x02 |
//! | 0x0103 | RW | number of workers n — core register 0x03 |
//! | 0x0104 | RW | payload size code (0..=3) — core register 0x04 |
//! | 0x0105 | RW | slots in use S — core register 0x05 |
//! | 0x0106 | RW | control: write bit 0 = enable the job (clears slot state), bit 1 = clear counters; reads bit 0 = a job was enabled and no job register written since |
//! | 0x0107 | RW | VLAN: 0 for an untagged job, else the TCI of the frames the switch sends (PCP << 13 \| VID; VID 1..=4094, DEI 0), and frames are taken only with that VID — core register 0x07 |
//! | 0x0108 | RW | `worker_port`: the UDP source port of the job's workers (low 16 bits; 0xBEE0 after reset), docs/switch.md §1 7.5 — core register 0x08 |
//! | 0x0109 | RW | `job_number` (low 8 bits): the session epoch after the job is enabled, docs/switch.md §2.1 — core register 0x09 |
//! | 0x010A | W | tree (docs/switch.md §6): the parent switch's IPv4 `PI` — core register 0x0A |
//! | 0x010B | W | the parent's MAC bytes 0..2 (low 16 bits) — core register 0x0B |
//! | 0x010C | W | the parent's MAC bytes 2..6 — core register 0x0C |
//! | 0x010D | W | bit 31: the job has a parent; bits 20..16: this switch's rank in the parent's job; bits 15..0: the parent's UDP port `PP` (0 = no parent) — core register 0x0D |
//! | 0x0180 + 4r | W | worker r's IPv4 — core register 0x80 + 4r |
//! | 0x0181 + 4r | W | worker r's MAC bytes 0..2 — core register 0x81 + 4r |
//! | 0x0182 + 4r | W | worker r's MAC bytes 2..6 — core register 0x82 + 4r |
//! | 0x0200 + i | R | core counter i, i < 24 (32-bit, wraps): `Counters` fields in order, then drops in `DropReason` order; on a board (C = 46) 0x0218..=0x021B also hold the core's tree counters (partials up, resent, parent results, stale; docs/switch.md §6), not yet read by the driver |
//! | 0x0220 + 8p + j | R | board counter j of port p (p 0..=1, j 0..=5): good frames, bad FCS, runts, giants, dropped for lack of room, frames sent; present when C = 46 |
//! | 0x0226 | R | board counter: frames sent to both ports (group destination or unknown MAC); present when C = 46 |
//! | 0x0300 + p | R | link state of port p (0..=3): 0 unknown (no PHY answers, or no MDIO), 1 down, 2 up 10M, 3 up 100M, 4 up 1G, from each PHY's registers over MDIO |
//! | 0x0400 | R | status: bit 0 = core idle (nothing in flight); bit 1 = the last counter snapshot was not quiescent (the core did not become idle within 2^16 cycles) |
//! | 0x0401 | R | slot usage: slots in use, S clamped to the built slot count |
//! | 0x0402 | R | uptime in clock cycles (32-bit, wraps) |
//! | 0x0600 + 4r + j | R | straggler counters of rank r from the last counter snapshot (j = 0 rounds last, 1 lag total, 2 lag max, in core clock cycles; 3 reads 0), r below max workers; only in a core built with them (else unknown register) |
//!
//! The worker table is write-only (it lives in the core's block RAMs); reading it answers
//! [`Status::UnknownRegister`].
//!
//! Counter snapshot: the counter region (0x0200 up to 0x0200 + C − 1) is read from a shadow
//! copy. A read request whose first register is 0x0200 refreshes the whole shadow before it
//! is answered: the board holds its core's input at the next frame boundary, waits until the
//! core has nothing in flight, copies every counter (C consecutive clock cycles), and lets
//! traffic go on. All C counters of one snapshot therefore describe the same set of processed
//! frames (the MAC counters are sampled in the same cycles; frames still in a receive FIFO
//! are counted by the MAC and not yet by the core). Reads starting elsewhere in the region
//! return the last snapshot unchanged, so a snapshot larger than [`MAX_COUNT`] registers is
//! one request at 0x0200 followed by requests at 0x0220 and on. Writing bit 1 of the control
//! register zeroes the core's counters, not the MAC counters (they count from power-up).

use std::fmt;

/// First byte of a request.
pub const REQUEST_SYNC: u8 = 0xA5;
/// First byte of a response.
pub const RESPONSE_SYNC: u8 = 0x5A;
/// Read opcode.
pub const OP_READ: u8 = 0x01;
/// Write opcode.
pub const OP_WRITE: u8 = 0x02;
/// Most registers in one request.
pub const MAX_COUNT: u8 = 32;
/// Bit times of silence inside a frame after which the board answers [`Status::Timeout`].
pub const FRAME_TIMEOUT_BITS: u32 = 40;
/// Magic value of register [`reg::MAGIC`].
pub const MAGIC: u32 = 0x5350_4147;

/// Register addresses.
pub mod reg {
    /// Magic.
    pub const MAGIC: u16 = 0x0000;
    /// Board id.
    pub const BOARD_ID: u16 = 0x0001;
    /// Design version.
    pub const VERSION: u16 = 0x0002;
    /// Git hash.
    pub const GIT_HASH: u16 = 0x0003;
    /// Build date.
    pub const BUILD_DATE: u16 = 0x0004;
    /// Stream width.
    pub const WIDTH: u16 = 0x0005;
    /// Built slots.
    pub const SLOTS: u16 = 0x0006;
    /// Max payload.
    pub const MAX_PAYLOAD: u16 = 0x0007;
    /// Max workers.
    pub const MAX_WORKERS: u16 = 0x0008;
    /// Baud divisor.
    pub const BAUD_DIVISOR: u16 = 0x0009;
    /// Number of counter registers C.
    pub const COUNTER_REGISTERS: u16 = 0x000A;
    /// Number of identity registers.
    pub const IDENTITY_COUNT: u8 = 11;
    /// Switch MAC bytes 0..2.
    pub const SWITCH_MAC_HI: u16 = 0x0100;
    /// Switch MAC bytes 2..6.
    pub const SWITCH_MAC_LO: u16 = 0x0101;
    /// Switch IPv4.
    pub const SWITCH_IP: u16 = 0x0102;
    /// n.
    pub const WORKERS: u16 = 0x0103;
    /// Payload size code.
    pub const SIZE_CODE: u16 = 0x0104;
    /// Slots in use.
    pub const SLOTS_IN_USE: u16 = 0x0105;
    /// Control.
    pub const CONTROL: u16 = 0x0106;
    /// The job's VLAN (TCI of the frames sent, 0 for an untagged job).
    pub const VLAN: u16 = 0x0107;
    /// The workers' UDP source port (`worker_port`).
    pub const WORKER_PORT: u16 = 0x0108;
    /// The job's `job_number` (the session epoch after the job is enabled).
    pub const JOB_NUMBER: u16 = 0x0109;
    /// Tree (docs/switch.md §6): the parent's IPv4 address (write-only).
    pub const PARENT_IP: u16 = 0x010A;
    /// The parent's MAC bytes 0..2.
    pub const PARENT_MAC_HI: u16 = 0x010B;
    /// The parent's MAC bytes 2..6.
    pub const PARENT_MAC_LO: u16 = 0x010C;
    /// Bit 31 enable, bits 20..16 the rank in the parent's job, bits 15..0 the parent's port.
    pub const PARENT_CONTROL: u16 = 0x010D;
    /// Several jobs (docs/switch.md §8, a board built with more than one): the job select,
    /// write only and alone. Writing j sends the job registers' and the worker table's writes
    /// after it to job j, and the counter snapshot and the straggler counters read job j's
    /// (0 after power-up).
    pub const JOB_SELECT: u16 = 0x010F;
    /// Counter register of the switch's `unknown_source_job` on a board of several jobs:
    /// SwitchML frames of no job's (source address, source port), dropped (0 with one job).
    pub const UNKNOWN_SOURCE_JOB: u16 = 0x021C;
    /// Counter register of the core's `ip_checksum_zero` (docs/switch.md §1 6.4): frames taken
    /// with an IPv4 checksum of 0 (0 on a board built before zero checksums).
    pub const IP_CHECKSUM_ZERO: u16 = 0x021D;
    /// Worker table base.
    pub const WORKER_TABLE: u16 = 0x0180;
    /// First counter.
    pub const COUNTERS: u16 = 0x0200;
    /// Number of core counters.
    pub const COUNTER_COUNT: u8 = crate::counters::Counters::WORDS as u8;
    /// First board (MAC) counter: port p's counter j at `BOARD_COUNTERS + 8p + j`.
    pub const BOARD_COUNTERS: u16 = 0x0220;
    /// Board counters per port.
    pub const PORT_COUNTERS: u8 = 6;
    /// Frames sent to both ports.
    pub const FLOODED: u16 = 0x0226;
    /// Counter registers of a board with two MAC ports (C).
    pub const BOARD_COUNTER_COUNT: u8 = 46;
    /// Link state of port 0.
    pub const LINK_STATE: u16 = 0x0300;
    /// Number of link state registers.
    pub const LINK_PORTS: u8 = 4;
    /// Status.
    pub const STATUS: u16 = 0x0400;
    /// Slot usage.
    pub const SLOT_USAGE: u16 = 0x0401;
    /// Uptime.
    pub const UPTIME: u16 = 0x0402;
    /// The straggler counters of rank r at `STRAGGLERS + 4·r + j` (j = 0 rounds last, 1 lag
    /// total, 2 lag max, in core clock cycles), from the last counter snapshot; only in a core
    /// built with them.
    pub const STRAGGLERS: u16 = 0x0600;
    /// EAPS configuration (docs/control.md, docs/eaps.md §12): domain d's register r at
    /// `EAPS_CONFIG + 16·d + r` ([`super::eaps`] gives r), the node's enable at
    /// `EAPS_CONFIG + 0xF0`; write only, on a board built with EAPS.
    pub const EAPS_CONFIG: u16 = 0x0700;
    /// EAPS node status (read only): status word a of the node (`spotagg_hdl::eaps_node`'s
    /// map: domain d at 16·d + 0..=13, the node's at 0xF0..=0xF3) at `EAPS_STATUS + a`.
    pub const EAPS_STATUS: u16 = 0x0800;
    /// Registers per rank in the straggler region (the fourth reads 0).
    pub const STRAGGLER_WORDS_PER_RANK: u8 = 4;
}

/// Board ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoardId(pub u32);

impl BoardId {
    /// A simulation without a board.
    pub const SIMULATION: BoardId = BoardId(0);
    /// Colorlight 5A-75B v8.0.
    pub const COLORLIGHT_5A_75B_V8: BoardId = BoardId(0x5a75);
    /// Colorlight i5 v7.0.
    pub const COLORLIGHT_I5_V7: BoardId = BoardId(0x0015);
    /// Colorlight i9 v7.2.
    pub const COLORLIGHT_I9: BoardId = BoardId(0x0019);
    /// The name of a known id (the board's `--board` identifier).
    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "simulation",
            0x5a75 => "colorlight-5a-75b-v8",
            0x0015 => "colorlight-i5-v7",
            0x0019 => "colorlight-i9",
            _ => "unknown",
        }
    }
}

/// Response status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Done.
    Ok = 0,
    /// The request's CRC did not match.
    BadChecksum = 1,
    /// Count 0 or above [`MAX_COUNT`].
    BadLength = 2,
    /// A register does not exist for this access.
    UnknownRegister = 3,
    /// The request stopped before its end.
    Timeout = 4,
    /// Opcode neither read nor write.
    BadOpcode = 5,
}

impl Status {
    /// The status of a byte.
    pub fn from_byte(b: u8) -> Option<Status> {
        Some(match b {
            0 => Status::Ok,
            1 => Status::BadChecksum,
            2 => Status::BadLength,
            3 => Status::UnknownRegister,
            4 => Status::Timeout,
            5 => Status::BadOpcode,
            _ => return None,
        })
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::BadChecksum => "bad checksum",
            Status::BadLength => "bad length",
            Status::UnknownRegister => "unknown register",
            Status::Timeout => "timeout (partial frame)",
            Status::BadOpcode => "bad opcode",
        })
    }
}

/// CRC-16/CCITT-FALSE of `bytes` continuing from `crc` (start with 0xFFFF).
pub fn crc16_update(mut crc: u16, bytes: &[u8]) -> u16 {
    for &b in bytes {
        // The byte-wise form the hardware uses too.
        let mut x = ((crc >> 8) as u8) ^ b;
        x ^= x >> 4;
        let x = u16::from(x);
        crc = (crc << 8) ^ (x << 12) ^ (x << 5) ^ x;
    }
    crc
}

/// CRC-16/CCITT-FALSE of `bytes`.
pub fn crc16(bytes: &[u8]) -> u16 {
    crc16_update(0xFFFF, bytes)
}

fn seal(mut v: Vec<u8>) -> Vec<u8> {
    let c = crc16(&v[1..]);
    v.extend_from_slice(&c.to_be_bytes());
    v
}

/// A read request of `count` registers from `address`.
pub fn read_request(address: u16, count: u8) -> Vec<u8> {
    let a = address.to_be_bytes();
    seal(vec![REQUEST_SYNC, OP_READ, a[0], a[1], count])
}

/// A write request of `words` to consecutive registers from `address`.
pub fn write_request(address: u16, words: &[u32]) -> Vec<u8> {
    let a = address.to_be_bytes();
    let mut v = vec![REQUEST_SYNC, OP_WRITE, a[0], a[1], words.len() as u8];
    for w in words {
        v.extend_from_slice(&w.to_be_bytes());
    }
    seal(v)
}

/// A response as the hardware sends it (for tests and software models).
pub fn response(status: Status, words: &[u32]) -> Vec<u8> {
    let mut v = vec![RESPONSE_SYNC, status as u8, words.len() as u8];
    for w in words {
        v.extend_from_slice(&w.to_be_bytes());
    }
    seal(v)
}

/// A request as the board takes it: what [`parse_request`] gives, [`Request::encode`] makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Read `count` registers from `address`.
    Read {
        /// First register.
        address: u16,
        /// Registers, 1..=[`MAX_COUNT`].
        count: u8,
    },
    /// Write `words` to consecutive registers from `address`.
    Write {
        /// First register.
        address: u16,
        /// The words, 1..=[`MAX_COUNT`] of them.
        words: Vec<u32>,
    },
}

impl Request {
    /// The request's bytes ([`read_request`] or [`write_request`]).
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Request::Read { address, count } => read_request(*address, *count),
            Request::Write { address, words } => write_request(*address, words),
        }
    }

    /// Its first register.
    pub fn address(&self) -> u16 {
        match self {
            Request::Read { address, .. } | Request::Write { address, .. } => *address,
        }
    }

    /// The number of registers it names.
    pub fn count(&self) -> u8 {
        match self {
            Request::Read { count, .. } => *count,
            Request::Write { words, .. } => words.len() as u8,
        }
    }
}

/// Why the bytes at the start of a buffer are not (yet) a request. Each but [`Incomplete`]
/// is answered with the [`Status`] of the same name ([`RequestError::status`]).
///
/// [`Incomplete`]: RequestError::Incomplete
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestError {
    /// More bytes are needed (a frame cut short by a quiet line is answered [`Status::Timeout`]).
    Incomplete,
    /// The opcode is neither read nor write; the frame's length is unknown.
    BadOpcode,
    /// The count is 0 or above [`MAX_COUNT`]; the frame's length is unknown.
    BadLength,
    /// The frame is whole and its CRC does not match.
    BadChecksum,
}

impl RequestError {
    /// The status of the answer, `None` for [`RequestError::Incomplete`].
    pub fn status(self) -> Option<Status> {
        match self {
            RequestError::Incomplete => None,
            RequestError::BadOpcode => Some(Status::BadOpcode),
            RequestError::BadLength => Some(Status::BadLength),
            RequestError::BadChecksum => Some(Status::BadChecksum),
        }
    }
}

/// Parses one request at the start of `buf` (which begins with [`REQUEST_SYNC`]) in the
/// board's order: nothing is judged before the whole header (opcode, address, count) is
/// there; then the opcode, then the count, then, once the frame is whole, its CRC. Returns the
/// request and the bytes it took. Whether the registers it names exist is the register map's
/// matter ([`Status::UnknownRegister`]), not the frame's.
pub fn parse_request(buf: &[u8]) -> Result<(Request, usize), RequestError> {
    if buf.len() < 5 {
        return Err(RequestError::Incomplete);
    }
    let (op, address, count) = (buf[1], u16::from_be_bytes([buf[2], buf[3]]), buf[4]);
    if op != OP_READ && op != OP_WRITE {
        return Err(RequestError::BadOpcode);
    }
    if count == 0 || count > MAX_COUNT {
        return Err(RequestError::BadLength);
    }
    let data = if op == OP_WRITE { 4 * usize::from(count) } else { 0 };
    let len = 5 + data + 2;
    if buf.len() < len {
        return Err(RequestError::Incomplete);
    }
    if crc16(&buf[1..len - 2]) != u16::from_be_bytes([buf[len - 2], buf[len - 1]]) {
        return Err(RequestError::BadChecksum);
    }
    let request = if op == OP_READ {
        Request::Read { address, count }
    } else {
        let words = buf[5..5 + data].chunks(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]])).collect();
        Request::Write { address, words }
    };
    Ok((request, len))
}

/// Why a response could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// More bytes are needed.
    Incomplete,
    /// The bytes are not a response.
    Malformed(String),
}

/// A parsed response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Status.
    pub status: Status,
    /// Data words.
    pub words: Vec<u32>,
}

/// Parses one response at the start of `buf` (which begins with [`RESPONSE_SYNC`]); returns it
/// and the number of bytes it took.
pub fn parse_response(buf: &[u8]) -> Result<(Response, usize), ParseError> {
    if buf.is_empty() {
        return Err(ParseError::Incomplete);
    }
    if buf[0] != RESPONSE_SYNC {
        return Err(ParseError::Malformed(format!(
            "response starts with 0x{:02x}, not SYNC 0x{RESPONSE_SYNC:02x}",
            buf[0]
        )));
    }
    if buf.len() < 3 {
        return Err(ParseError::Incomplete);
    }
    let count = usize::from(buf[2]);
    if count > usize::from(MAX_COUNT) {
        return Err(ParseError::Malformed(format!("response count {count} above {MAX_COUNT}")));
    }
    let len = 3 + 4 * count + 2;
    if buf.len() < len {
        return Err(ParseError::Incomplete);
    }
    let crc = u16::from_be_bytes([buf[len - 2], buf[len - 1]]);
    let want = crc16(&buf[1..len - 2]);
    if crc != want {
        return Err(ParseError::Malformed(format!("response CRC 0x{crc:04x}, computed 0x{want:04x}")));
    }
    let status =
        Status::from_byte(buf[1]).ok_or_else(|| ParseError::Malformed(format!("unknown status 0x{:02x}", buf[1])))?;
    let words = buf[3..len - 2].chunks(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]])).collect();
    Ok((Response { status, words }, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_check_value() {
        // The catalogue check value of CRC-16/CCITT-FALSE.
        assert_eq!(crc16(b"123456789"), 0x29B1);
    }

    #[test]
    fn read_request_bytes() {
        let r = read_request(0x0200, 21);
        assert_eq!(&r[..5], &[0xA5, 0x01, 0x02, 0x00, 0x15]);
        assert_eq!(r.len(), 7);
        assert_eq!(u16::from_be_bytes([r[5], r[6]]), crc16(&[0x01, 0x02, 0x00, 0x15]));
    }

    #[test]
    fn write_request_bytes() {
        let r = write_request(0x0103, &[4, 0x0102_0304]);
        assert_eq!(&r[..13], &[0xA5, 0x02, 0x01, 0x03, 0x02, 0, 0, 0, 4, 0x01, 0x02, 0x03, 0x04]);
        assert_eq!(r.len(), 15);
    }

    #[test]
    fn response_round_trip_and_literal() {
        let r = response(Status::Ok, &[MAGIC]);
        assert_eq!(&r[..7], &[0x5A, 0x00, 0x01, 0x53, 0x50, 0x41, 0x47]);
        let (p, n) = parse_response(&r).unwrap();
        assert_eq!(n, r.len());
        assert_eq!(p, Response { status: Status::Ok, words: vec![MAGIC] });
        let e = response(Status::BadChecksum, &[]);
        assert_eq!(e.len(), 5);
        assert_eq!(&e[..3], &[0x5A, 0x01, 0x00]);
        assert_eq!(parse_response(&e).unwrap().0.status, Status::BadChecksum);
    }

    #[test]
    fn requests_parsed_in_the_boards_order() {
        let w = write_request(0x0103, &[4, 0x0102_0304]);
        let want = Request::Write { address: 0x0103, words: vec![4, 0x0102_0304] };
        assert_eq!(parse_request(&w), Ok((want.clone(), 15)));
        assert_eq!(want.encode(), w);
        let mut longer = read_request(0x0200, 21);
        longer.extend_from_slice(&[0xA5, 0x01]);
        assert_eq!(parse_request(&longer), Ok((Request::Read { address: 0x0200, count: 21 }, 7)));
        for cut in 0..w.len() {
            assert_eq!(parse_request(&w[..cut]), Err(RequestError::Incomplete), "cut at {cut}");
        }
        // The opcode first, then the count, each only once the header is whole.
        assert_eq!(parse_request(&[0xA5, 0x07, 0x00, 0x00]), Err(RequestError::Incomplete));
        assert_eq!(parse_request(&[0xA5, 0x07, 0x00, 0x00, 0x00]), Err(RequestError::BadOpcode));
        assert_eq!(parse_request(&[0xA5, 0x01, 0x00, 0x00, 0x00]), Err(RequestError::BadLength));
        assert_eq!(parse_request(&[0xA5, 0x02, 0x00, 0x00, 0x21]), Err(RequestError::BadLength));
        let mut bad = w.clone();
        bad[8] ^= 1;
        assert_eq!(parse_request(&bad), Err(RequestError::BadChecksum));
        assert_eq!(RequestError::BadChecksum.status(), Some(Status::BadChecksum));
        assert_eq!(RequestError::Incomplete.status(), None);
    }

    #[test]
    fn partial_and_corrupt_responses() {
        let r = response(Status::Ok, &[1, 2]);
        for cut in 0..r.len() {
            assert_eq!(parse_response(&r[..cut]), Err(ParseError::Incomplete), "cut at {cut}");
        }
        let mut bad = r.clone();
        bad[4] ^= 0x10;
        assert!(matches!(parse_response(&bad), Err(ParseError::Malformed(_))));
    }
}

/// The EAPS configuration registers of a domain (at `reg::EAPS_CONFIG + 16·d + r`) and how
/// a domain's settings are written into them.
pub mod eaps {
    /// Bit 0 the domain exists, bit 1 master (else transit), bit 2 primary port 1 (else 0),
    /// bit 3 fail action send-alert (else open-secondary).
    pub const FLAGS: u16 = 0;
    /// Control VLAN (bits 11..0).
    pub const CONTROL_VLAN: u16 = 1;
    /// Protected VLANs, one range: first in bits 11..0, last in bits 27..16 (empty: first >
    /// last).
    pub const PROTECTED: u16 = 2;
    /// Hello period in the node's time units (1 µs on the board).
    pub const HELLO: u16 = 3;
    /// Fail period.
    pub const FAIL: u16 = 4;
    /// Pre-forwarding period.
    pub const PRE_FORWARDING: u16 = 5;
    /// The PDUs' hello timer field (ms, bits 15..0) and fail timer field (bits 31..16).
    pub const TIMER_FIELDS: u16 = 6;
    /// Registers per domain.
    pub const DOMAIN_STRIDE: u16 = 16;
    /// The node's enable (bit 0), after the domains' registers: written last.
    pub const ENABLE: u16 = 0xF0;
    /// Most domains a board is built with.
    pub const MAX_DOMAINS: usize = 15;
    /// Domains of the board as `spotagg build` makes it (`SwitchFabric`'s default `D`).
    pub const BOARD_DOMAINS: usize = 2;

    /// One domain as the hardware node takes it (periods in its time unit).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct DomainSettings {
        /// Master (else transit).
        pub master: bool,
        /// The primary port is port 1 (else port 0).
        pub primary_port1: bool,
        /// Fail action send-alert (else open-secondary).
        pub send_alert: bool,
        /// Control VLAN.
        pub control_vlan: u16,
        /// Protected VLANs, first and last (first > last: none).
        pub protected: (u16, u16),
        /// Hello period, time units.
        pub hello: u32,
        /// Fail period.
        pub fail: u32,
        /// Pre-forwarding period.
        pub pre_forwarding: u32,
        /// The PDUs' hello timer field (ms).
        pub hello_field: u16,
        /// Their fail timer field (ms).
        pub fail_field: u16,
    }

    impl DomainSettings {
        /// The seven register words, [`FLAGS`] first.
        pub fn words(&self) -> [u32; 7] {
            [
                1 | (u32::from(self.master) << 1)
                    | (u32::from(self.primary_port1) << 2)
                    | (u32::from(self.send_alert) << 3),
                u32::from(self.control_vlan & 0xfff),
                u32::from(self.protected.0 & 0xfff) | (u32::from(self.protected.1 & 0xfff) << 16),
                self.hello,
                self.fail,
                self.pre_forwarding,
                u32::from(self.hello_field) | (u32::from(self.fail_field) << 16),
            ]
        }
    }

    /// Status words per domain the node answers (at `reg::EAPS_STATUS + 16·d + w`, w < 14).
    pub const STATUS_WORDS: u16 = 14;
    /// The node's own status words at `reg::EAPS_STATUS + 0xF0..=0xF3`: EDP sequence, link
    /// state acted on | busy << 2, port 0 rejected | overruns << 16, port 1 the same.
    pub const NODE_STATUS: u16 = 0xF0;

    /// The state names of status word 0's low nibble (`spotagg_hdl::eaps_node::state_code`).
    pub const STATE_NAMES: [&str; 7] =
        ["Idle", "Init", "Complete", "Failed", "Links-Up", "Links-Down", "Pre-Forwarding"];

    /// The causes of status word 6 (`spotagg_hdl::eaps_node::cause`).
    pub const CAUSE_NAMES: [&str; 11] = [
        "none",
        "enabled",
        "health returned",
        "LINK-DOWN PDU",
        "port 0 down",
        "port 1 down",
        "port 0 up",
        "port 1 up",
        "fail timer",
        "RING-UP-FLUSH-FDB",
        "HEALTH-Complete",
    ];

    /// The register writes (address, value) that configure `domains` (slot d: domain d, `None`
    /// cleared) and then set the node's enable: every domain's registers first, the enable
    /// last (the node reads its configuration as it is enabled).
    pub fn writes(domains: &[Option<DomainSettings>], enable: bool) -> Vec<(u16, u32)> {
        assert!(domains.len() <= MAX_DOMAINS, "{} EAPS domains: at most {MAX_DOMAINS}", domains.len());
        let mut w = vec![(super::reg::EAPS_CONFIG + ENABLE, 0)];
        for (d, s) in domains.iter().enumerate() {
            let base = super::reg::EAPS_CONFIG + DOMAIN_STRIDE * d as u16;
            match s {
                Some(s) => w.extend(s.words().iter().enumerate().map(|(r, &v)| (base + r as u16, v))),
                None => w.push((base + FLAGS, 0)),
            }
        }
        if enable {
            w.push((super::reg::EAPS_CONFIG + ENABLE, 1));
        }
        w
    }

    #[cfg(test)]
    mod test {
        use super::*;

        #[test]
        fn domain_words_and_write_order() {
            let s = DomainSettings {
                master: true,
                primary_port1: false,
                send_alert: true,
                control_vlan: 4000,
                protected: (100, 199),
                hello: 1_000_000,
                fail: 3_000_000,
                pre_forwarding: 6_000_000,
                hello_field: 1000,
                fail_field: 3000,
            };
            assert_eq!(
                s.words(),
                [0b1011, 4000, 100 | (199 << 16), 1_000_000, 3_000_000, 6_000_000, 1000 | (3000 << 16)]
            );
            let w = writes(&[None, Some(s)], true);
            assert_eq!(w[0], (0x07F0, 0));
            assert_eq!(w[1], (0x0700, 0));
            assert_eq!(w[2], (0x0710, 0b1011));
            assert_eq!(w[8], (0x0716, 1000 | (3000 << 16)));
            assert_eq!(w.last(), Some(&(0x07F0, 1)));
            assert_eq!(w.len(), 10);
        }
    }
}
