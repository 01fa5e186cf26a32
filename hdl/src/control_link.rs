//! The control link, hardware side: a UART, the request parser of
//! `spotagg_driver::control::protocol` (frame layout, register map and status codes are
//! defined there, once), the core's configuration bus and counter read port, and the identity
//! registers fixed at build time.
//!
//! Request fields as this parser takes them (offsets in bytes):
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
//! snapshot of more than [`MAX_COUNT`] counters is read with a request at 0x0200 followed by
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

use crate::block_ram::BlockRam;
use crate::config::CoreConfig;
use crate::config_registers::ConfigBusDriver;
use crate::counters::CounterPortDriver;
use crate::crc16::Crc16Step;
use crate::register_range::RegisterRange;
use crate::straggler::{StragglerReader, WORDS_PER_RANK};
use crate::uart::{UartRx, UartTx};
use rust_hdl::prelude::*;
use spotagg_driver::control::protocol::{self, Status, FRAME_TIMEOUT_BITS, MAX_COUNT};
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

/// The request/response machine of the link.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
enum LinkState {
    /// Waiting for the SYNC byte.
    Idle,
    /// Opcode, address and count.
    Header,
    /// The words of a write, into the buffer.
    Data,
    /// The two CRC bytes.
    Crc,
    /// Skipping an unparseable request until the line is quiet (status already set).
    Discard,
    /// The first buffered word and the first register's offset presented.
    WritePrepare,
    /// One register written a cycle.
    Write,
    /// SYNC, status, count, data words and CRC sent.
    Respond,
    /// Snapshot: the core's input held until nothing is in flight.
    SnapshotWait,
    /// Snapshot: the counters copied into the shadow.
    SnapshotCopy,
    /// Snapshot: the straggler scan copied into the shadow (a core with straggler counters).
    SnapshotStragglers,
    /// The request's verdict (after the last CRC byte).
    Verdict,
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
    /// The write under way goes to the EAPS region.
    wr_eaps: DFF<Bit>,
    o_eaps: DFF<Bit>,
    v_eaps: DFF<Bits<32>>,
    rx: UartRx,
    rx_crc: Crc16Step,
    tx_crc_step: Crc16Step,
    range: RegisterRange,
    tx: UartTx,
    buffer: BlockRam<5, 32>,
    shadow: BlockRam<8, 32>,
    state: DFF<LinkState>,
    snap_ge4: DFF<Bit>,
    cp_more: DFF<Bit>,
    cp_end: DFF<Bit>,
    crc_hi_ok: DFF<Bit>,
    crc_ok: DFF<Bit>,
    v_job: DFF<Bits<32>>,
    v_link: DFF<Bits<32>>,
    v_stat: DFF<Bits<32>>,
    v_reg: DFF<Bits<3>>,
    crc_pend: DFF<Bit>,
    crc_byte: DFF<Bits<8>>,
    wsel: DFF<Bits<10>>,
    wle5: DFF<Bit>,
    w_last: DFF<Bit>,
    cnt_zero: DFF<Bit>,
    snap_idx: DFF<Bits<8>>,
    snap_wait: DFF<Bits<17>>,
    snap_late: DFF<Bit>,
    hidx: DFF<Bits<2>>,
    op: DFF<Bits<8>>,
    addr: DFF<Bits<16>>,
    count: DFF<Bits<8>>,
    count_m1: DFF<Bits<8>>,
    quiet_over: DFF<Bit>,
    slots_used: DFF<Bits<32>>,
    word: DFF<Bits<8>>,
    bidx: DFF<Bits<2>>,
    assemble: DFF<Bits<32>>,
    crc: DFF<Bits<16>>,
    cidx: DFF<Bit>,
    status: DFF<Bits<8>>,
    quiet: DFF<Bits<24>>,
    phase: DFF<Bits<2>>,
    ridx: DFF<Bits<2>>,
    count_out: DFF<Bits<8>>,
    out_word: DFF<Bits<32>>,
    shadow_q: DFF<Bits<32>>,
    rd_hold: DFF<Bits<32>>,
    idle_q: DFF<Bit>,
    pause_q: DFF<Bit>,
    o_write: DFF<Bit>,
    o_address: DFF<Bits<8>>,
    o_data: DFF<Bits<32>>,
    ctr_q: DFF<Bits<32>>,
    ctr_we: DFF<Bits<2>>,
    ctr_wa1: DFF<Bits<6>>,
    ctr_wa2: DFF<Bits<6>>,
    st_we: DFF<Bit>,
    st_wa: DFF<Bits<7>>,
    st_data: DFF<Bits<32>>,
    st_n: DFF<Bits<8>>,
    has_stragglers: Constant<Bit>,
    link_q: DFF<Bits<32>>,
    tx_crc: DFF<Bits<16>>,
    mac_hi: DFFWithInit<Bits<32>>,
    mac_lo: DFFWithInit<Bits<32>>,
    ip: DFFWithInit<Bits<32>>,
    n: DFFWithInit<Bits<32>>,
    size: DFFWithInit<Bits<32>>,
    slots_s: DFFWithInit<Bits<32>>,
    vlan: DFFWithInit<Bits<32>>,
    wport: DFFWithInit<Bits<32>>,
    jobn: DFFWithInit<Bits<32>>,
    enabled: DFFWithInit<Bit>,
    uptime: DFF<Bits<32>>,
    tx_byte: Signal<Local, Bits<8>>,
    tx_send: Signal<Local, Bit>,
    tx_in_crc: Signal<Local, Bit>,
    rd_addr: DFF<Bits<16>>,
    wr_off: DFF<Bits<8>>,
    rd_region: Signal<Local, Bits<8>>,
    rd_off: Signal<Local, Bits<8>>,
    rd_value: Signal<Local, Bits<32>>,
    asm_next: Signal<Local, Bits<32>>,
    timed_out: Signal<Local, Bit>,
    reply_start: Signal<Local, Bit>,
    built_slots: Constant<Bits<32>>,
    counter_last: Constant<Bits<8>>,
    counter_n: Constant<Bits<8>>,
    timeout_m1: Constant<Bits<24>>,
    max_count: Constant<Bits<8>>,
    status_ok: Constant<Bits<8>>,
    status_bad_checksum: Constant<Bits<8>>,
    status_bad_length: Constant<Bits<8>>,
    status_unknown_register: Constant<Bits<8>>,
    status_timeout: Constant<Bits<8>>,
    status_bad_opcode: Constant<Bits<8>>,
}

/// A `protocol::Status` code as a constant of the generated Verilog.
fn status(s: Status) -> Constant<Bits<8>> {
    Constant::new((s as u64).into())
}

fn k32(v: u64) -> Constant<Bits<32>> {
    Constant::new(v.into())
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
        self.range = self.range.with_jobs(jobs);
        self
    }

    /// The same link with the EAPS regions (docs/control.md): configuration writes at
    /// 0x0700..=0x07FF and status reads at 0x0800..=0x08FF through `eaps`.
    pub fn with_eaps(mut self, eaps: bool) -> Self {
        self.range = self.range.with_eaps(eaps);
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
        let j = job.unwrap_or([0; 10]);
        let w32 = |v: u32| DFFWithInit::new(Bits::<32>::from(u64::from(v)));
        let d = identity.baud_divisor;
        Self {
            clock: Default::default(),
            uart_rx: Default::default(),
            uart_tx: Default::default(),
            cfg: Default::default(),
            counter: Default::default(),
            core_idle: Default::default(),
            link_state: Default::default(),
            straggler: Default::default(),
            eaps: Default::default(),
            wr_eaps: Default::default(),
            o_eaps: Default::default(),
            v_eaps: Default::default(),
            rx: UartRx::new(d),
            rx_crc: Default::default(),
            tx_crc_step: Default::default(),
            range: RegisterRange::new(counters).with_stragglers(if core.stragglers {
                WORDS_PER_RANK * core.max_workers
            } else {
                0
            }),
            tx: UartTx::new(d),
            buffer: BlockRam::new(32),
            // The link never reads a shadow word in the cycle it is written (written only while
            // a snapshot is copied, read only while a response is sent).
            shadow: BlockRam::new(STRAGGLER_BASE + STRAGGLER_WORDS)
                .with_contents(IDENTITY_BASE, &identity_words(core, &identity, counters).map(u64::from))
                .without_collision_check(),
            state: Default::default(),
            snap_ge4: Default::default(),
            cp_more: Default::default(),
            cp_end: Default::default(),
            crc_hi_ok: Default::default(),
            crc_ok: Default::default(),
            v_job: Default::default(),
            v_link: Default::default(),
            v_stat: Default::default(),
            v_reg: Default::default(),
            crc_pend: Default::default(),
            crc_byte: Default::default(),
            wsel: Default::default(),
            wle5: Default::default(),
            w_last: Default::default(),
            cnt_zero: Default::default(),
            snap_idx: Default::default(),
            snap_wait: Default::default(),
            snap_late: Default::default(),
            pause: Default::default(),
            hidx: Default::default(),
            op: Default::default(),
            addr: Default::default(),
            count: Default::default(),
            count_m1: Default::default(),
            quiet_over: Default::default(),
            slots_used: Default::default(),
            word: Default::default(),
            bidx: Default::default(),
            assemble: Default::default(),
            crc: Default::default(),
            cidx: Default::default(),
            status: Default::default(),
            quiet: Default::default(),
            phase: Default::default(),
            ridx: Default::default(),
            count_out: Default::default(),
            out_word: Default::default(),
            shadow_q: Default::default(),
            rd_hold: Default::default(),
            idle_q: Default::default(),
            pause_q: Default::default(),
            o_write: Default::default(),
            o_address: Default::default(),
            o_data: Default::default(),
            ctr_q: Default::default(),
            ctr_we: Default::default(),
            ctr_wa1: Default::default(),
            ctr_wa2: Default::default(),
            st_we: Default::default(),
            st_wa: Default::default(),
            st_data: Default::default(),
            st_n: Default::default(),
            has_stragglers: Constant::new(core.stragglers),
            link_q: Default::default(),
            tx_crc: Default::default(),
            mac_hi: w32(j[0]),
            mac_lo: w32(j[1]),
            ip: w32(j[2]),
            n: w32(j[3]),
            size: w32(j[4]),
            slots_s: w32(j[5]),
            vlan: w32(j[7]),
            // The core's worker port reads 0xBEE0 after reset (config_registers).
            wport: w32(if job.is_some() { j[8] } else { 0xBEE0 }),
            jobn: w32(j[9]),
            enabled: DFFWithInit::new(job.is_some()),
            uptime: Default::default(),
            tx_byte: Default::default(),
            tx_send: Default::default(),
            tx_in_crc: Default::default(),
            rd_addr: Default::default(),
            wr_off: Default::default(),
            rd_region: Default::default(),
            rd_off: Default::default(),
            rd_value: Default::default(),
            asm_next: Default::default(),
            timed_out: Default::default(),
            reply_start: Default::default(),
            built_slots: k32(core.slots as u64),
            counter_last: Constant::new(((counters - 1) as u64).into()),
            counter_n: Constant::new((counters as u64).into()),
            timeout_m1: Constant::new((u64::from(FRAME_TIMEOUT_BITS) * u64::from(d) - 1).into()),
            max_count: Constant::new(u64::from(MAX_COUNT).into()),
            status_ok: status(Status::Ok),
            status_bad_checksum: status(Status::BadChecksum),
            status_bad_length: status(Status::BadLength),
            status_unknown_register: status(Status::UnknownRegister),
            status_timeout: status(Status::Timeout),
            status_bad_opcode: status(Status::BadOpcode),
        }
    }
}

impl Logic for ControlLink {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, hidx, op, addr, count, word, bidx, assemble, crc, cidx, status, quiet, phase, ridx,
            count_out, out_word, shadow_q, rd_hold, idle_q, tx_crc, pause_q, o_write, o_address, o_data, ctr_q, ctr_we,
            ctr_wa1, ctr_wa2, link_q, wr_eaps, o_eaps, v_eaps, rd_addr, wr_off, count_m1, quiet_over, slots_used,
            mac_hi, mac_lo, ip, n, size, slots_s, vlan, wport, jobn, enabled, uptime, snap_idx, snap_wait, snap_late,
            snap_ge4, cp_more, cp_end, crc_hi_ok, crc_ok, v_job, v_link, v_stat, v_reg, crc_pend, crc_byte, wsel, wle5,
            w_last, cnt_zero, st_we, st_wa, st_data, st_n
        );
        clock!(self, clock, rx, tx, buffer, shadow, range);
        self.rx.line.next = self.uart_rx.val();
        self.uart_tx.next = self.tx.line.val();
        self.uptime.d.next = self.uptime.q.val() + 1;

        // CRC-16/CCITT-FALSE of the received byte, byte-wise form.
        self.rx_crc.crc.next = self.crc.q.val();
        self.rx_crc.data.next = self.rx.data.val();
        self.asm_next.next = (self.assemble.q.val() << 8) | bit_cast::<32, 8>(self.rx.data.val());

        // The register at addr + word (the sum registered: it follows the word index a cycle
        // late), read combinationally into rd_hold.
        self.rd_addr.d.next = self.addr.q.val() + bit_cast::<16, 8>(self.word.q.val());
        self.rd_region.next = bit_cast::<8, 16>(self.rd_addr.q.val() >> 8);
        self.rd_off.next = bit_cast::<8, 16>(self.rd_addr.q.val());
        // Counter copy pipeline: counter.address (snap_idx, a register) → the owner's register
        // → ctr_q → the shadow RAM, two cycles after the address.
        self.counter.address.next = bit_cast::<6, 8>(self.snap_idx.q.val());
        self.ctr_q.d.next = self.counter.data.val();
        self.ctr_wa1.d.next = bit_cast::<6, 8>(self.snap_idx.q.val());
        self.ctr_wa2.d.next = self.ctr_wa1.q.val();
        self.ctr_we.d.next = self.ctr_we.q.val() << 1;
        // The identity registers (region 0) are words IDENTITY_BASE.. of the shadow, its
        // initial contents; the counters (region 2) are words 0..C.
        self.shadow.read_address.next = self.rd_off.val() & 0x3F;
        if self.rd_region.val() == 0 {
            // IDENTITY_BASE
            self.shadow.read_address.next = (self.rd_off.val() & 0x0F) | 0x30;
        }
        if self.rd_region.val() == 6 {
            // STRAGGLER_BASE
            self.shadow.read_address.next = (self.rd_off.val() & 0x7F) | 0x80;
        }
        // The straggler scan, registered on its way into the shadow (SnapshotStragglers).
        self.st_we.d.next = false;
        self.st_wa.d.next = self.straggler.index.val();
        self.st_data.d.next = self.straggler.data.val();
        self.shadow.write_address.next = bit_cast::<8, 6>(self.ctr_wa2.q.val());
        self.shadow.write_data.next = self.ctr_q.q.val();
        self.shadow.write_enable.next = self.ctr_we.q.val().get_bit(1);
        if self.st_we.q.val() {
            self.shadow.write_address.next = bit_cast::<8, 7>(self.st_wa.q.val()) | 0x80;
            self.shadow.write_data.next = self.st_data.q.val();
            self.shadow.write_enable.next = true;
        }
        self.pause.next = self.pause_q.q.val();
        self.link_q.d.next = self.link_state.val();
        // The configuration bus from registers: a write leaves a cycle after its word is read.
        self.o_write.d.next = false;
        self.o_eaps.d.next = false;
        self.cfg.write.next = self.o_write.q.val();
        self.eaps.write.next = self.o_eaps.q.val();
        self.eaps.address.next = self.o_address.q.val();
        self.eaps.data.next = self.o_data.q.val();
        self.eaps.status_address.next = self.rd_off.val();
        self.v_eaps.d.next = self.eaps.status_data.val();
        self.cfg.address.next = self.o_address.q.val();
        self.cfg.data.next = self.o_data.q.val();
        // The read mux in two register stages: each region's value by offset (v_job, v_link,
        // v_stat; the identity's and the counters' are shadow_q), then the region's.
        self.v_job.d.next = bit_cast::<32, 1>(self.enabled.q.val().into());
        match self.rd_off.val().index() {
            0 => {
                self.v_job.d.next = self.mac_hi.q.val();
            }
            1 => {
                self.v_job.d.next = self.mac_lo.q.val();
            }
            2 => {
                self.v_job.d.next = self.ip.q.val();
            }
            3 => {
                self.v_job.d.next = self.n.q.val();
            }
            4 => {
                self.v_job.d.next = self.size.q.val();
            }
            5 => {
                self.v_job.d.next = self.slots_s.q.val();
            }
            7 => {
                self.v_job.d.next = self.vlan.q.val();
            }
            8 => {
                self.v_job.d.next = self.wport.q.val();
            }
            9 => {
                self.v_job.d.next = self.jobn.q.val();
            }
            _ => {}
        }
        self.v_link.d.next = (self.link_q.q.val() >> (bit_cast::<32, 8>(self.rd_off.val()) << 3)) & 0xff;
        self.v_stat.d.next = self.uptime.q.val();
        match self.rd_off.val().index() {
            0 => {
                self.v_stat.d.next = bit_cast::<32, 1>(self.idle_q.q.val().into())
                    | (bit_cast::<32, 1>(self.snap_late.q.val().into()) << 1);
            }
            1 => {
                self.v_stat.d.next = self.slots_used.q.val();
            }
            _ => {}
        }
        self.v_reg.d.next = 4.into();
        if self.rd_region.val() < 4 {
            self.v_reg.d.next = bit_cast::<3, 8>(self.rd_region.val());
        }
        if self.rd_region.val() == 8 {
            self.v_reg.d.next = 5.into();
        }
        // The identity (region 0) and the straggler counters (region 6) are read from the
        // shadow, as the counters are.
        if (self.rd_region.val() == 0) | (self.rd_region.val() == 6) {
            self.v_reg.d.next = 2.into();
        }
        self.rd_value.next = self.v_stat.q.val();
        match self.v_reg.q.val().index() {
            1 => {
                self.rd_value.next = self.v_job.q.val();
            }
            2 => {
                self.rd_value.next = self.shadow_q.q.val();
            }
            3 => {
                self.rd_value.next = self.v_link.q.val();
            }
            5 => {
                self.rd_value.next = self.v_eaps.q.val();
            }
            _ => {}
        }

        // Timing (135 MHz): the address sum, the shadow RAM's output and both stages of the read
        // mux end at registers, so the response path starts from flip-flops. The read value lags
        // the word index by four cycles (rd_addr, RAM or v_*, shadow_q, rd_hold); the transmitter
        // uses a word's value only after a whole byte has gone out on the line since the index
        // moved (at least 10 bit times).
        self.shadow_q.d.next = self.shadow.read_data.val();
        self.rd_hold.d.next = self.rd_value.val();
        self.idle_q.d.next = self.core_idle.val();
        // S clamped to the built slots, from a register (S changes only by a write).
        self.slots_used.d.next = self.slots_s.q.val();
        if self.slots_s.q.val() > self.built_slots.val() {
            self.slots_used.d.next = self.built_slots.val();
        }

        // Does every register of the request exist for its access? (From registers: the address
        // and count are complete two bytes, the CRC, before the verdict uses the check.)
        self.range.op.next = self.op.q.val();
        self.range.address.next = self.addr.q.val();
        self.range.count_m1.next = self.count_m1.q.val();

        // Defaults.
        self.buffer.read_address.next = bit_cast::<5, 8>(self.word.q.val() + 1);
        self.buffer.write_address.next = bit_cast::<5, 8>(self.word.q.val());
        self.buffer.write_data.next = self.asm_next.val();
        self.buffer.write_enable.next = false;
        self.tx.data.next = 0.into();
        self.tx.start.next = false;
        self.tx_byte.next = 0.into();
        self.tx_send.next = false;
        self.tx_in_crc.next = false;
        // quiet_over is quiet >= timeout, from a register: set a cycle ahead.
        self.quiet_over.d.next = false;
        if self.rx.valid.val() || self.rx.frame_error.val() {
            self.quiet.d.next = 0.into();
        } else {
            self.quiet_over.d.next = self.quiet.q.val() >= self.timeout_m1.val();
            if self.quiet.q.val() != 0xff_ffff {
                self.quiet.d.next = self.quiet.q.val() + 1;
            }
        }

        // The response byte of the current position and its CRC (used in Respond).
        match self.phase.q.val().index() {
            0 => match self.ridx.q.val().index() {
                0 => {
                    self.tx_byte.next = 0x5A.into();
                    self.tx_send.next = true;
                }
                1 => {
                    self.tx_byte.next = self.status.q.val();
                    self.tx_send.next = true;
                    self.tx_in_crc.next = true;
                }
                _ => {
                    self.tx_byte.next = self.count_out.q.val();
                    self.tx_send.next = true;
                    self.tx_in_crc.next = true;
                }
            },
            1 => {
                self.tx_send.next = true;
                self.tx_in_crc.next = true;
                if self.ridx.q.val() == 0 {
                    self.tx_byte.next = bit_cast::<8, 32>(self.rd_hold.q.val() >> 24);
                } else {
                    self.tx_byte.next = bit_cast::<8, 32>(self.out_word.q.val() >> 24);
                }
            }
            _ => {
                self.tx_send.next = true;
                if self.ridx.q.val() == 0 {
                    self.tx_byte.next = bit_cast::<8, 16>(self.tx_crc.q.val() >> 8);
                } else {
                    self.tx_byte.next = bit_cast::<8, 16>(self.tx_crc.q.val());
                }
            }
        }
        // The response CRC takes each byte the cycle after it was sent (crc_byte), from registers.
        self.crc_pend.d.next = false;
        self.tx_crc_step.crc.next = self.tx_crc.q.val();
        self.tx_crc_step.data.next = self.crc_byte.q.val();
        if self.crc_pend.q.val() {
            self.tx_crc.d.next = self.tx_crc_step.updated.val();
        }
        // Flags for the states below, each from registers a cycle ahead.
        self.snap_ge4.d.next = (self.state.q.val() == LinkState::SnapshotWait) && (self.snap_wait.q.val() >= 3);
        self.cp_more.d.next = true;
        self.cp_end.d.next = false;
        if self.state.q.val() == LinkState::SnapshotCopy {
            self.cp_more.d.next = self.snap_idx.q.val() < self.counter_last.val();
            self.cp_end.d.next = self.snap_idx.q.val() == self.counter_n.val();
        }
        self.wsel.d.next = self.wsel.q.val() << 1;
        // The next register clears `enabled` when it is a job register (0..=5 or 7..=9, not 6).
        self.wle5.d.next = (self.wsel.q.val() & 0x35f) != 0;
        // word == count_m1 and count_out == 0 a cycle late: in Data and Respond the word index and
        // count_out change at most once per byte on the line.
        self.w_last.d.next = self.word.q.val() == self.count_m1.q.val();
        self.cnt_zero.d.next = self.count_out.q.val() == 0;

        self.timed_out.next = false;
        self.reply_start.next = false;
        match self.state.q.val() {
            LinkState::Idle => {
                if self.rx.valid.val() && (self.rx.data.val() == 0xA5) {
                    self.state.d.next = LinkState::Header;
                    self.crc.d.next = 0xffff.into();
                    self.hidx.d.next = 0.into();
                }
            }
            LinkState::Header => {
                if self.rx.valid.val() {
                    self.crc.d.next = self.rx_crc.updated.val();
                    self.hidx.d.next = self.hidx.q.val() + 1;
                    match self.hidx.q.val().index() {
                        0 => {
                            self.op.d.next = self.rx.data.val();
                        }
                        1 => {
                            self.addr.d.next = bit_cast::<16, 8>(self.rx.data.val()) << 8;
                        }
                        2 => {
                            self.addr.d.next = self.addr.q.val() | bit_cast::<16, 8>(self.rx.data.val());
                        }
                        _ => {
                            self.count.d.next = self.rx.data.val();
                            self.count_m1.d.next = self.rx.data.val() - 1;
                            self.word.d.next = 0.into();
                            self.bidx.d.next = 0.into();
                            self.cidx.d.next = false;
                            if !self.range.read.val() && !self.range.write.val() {
                                self.status.d.next = self.status_bad_opcode.val();
                                self.state.d.next = LinkState::Discard;
                            } else if (self.rx.data.val() == 0) || (self.rx.data.val() > self.max_count.val()) {
                                self.status.d.next = self.status_bad_length.val();
                                self.state.d.next = LinkState::Discard;
                            } else if self.range.write.val() {
                                self.state.d.next = LinkState::Data;
                            } else {
                                self.state.d.next = LinkState::Crc;
                            }
                        }
                    }
                } else {
                    self.timed_out.next = self.quiet_over.q.val();
                }
            }
            LinkState::Data => {
                if self.rx.valid.val() {
                    self.crc.d.next = self.rx_crc.updated.val();
                    self.assemble.d.next = self.asm_next.val();
                    self.bidx.d.next = self.bidx.q.val() + 1;
                    if self.bidx.q.val() == 3 {
                        self.buffer.write_enable.next = true;
                        self.word.d.next = self.word.q.val() + 1;
                        if self.w_last.q.val() {
                            self.state.d.next = LinkState::Crc;
                        }
                    }
                } else {
                    self.timed_out.next = self.quiet_over.q.val();
                }
            }
            LinkState::Crc => {
                if self.rx.valid.val() {
                    // The CRC compared a byte at a time, the verdict in Verdict.
                    if !self.cidx.q.val() {
                        self.crc_hi_ok.d.next = self.rx.data.val() == bit_cast::<8, 16>(self.crc.q.val() >> 8);
                        self.cidx.d.next = true;
                    } else {
                        self.crc_ok.d.next =
                            self.crc_hi_ok.q.val() && (self.rx.data.val() == bit_cast::<8, 16>(self.crc.q.val()));
                        self.word.d.next = 0.into();
                        self.reply_start.next = true;
                        self.state.d.next = LinkState::Verdict;
                    }
                } else {
                    self.timed_out.next = self.quiet_over.q.val();
                }
            }
            LinkState::Discard => {
                // Skip an unparseable frame until the line is quiet; status already set.
                if self.quiet_over.q.val() {
                    self.reply_start.next = true;
                    self.state.d.next = LinkState::Respond;
                }
            }
            LinkState::WritePrepare => {
                // Present buffer word 0; the first register's offset (a request stays within one
                // region, so the low byte does not carry).
                self.buffer.read_address.next = 0.into();
                self.wr_off.d.next = bit_cast::<8, 16>(self.addr.q.val());
                // wsel: one-hot of the offset being written (0..=9; none above); wle5: a job
                // register (offset 0..=5 or 7..=9) is written, so the job is not enabled until 6 is.
                self.wsel.d.next = 0.into();
                match bit_cast::<8, 16>(self.addr.q.val()).index() {
                    0 => {
                        self.wsel.d.next = 1.into();
                    }
                    1 => {
                        self.wsel.d.next = 2.into();
                    }
                    2 => {
                        self.wsel.d.next = 4.into();
                    }
                    3 => {
                        self.wsel.d.next = 8.into();
                    }
                    4 => {
                        self.wsel.d.next = 16.into();
                    }
                    5 => {
                        self.wsel.d.next = 32.into();
                    }
                    6 => {
                        self.wsel.d.next = 64.into();
                    }
                    7 => {
                        self.wsel.d.next = 128.into();
                    }
                    8 => {
                        self.wsel.d.next = 256.into();
                    }
                    9 => {
                        self.wsel.d.next = 512.into();
                    }
                    _ => {}
                }
                // (The parent registers 0x0A..=0x0D, docs/switch.md §6, are job registers too.)
                self.wle5.d.next =
                    (bit_cast::<8, 16>(self.addr.q.val()) <= 13) & (bit_cast::<8, 16>(self.addr.q.val()) != 6);
                // A write to the EAPS region goes to `eaps`, not to the core's bus nor the job's
                // registers.
                self.wr_eaps.d.next = (self.addr.q.val() >> 8) == 7;
                if (self.addr.q.val() >> 8) == 7 {
                    self.wsel.d.next = 0.into();
                    self.wle5.d.next = false;
                }
                self.state.d.next = LinkState::Write;
            }
            LinkState::Write => {
                // One register per cycle: word w's data is on the buffer's read port.
                self.o_write.d.next = !self.wr_eaps.q.val();
                self.o_eaps.d.next = self.wr_eaps.q.val();
                self.o_address.d.next = self.wr_off.q.val();
                self.wr_off.d.next = self.wr_off.q.val() + 1;
                self.o_data.d.next = self.buffer.read_data.val();
                if self.wle5.q.val() {
                    self.enabled.d.next = false;
                }
                if self.wsel.q.val().get_bit(0) {
                    self.mac_hi.d.next = self.buffer.read_data.val() & 0xffff;
                }
                if self.wsel.q.val().get_bit(1) {
                    self.mac_lo.d.next = self.buffer.read_data.val();
                }
                if self.wsel.q.val().get_bit(2) {
                    self.ip.d.next = self.buffer.read_data.val();
                }
                if self.wsel.q.val().get_bit(3) {
                    self.n.d.next = self.buffer.read_data.val() & 0x3f;
                }
                if self.wsel.q.val().get_bit(4) {
                    self.size.d.next = self.buffer.read_data.val() & 0x7;
                }
                if self.wsel.q.val().get_bit(5) {
                    self.slots_s.d.next = self.buffer.read_data.val() & 0xffff;
                }
                if self.wsel.q.val().get_bit(6) {
                    self.enabled.d.next = self.enabled.q.val() || self.buffer.read_data.val().get_bit(0);
                }
                if self.wsel.q.val().get_bit(7) {
                    self.vlan.d.next = self.buffer.read_data.val() & 0xffff;
                }
                if self.wsel.q.val().get_bit(8) {
                    self.wport.d.next = self.buffer.read_data.val() & 0xffff;
                }
                if self.wsel.q.val().get_bit(9) {
                    self.jobn.d.next = self.buffer.read_data.val() & 0xff;
                }
                self.word.d.next = self.word.q.val() + 1;
                if self.word.q.val() == self.count_m1.q.val() {
                    self.word.d.next = 0.into();
                    self.state.d.next = LinkState::Respond;
                }
            }
            LinkState::SnapshotWait => {
                // Snapshot: hold the core's input; wait until nothing is in flight.
                self.snap_wait.d.next = self.snap_wait.q.val() + 1;
                if self.snap_ge4.q.val() && (self.idle_q.q.val() || self.snap_wait.q.val().get_bit(16)) {
                    self.snap_late.d.next = !self.idle_q.q.val();
                    self.state.d.next = LinkState::SnapshotCopy;
                }
            }
            LinkState::SnapshotCopy => {
                // Copy counter snap_idx into the shadow, one a cycle; the copy of counter i is
                // written two cycles after its address, so the state ends two cycles after the
                // last address.
                self.snap_idx.d.next = self.snap_idx.q.val() + 1;
                if self.cp_more.q.val() {
                    self.ctr_we.d.next = (self.ctr_we.q.val() << 1) | 1;
                }
                if self.cp_end.q.val() {
                    self.st_n.d.next = 0.into();
                    if self.has_stragglers.val() {
                        self.state.d.next = LinkState::SnapshotStragglers;
                    } else {
                        self.pause_q.d.next = false;
                        self.count_out.d.next = self.count.q.val();
                        self.state.d.next = LinkState::Respond;
                    }
                }
            }
            LinkState::SnapshotStragglers => {
                // Each scan word into the shadow (through st_*) until STRAGGLER_WORDS (128: bit 7
                // of st_n) are written; the last lands in the cycle the state ends.
                if self.straggler.valid.val() & !self.st_n.q.val().get_bit(7) {
                    self.st_we.d.next = true;
                    self.st_n.d.next = self.st_n.q.val() + 1;
                }
                if self.st_n.q.val().get_bit(7) {
                    self.pause_q.d.next = false;
                    self.count_out.d.next = self.count.q.val();
                    self.state.d.next = LinkState::Respond;
                }
            }
            LinkState::Verdict => {
                // The request's verdict, from registers.
                if !self.crc_ok.q.val() {
                    self.status.d.next = self.status_bad_checksum.val();
                    self.state.d.next = LinkState::Respond;
                } else if !self.range.range_ok.val() {
                    self.status.d.next = self.status_unknown_register.val();
                    self.state.d.next = LinkState::Respond;
                } else if self.range.write.val() {
                    self.status.d.next = self.status_ok.val();
                    self.state.d.next = LinkState::WritePrepare;
                } else if self.range.snapshot.val() {
                    self.status.d.next = self.status_ok.val();
                    self.snap_idx.d.next = 0.into();
                    self.snap_wait.d.next = 0.into();
                    self.pause_q.d.next = true;
                    self.state.d.next = LinkState::SnapshotWait;
                } else {
                    self.status.d.next = self.status_ok.val();
                    self.count_out.d.next = self.count.q.val();
                    self.state.d.next = LinkState::Respond;
                }
            }
            _ => {
                // LinkState::Respond: SYNC, status, count, data words, CRC (bytes chosen above).
                if self.tx_send.val() && !self.tx.busy.val() {
                    self.tx.data.next = self.tx_byte.val();
                    self.tx.start.next = true;
                    if self.tx_in_crc.val() {
                        self.crc_pend.d.next = true;
                        self.crc_byte.d.next = self.tx_byte.val();
                    }
                    self.ridx.d.next = self.ridx.q.val() + 1;
                    match self.phase.q.val().index() {
                        0 => {
                            if self.ridx.q.val() == 0 {
                                self.tx_crc.d.next = 0xffff.into();
                            }
                            if self.ridx.q.val() == 2 {
                                self.ridx.d.next = 0.into();
                                self.word.d.next = 0.into();
                                if self.cnt_zero.q.val() {
                                    self.phase.d.next = 2.into();
                                } else {
                                    self.phase.d.next = 1.into();
                                }
                            }
                        }
                        1 => {
                            if self.ridx.q.val() == 0 {
                                self.out_word.d.next = self.rd_hold.q.val() << 8;
                            } else {
                                self.out_word.d.next = self.out_word.q.val() << 8;
                            }
                            if self.ridx.q.val() == 3 {
                                self.word.d.next = self.word.q.val() + 1;
                                // In phase 1 count_out is the request's count.
                                if self.w_last.q.val() {
                                    self.phase.d.next = 2.into();
                                }
                            }
                        }
                        _ => {
                            if self.ridx.q.val() == 1 {
                                self.state.d.next = LinkState::Idle;
                                self.ridx.d.next = 0.into();
                            }
                        }
                    }
                }
            }
        }
        // A request cut short by a quiet line is answered with a timeout status.
        if self.timed_out.val() {
            self.status.d.next = self.status_timeout.val();
            self.state.d.next = LinkState::Respond;
        }
        // A response starts with its first byte and word.
        if self.timed_out.val() | self.reply_start.val() {
            self.count_out.d.next = 0.into();
            self.phase.d.next = 0.into();
            self.ridx.d.next = 0.into();
        }
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
