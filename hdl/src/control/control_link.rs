//! The control link, hardware side: a UART, the request parser of
//! `spotagg_driver::control::protocol` (frame layout, register map and status codes are
//! defined there, once), the core's configuration bus and counter read port, and the identity
//! registers fixed at build time.
//!
//! The link is five blocks, each with its own contract and unit test, wired together here:
//!
//! | block | does |
//! |---|---|
//! | [`request_parser::RequestParser`] | SYNC, header, the write's words into a 32-word buffer, the CRC, the quiet-line timeout and the skipping of unparseable frames; one verdict per request |
//! | [`register_writer::RegisterWriter`] | an accepted write applied one register a clock to the configuration bus or the EAPS port; the job registers read back |
//! | [`counter_snapshot::CounterSnapshot`] | `pause`, the wait for idle, the copy of the counters and the straggler scan into the shadow RAM |
//! | [`register_reader::RegisterReader`] | region decode and the two-stage read mux over the job registers, link state, status, the EAPS status port and the shadow RAM |
//! | [`responder::Responder`] | SYNC, status, count, data words and CRC-16 onto the UART |
//!
//! A verdict that accepts a write starts the writer; one that accepts a read of 0x0200 starts
//! the snapshot; every other verdict starts the response, as do the writer's and the
//! snapshot's ends. The parser takes the next request once the response's last byte is out.
//!
//! Guarantees: the core's configuration bus is driven only after a whole write request whose
//! CRC matched and whose every register exists and is writable, so a bad, partial or
//! misaddressed request changes nothing. Every request that starts with SYNC gets exactly
//! one response: ok, bad checksum, unknown register, or — once the line has been quiet for
//! `FRAME_TIMEOUT_BITS` bit times — timeout (a partial frame), bad opcode or bad length (the
//! length of such a frame is unknown, so the parser skips bytes until the line is quiet).
//! Bytes that arrive while a response is being sent are dropped.
//!
//! Timing: a write request is applied one register per clock cycle after its last CRC byte
//! (the core sees ordinary `cfg.write` strobes, the same as `spotagg_sim::rtl::configure`,
//! driven straight from registers), the first four cycles after the cycle its last CRC byte
//! arrives; the response starts in the cycle of the last write. A read samples each register just before its first
//! byte is sent. `uptime` counts clock cycles from power-up.
//!
//! Counter snapshot: a read whose first register is the first counter (0x0200) takes a
//! snapshot before it answers. The link raises `pause` (the core's owner holds the core's
//! input at the next frame boundary), waits until `core_idle` has been high for a cycle with
//! `pause` up (sampled through a register: the core's `idle` is combinational; the owner may
//! add one more, so the first sample used is from the third cycle of `pause`), then copies
//! every counter, one a cycle over the `counter` port (`address` / `data`) (address from
//! a register, data registered by the owner and again here, so a copy lands two cycles after
//! its address), into a shadow RAM, and drops `pause`. `pause` comes from a register. Since no frame enters or is in
//! flight while the copy runs, the counters in the shadow all describe the same set of
//! processed frames. Every read of the counter region answers from the shadow, so a
//! snapshot of more than [`protocol::MAX_COUNT`] counters is read with a request at 0x0200 followed by
//! requests further in the region. If the core does not become idle within 2^16 cycles (its
//! output held back), the copy is made anyway and status bit 1 says the snapshot was not
//! quiescent.
//!
//! Straggler counters: when the core has them (`CoreConfig::stragglers`), the snapshot goes on
//! after the counters: it copies the core's straggler scan (`straggler`: word `4·rank + j`, one a
//! cycle) into shadow words 128.. until it has written [`STRAGGLER_WORDS`] scan words (the scan
//! visits each once in as many consecutive words; with the core's input held no update
//! interrupts it), then drops `pause`. They are read at 0x0600 + 4·rank + j (j = 0 rounds last,
//! 1 the lag total, 2 the lag max, in cycles) from that snapshot; a core without them answers
//! unknown register there.

pub mod counter_snapshot;
pub mod register_reader;
pub mod register_writer;
pub mod request_parser;
pub mod responder;

use crate::config::CoreConfig;
use crate::config_registers::ConfigBusDriver;
use crate::counters::CounterPortDriver;
use crate::register_range::RegisterRange;
use crate::straggler::{StragglerReader, WORDS_PER_RANK};
use crate::uart::{UartRx, UartTx};
use counter_snapshot::{CounterSnapshot, ShadowWriter};
use register_reader::RegisterReader;
use register_writer::{JobReadbackSource, RegisterWriter};
use request_parser::{status_code, RequestParser};
use responder::Responder;
use rust_hdl::prelude::*;
use spotagg_driver::control::protocol::{self, Status, FRAME_TIMEOUT_BITS};
use spotagg_driver::control::{pack_version, DESIGN_VERSION};

/// Values of the identity registers, fixed at build time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlIdentity {
    /// Board id (`protocol::BoardId`).
    pub board_id: u32,
    /// Design version, packed (major << 16 | minor << 8 | patch).
    pub version: u32,
    /// First 32 bits of the git hash (0 unknown).
    pub git_hash: u32,
    /// Build date, days since 1970-01-01 (0 unknown).
    pub build_date_days: u32,
    /// UART clocks per bit.
    pub baud_divisor: u32,
}

/// What the build flow stamps into a build: the source's git hash and the build date. The HDL
/// does not find them out itself (`spotagg_boards::flow::source_stamp` does, for a build).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildStamp {
    /// First 32 bits of the git hash (0 unknown).
    pub git_hash: u32,
    /// Build date, days since 1970-01-01 (0 unknown).
    pub build_date_days: u32,
}

impl ControlIdentity {
    /// The identity of a build of this design ([`DESIGN_VERSION`]) for `board_id` at
    /// `baud_divisor`, with the flow's `build` stamp.
    pub fn stamp(board_id: u32, baud_divisor: u32, build: BuildStamp) -> ControlIdentity {
        ControlIdentity {
            board_id,
            version: pack_version(DESIGN_VERSION),
            git_hash: build.git_hash,
            build_date_days: build.build_date_days,
            baud_divisor,
        }
    }
}

interface_pair! {
    /// The EAPS node's registers as the control link drives them (docs/control.md: writes to
    /// 0x0700..=0x07FF, reads of 0x0800..=0x08FF on a link built `with_eaps`): a write is
    /// `write` high for a clock with the register's offset in the region (`address`, the low
    /// byte) and `data`; a read presents the node's status word address (`status_address`,
    /// from a register) and registers `status_data` a clock later.
    pub struct EapsRegisterPort join "EapsRegisterAccess";
    /// The node's owner's end of an [`EapsRegisterPort`].
    pub struct EapsRegisterAccess join "EapsRegisterPort";
    {
        /// Write an EAPS configuration register.
        write: Out Bit,
        /// Its offset in 0x0700..
        address: Out Bits<8>,
        /// Its data.
        data: Out Bits<32>,
        /// The status word to read (its offset in 0x0800..).
        status_address: Out Bits<8>,
        /// The status word (combinational is fine: the link registers it).
        status_data: In Bits<32>,
    }
}

/// The control link.
#[derive(LogicBlock)]
pub struct ControlLink {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Serial receive line (idle high).
    pub uart_rx: Signal<In, Bit>,
    /// Serial transmit line (idle high).
    pub uart_tx: Signal<Out, Bit>,
    /// The core's configuration bus.
    pub cfg: ConfigBusDriver,
    /// The counters: `address` 0..32 the core's, the board's own counters above; `data` is the
    /// counter `address` named one cycle earlier (the owner registers the core's combinational
    /// read, so no path runs from the link through the core and back).
    pub counter: CounterPortDriver<6>,
    /// The core has nothing in flight (directly or through one register of the owner's).
    pub core_idle: Signal<In, Bit>,
    /// Hold the core's input at the next frame boundary (a counter snapshot is being taken).
    pub pause: Signal<Out, Bit>,
    /// Link state of ports 0..=3, one byte each (port 0 in the low byte); 0 = unknown.
    pub link_state: Signal<In, Bits<32>>,
    /// The core's straggler counters, scanned (read only by a link built for a core with them).
    pub straggler: StragglerReader,
    /// The EAPS node's registers (used only by a link built `with_eaps`).
    pub eaps: EapsRegisterPort,
    rx: UartRx,
    parser: RequestParser,
    writer: RegisterWriter,
    snapshot: CounterSnapshot,
    reader: RegisterReader,
    responder: Responder,
    tx: UartTx,
    status_ok: Constant<Bits<8>>,
}

/// Counters of the core alone (`protocol::reg::COUNTER_COUNT`).
pub const CORE_COUNTERS: usize = protocol::reg::COUNTER_COUNT as usize;

/// Shadow RAM word of identity register 0 (the magic): the identity registers 0x0000..=0x000A
/// are the shadow's initial contents from this word on, above the counters (at most this many).
/// Being block RAM contents rather than constants in the read mux, the git hash and build date
/// leave the synthesized netlist unchanged: two builds of one design differ only in the RAM's
/// INITVAL, so they place and route alike.
pub const IDENTITY_BASE: usize = 0x30;

/// Shadow RAM word of straggler register 0x0600: the snapshot's copy of the straggler scan is
/// words `STRAGGLER_BASE + 4·rank + j`.
pub const STRAGGLER_BASE: usize = 0x80;

/// Straggler scan words a snapshot copies: every index of the scan, `4·rank + j` for the 32
/// ranks a core can have.
pub const STRAGGLER_WORDS: usize = 32 * WORDS_PER_RANK;

/// The identity registers 0x0000..=0x000A in order.
fn identity_words(core: &CoreConfig, identity: &ControlIdentity, counters: usize) -> [u32; 11] {
    [
        protocol::MAGIC,
        identity.board_id,
        identity.version,
        identity.git_hash,
        identity.build_date_days,
        core.width_bytes as u32,
        core.slots as u32,
        core.max_payload as u32,
        core.max_workers as u32,
        identity.baud_divisor,
        counters as u32,
    ]
}

impl ControlLink {
    /// A control link for a core built with `core`, answering `identity`, reading the core's
    /// [`CORE_COUNTERS`] counters, with every job register zero at power-up.
    pub fn new(core: &CoreConfig, identity: ControlIdentity) -> Self {
        Self::with_board(core, identity, CORE_COUNTERS, None)
    }

    /// The same link to a switch of `jobs` cores (1..=2, `crate::multi_core::MultiCore`): with
    /// more than one, the job select 0x010F (core register 0x0F) may be written, alone. The job
    /// registers read back the last values written, whichever job they went to.
    pub fn with_jobs(mut self, jobs: usize) -> Self {
        self.parser = self.parser.map_registers(|r| r.with_jobs(jobs));
        self
    }

    /// The same link with the EAPS regions (docs/control.md): configuration writes at
    /// 0x0700..=0x07FF and status reads at 0x0800..=0x08FF through `eaps`.
    pub fn with_eaps(mut self, eaps: bool) -> Self {
        self.parser = self.parser.map_registers(|r| r.with_eaps(eaps));
        self
    }

    /// A control link reading `counters` counters (indices 0..counters of the counter port,
    /// at most 64) whose job registers read `job` at power-up: the writes another master (the
    /// board's power-up loader) makes to core registers 0x00..=0x09 before the link is used,
    /// indexed by core register (entry 6, the control register, is not read back),
    /// and the job enabled. `None`: every job register zero, no job enabled.
    pub fn with_board(core: &CoreConfig, identity: ControlIdentity, counters: usize, job: Option<[u32; 10]>) -> Self {
        assert!(
            (1..=IDENTITY_BASE).contains(&counters),
            "{counters} counters: the shadow holds {IDENTITY_BASE} below the identity registers"
        );
        // The core's worker port reads 0xBEE0 after reset (config_registers).
        let mut power_up = [0; 10];
        power_up[8] = 0xBEE0;
        let d = identity.baud_divisor;
        let stragglers = if core.stragglers { WORDS_PER_RANK * core.max_workers } else { 0 };
        Self {
            clock: Default::default(),
            uart_rx: Default::default(),
            uart_tx: Default::default(),
            cfg: Default::default(),
            counter: Default::default(),
            core_idle: Default::default(),
            pause: Default::default(),
            link_state: Default::default(),
            straggler: Default::default(),
            eaps: Default::default(),
            rx: UartRx::new(d),
            parser: RequestParser::new(
                FRAME_TIMEOUT_BITS * d,
                RegisterRange::new(counters).with_stragglers(stragglers),
            ),
            writer: RegisterWriter::new(job.unwrap_or(power_up), job.is_some()),
            snapshot: CounterSnapshot::new(counters, core.stragglers),
            reader: RegisterReader::new(core.slots, &identity_words(core, &identity, counters)),
            responder: Default::default(),
            tx: UartTx::new(d),
            status_ok: status_code(Status::Ok),
        }
    }
}

impl Logic for ControlLink {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, rx, parser, writer, snapshot, reader, responder, tx);
        self.rx.line.next = self.uart_rx.val();
        self.uart_tx.next = self.tx.line.val();
        // Bytes into the parser; it takes the next request once the response is out.
        self.parser.rx_byte.next = self.rx.data.val();
        self.parser.rx_valid.next = self.rx.valid.val();
        self.parser.line_error.next = self.rx.frame_error.val();
        self.parser.answered.next = self.responder.done.val();

        // An accepted write: the writer, reading the request's words from the parser.
        self.writer.start.next = self.parser.accepted.val() & self.parser.write.val();
        self.writer.address.next = self.parser.address.val();
        self.writer.last_index.next = self.parser.last_index.val();
        self.parser.data_address.next = self.writer.data_address.val();
        self.writer.data_word.next = self.parser.data_word.val();
        ConfigBusDriver::link(&mut self.cfg, &mut self.writer.cfg);
        self.eaps.write.next = self.writer.eaps_write.val();
        self.eaps.address.next = self.writer.eaps_address.val();
        self.eaps.data.next = self.writer.eaps_data.val();

        // An accepted read of the first counter: the snapshot, into the reader's shadow RAM.
        self.snapshot.start.next = self.parser.accepted.val() & self.parser.snapshot.val();
        self.snapshot.core_idle.next = self.core_idle.val();
        self.pause.next = self.snapshot.pause.val();
        CounterPortDriver::<6>::link(&mut self.counter, &mut self.snapshot.counter);
        StragglerReader::link(&mut self.straggler, &mut self.snapshot.straggler);
        ShadowWriter::join(&mut self.snapshot.shadow, &mut self.reader.shadow);

        // The read path, at the responder's word.
        self.reader.address.next = self.parser.address.val();
        self.reader.word_index.next = self.responder.word_index.val();
        JobReadbackSource::join(&mut self.writer.job, &mut self.reader.job);
        self.reader.link_state.next = self.link_state.val();
        self.reader.core_idle.next = self.snapshot.idle_sampled.val();
        self.reader.snapshot_late.next = self.snapshot.late.val();
        self.eaps.status_address.next = self.reader.eaps_status_address.val();
        self.reader.eaps_status_data.next = self.eaps.status_data.val();

        // The response: at once for a verdict that is not carried out over several cycles (an
        // error, a plain read), else when the write or the snapshot is done.
        self.responder.start.next = (self.parser.done.val()
            & !(self.parser.accepted.val() & (self.parser.write.val() | self.parser.snapshot.val())))
            | self.writer.done.val()
            | self.snapshot.done.val();
        self.responder.status.next = self.status_ok.val();
        if self.parser.done.val() {
            self.responder.status.next = self.parser.status.val();
        }
        self.responder.count.next = 0.into();
        if (self.parser.accepted.val() & !self.parser.write.val()) | self.snapshot.done.val() {
            self.responder.count.next = self.parser.count.val();
        }
        self.responder.word_value.next = self.reader.value.val();
        self.tx.data.next = self.responder.tx_data.val();
        self.tx.start.next = self.responder.tx_start.val();
        self.responder.tx_busy.next = self.tx.busy.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::settle;
    use crate::uart::SerialModel;
    use spotagg_driver::control::protocol::{parse_response, read_request, write_request, Response, Status};

    const DIV: u32 = 4;

    struct Bench {
        uut: ControlLink,
        line: SerialModel,
        writes: Vec<(u8, u32)>,
        cycles: u64,
        paused: u64,
        was_paused: bool,
        snapshots: u64,
        counter_reg: u64,
        /// The fake straggler scan's next index, and its cycle count (valid is low one cycle in 7).
        scan: u64,
        scan_cycle: u64,
    }

    impl Bench {
        fn new() -> Bench {
            Self::with_core(CoreConfig::new(4, 8, 1024, 32).unwrap())
        }
        fn with_core(core: CoreConfig) -> Bench {
            let id = ControlIdentity {
                board_id: 0,
                version: 0x01_02_03,
                git_hash: 0xabcd1234,
                build_date_days: 20_000,
                baud_divisor: DIV,
            };
            let mut uut = ControlLink::new(&core, id);
            uut.connect_all();
            uut.link_state.next = 0x0000_0402.into();
            uut.core_idle.next = true;
            Bench {
                uut,
                line: SerialModel::new(DIV),
                writes: vec![],
                cycles: 0,
                paused: 0,
                was_paused: false,
                snapshots: 0,
                counter_reg: 0,
                scan: 0,
                scan_cycle: 0,
            }
        }
        /// Straggler word `index` of the fake core after `snapshots` snapshots.
        fn straggler_word(index: u64, snapshots: u64) -> u32 {
            (5000 + 7 * index + 1000 * snapshots) as u32
        }
        fn cycle(&mut self) -> Option<u8> {
            self.uut.uart_rx.next = self.line.drive();
            settle(&mut self.uut);
            // A fake core: counter i reads 1000 + i + 100 * (number of snapshots taken), through
            // one register as the link's owner provides it.
            if self.uut.pause.val() {
                self.paused += 1;
            }
            let next_reg = 1000 + self.uut.counter.address.val().index() as u64 + 100 * self.snapshots;
            if self.was_paused && !self.uut.pause.val() {
                self.snapshots += 1;
            }
            self.was_paused = self.uut.pause.val();
            if self.uut.cfg.write.val() {
                self.writes.push((self.uut.cfg.address.val().index() as u8, self.uut.cfg.data.val().index() as u32));
            }
            let got = self.line.sample(self.uut.uart_tx.val());
            self.uut.clock.next = true.into();
            settle(&mut self.uut);
            self.counter_reg = next_reg;
            self.uut.counter.data.next = self.counter_reg.into();
            // A fake straggler scan: one word a cycle but every seventh, each word's value moving
            // with the snapshots taken (so a copy from the wrong snapshot shows).
            self.scan_cycle += 1;
            let valid = !self.scan_cycle.is_multiple_of(7);
            self.uut.straggler.valid.next = valid;
            self.uut.straggler.index.next = self.scan.into();
            self.uut.straggler.data.next = u64::from(Self::straggler_word(self.scan, self.snapshots)).into();
            if valid {
                self.scan = (self.scan + 1) % 128;
            }
            self.uut.clock.next = false.into();
            settle(&mut self.uut);
            self.cycles += 1;
            got
        }
        fn transact(&mut self, req: &[u8]) -> Response {
            self.line.send(req);
            let mut buf = vec![];
            for _ in 0..20_000 {
                if let Some(b) = self.cycle() {
                    buf.push(b);
                    if let Ok((r, _)) = parse_response(&buf) {
                        return r;
                    }
                }
            }
            panic!("no response to {req:02x?}; got {buf:02x?}");
        }
    }

    /// A core with straggler counters: a snapshot copies the whole scan after the counters, with
    /// `pause` up until the last word is in, and 0x0600 + 4r + j reads it; the region's end
    /// (4 · max_workers) is checked. Without them the region is an unknown register.
    #[test]
    fn snapshot_copies_the_straggler_scan() {
        let core = CoreConfig::new(4, 8, 1024, 8).unwrap().with_stragglers(true);
        let mut b = Bench::with_core(core);
        for snap in 0..2u64 {
            let paused = b.paused;
            let r = b.transact(&read_request(0x0200, 2));
            assert_eq!(r.words, vec![1000 + 100 * snap as u32, 1001 + 100 * snap as u32]);
            assert_eq!(b.snapshots, snap + 1);
            // The wait, the counters, then 128 scan words at 6 cycles of 7.
            let held = b.paused - paused;
            assert!((5 + 24 + 2 + 128..=5 + 24 + 2 + 128 * 7 / 6 + 2).contains(&held), "pause held {held} cycles");
            let r = b.transact(&read_request(0x0600, 32));
            assert_eq!(r.status, Status::Ok);
            let want: Vec<u32> = (0..32).map(|i| Bench::straggler_word(i, snap)).collect();
            assert_eq!(r.words, want, "snapshot {snap}");
            let r = b.transact(&read_request(0x0610, 16));
            let want: Vec<u32> = (16..32).map(|i| Bench::straggler_word(i, snap)).collect();
            assert_eq!(r.words, want);
        }
        assert_eq!(b.transact(&read_request(0x061F, 1)).status, Status::Ok);
        assert_eq!(b.transact(&read_request(0x061F, 2)).status, Status::UnknownRegister, "8 workers: 32 words");
        let mut plain = Bench::new();
        assert_eq!(plain.transact(&read_request(0x0600, 1)).status, Status::UnknownRegister);
        plain.transact(&read_request(0x0200, 1));
        assert_eq!(plain.paused, 5 + 24 + 2, "no straggler copy without the counters");
    }

    #[test]
    fn reads_writes_and_errors() {
        let mut b = Bench::new();
        let r = b.transact(&read_request(0x0000, 11));
        assert_eq!(r.status, Status::Ok);
        assert_eq!(r.words, vec![protocol::MAGIC, 0, 0x01_02_03, 0xabcd1234, 20_000, 4, 8, 1024, 32, DIV, 24]);
        // A read at 0x0200 takes a snapshot: pause up for the wait (5 cycles: the idle input may
        // come through a register of the owner's and is sampled through one of the link's) and
        // the 24 copy cycles plus 2 (the counter port's two registers).
        assert_eq!(CORE_COUNTERS, 24);
        let r = b.transact(&read_request(0x0200, 24));
        assert_eq!(r.words, (1000..1024).collect::<Vec<u32>>());
        assert_eq!((b.snapshots, b.paused), (1, 5 + 24 + 2));
        // Reads further in the region answer from the same snapshot.
        let r = b.transact(&read_request(0x0210, 7));
        assert_eq!(r.words, (1016..1023).collect::<Vec<u32>>());
        assert_eq!(b.snapshots, 1);
        let r = b.transact(&read_request(0x0200, 2));
        assert_eq!(r.words, vec![1100, 1101], "a second snapshot");
        let r = b.transact(&read_request(0x0300, 4));
        assert_eq!(r.words, vec![2, 4, 0, 0]);

        // A write: applied one register a cycle, read back from the shadows.
        let r = b.transact(&write_request(0x0100, &[0x0211, 0x2233_4455, 0x0a00_0001, 4, 1, 12]));
        assert_eq!((r.status, r.words.len()), (Status::Ok, 0));
        assert_eq!(b.writes, vec![(0, 0x0211), (1, 0x2233_4455), (2, 0x0a00_0001), (3, 4), (4, 1), (5, 12)]);
        let r = b.transact(&write_request(0x0184, &[0x0a00_0002, 0x0002, 0x0000_0001]));
        assert_eq!(r.status, Status::Ok);
        assert_eq!(&b.writes[6..], &[(0x84, 0x0a00_0002), (0x85, 2), (0x86, 1)]);
        b.transact(&write_request(0x0106, &[1]));
        let r = b.transact(&read_request(0x0100, 7));
        assert_eq!(r.words, vec![0x0211, 0x2233_4455, 0x0a00_0001, 4, 1, 12, 1]);
        // The VLAN register (0x0107, core register 7) is a job register: writing it clears
        // "enabled" until the control register enables the job again.
        assert_eq!(b.transact(&write_request(0x0107, &[0xa064])).status, Status::Ok);
        assert_eq!(b.writes.last(), Some(&(7, 0xa064)));
        assert_eq!(b.transact(&read_request(0x0106, 2)).words, vec![0, 0xa064]);
        b.transact(&write_request(0x0106, &[1]));
        let r = b.transact(&read_request(0x0100, 8));
        assert_eq!(r.words, vec![0x0211, 0x2233_4455, 0x0a00_0001, 4, 1, 12, 1, 0xa064]);
        // The worker port (0x0108, core register 8: 0xBEE0 until written) and the job number
        // (0x0109, core register 9) are job registers too, with the same rules.
        assert_eq!(b.transact(&read_request(0x0108, 2)).words, vec![0xBEE0, 0]);
        let r = b.transact(&[0xA5, 0x02, 0x01, 0x08, 0x02, 0x00, 0x00, 0xBE, 0xE3, 0x00, 0x00, 0x00, 0x09, 0xE9, 0x8E]);
        assert_eq!(r.status, Status::Ok);
        assert_eq!(&b.writes[b.writes.len() - 2..], &[(8, 0xBEE3), (9, 9)]);
        assert_eq!(b.transact(&read_request(0x0106, 1)).words, vec![0], "a job register written");
        b.transact(&write_request(0x0106, &[1]));
        let r = b.transact(&read_request(0x0100, 10));
        assert_eq!(r.words, vec![0x0211, 0x2233_4455, 0x0a00_0001, 4, 1, 12, 1, 0xa064, 0xBEE3, 9]);
        assert_eq!(b.transact(&read_request(0x0100, 11)).status, Status::UnknownRegister);
        let r = b.transact(&read_request(0x0401, 1));
        assert_eq!(r.words, vec![8], "S clamped to the built slots");
        let n = b.writes.len();

        // Errors change nothing.
        let mut bad = write_request(0x0103, &[9]);
        bad[8] ^= 1;
        assert_eq!(b.transact(&bad).status, Status::BadChecksum);
        assert_eq!(b.transact(&write_request(0x0000, &[1])).status, Status::UnknownRegister);
        // 0x0107..=0x010A exist (0x010A..=0x010D: the tree's parent); 0x010E does not.
        assert_eq!(b.transact(&write_request(0x010B, &[1, 2, 3, 4])).status, Status::UnknownRegister);
        assert_eq!(b.transact(&read_request(0x010A, 1)).status, Status::UnknownRegister);
        assert_eq!(b.transact(&read_request(0x0180, 1)).status, Status::UnknownRegister);
        assert_eq!(b.transact(&read_request(0x0200, 25)).status, Status::UnknownRegister);
        assert_eq!(b.transact(&read_request(0x0200, 0)).status, Status::BadLength);
        assert_eq!(b.transact(&[0xA5, 0x07, 0, 0, 1, 0, 0]).status, Status::BadOpcode);
        let partial = &write_request(0x0103, &[9])[..7];
        assert_eq!(b.transact(partial).status, Status::Timeout);
        assert_eq!(b.writes.len(), n, "no write from a bad frame");
        // Still in step afterwards.
        assert_eq!(b.transact(&read_request(0x0103, 1)).words, vec![4]);
    }

    /// Two identities give Verilog that differs only in the values of the shadow RAM's initial
    /// words, line for line: the git hash and build date reach the block RAM's contents, not
    /// the logic, so a build's netlist does not depend on them.
    #[test]
    fn identity_changes_only_the_ram_contents() {
        let core = CoreConfig::new(4, 16, 1024, 32).unwrap();
        let verilog = |git_hash: u32, build_date_days: u32| {
            let id = ControlIdentity {
                board_id: 1,
                version: pack_version(DESIGN_VERSION),
                git_hash,
                build_date_days,
                baud_divisor: 1085,
            };
            let mut link = ControlLink::new(&core, id);
            link.connect_all();
            generate_verilog(&link)
        };
        let (a, b) = (verilog(0xabcd1234, 20_000), verilog(0, 0));
        let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
        assert_eq!(a.len(), b.len());
        let differ: Vec<(&str, &str)> = a.iter().zip(&b).filter(|(x, y)| x != y).map(|(x, y)| (*x, *y)).collect();
        assert_eq!(
            differ,
            vec![
                ("       mem[51] = 32'habcd1234;", "       mem[51] = 32'h00000000;"),
                ("       mem[52] = 32'h00004e20;", "       mem[52] = 32'h00000000;"),
            ]
        );
    }

    /// The link at 115200 baud / 125 MHz synthesizes for the ECP5 without latches.
    #[test]
    fn synthesizes_at_the_default_baud() {
        use crate::verilog::synth_ecp5;
        if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Yosys) {
            return;
        }
        let core = CoreConfig::new(4, 64, 1024, 32).unwrap();
        let id = ControlIdentity::stamp(0, crate::uart::DEFAULT_DIVISOR, BuildStamp::default());
        let mut link = ControlLink::new(&core, id);
        link.connect_all();
        let u = synth_ecp5(&generate_verilog(&link)).unwrap_or_else(|e| panic!("{e}"));
        println!("control link: {u:?}");
        assert!(u.lut4 < 2000 && u.dp16kd <= 1, "{u:?}");
    }
}
