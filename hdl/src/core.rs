//! The portable core: Ethernet frames in and out as streams, the aggregation switch of
//! docs/switch.md in between.
//!
//! ```text
//! rx stream ─ RxWidth ─ VlanUntag ─ FrameParser ─ Aggregator ─ ResultBuilder ─ VlanTag ─ TxWidth ─ tx stream
//!                                (frame buffer,      │  │   │       (reply buffer,
//!                                 worker search)     │  │   │        worker table)
//!                                  Session, Scoreboard ─┘  │   └─ Counters
//!                                        SlotMemory ────┤
//!                                        LaneAdders ────┘
//! ConfigRegisters (register bus) ─ everything
//! ```
//!
//! Streams: `D = 8·W` bits a beat, first byte in the top lane, `last` on the last beat with
//! `bytes` (1..=W) valid leading bytes; a transfer happens when `valid` and `ready` are both
//! high at a rising edge. No preamble, no FCS (the board's MAC handles them).
//!
//! Guarantees: store and forward, so a frame is decided only once it is whole and slot state
//! is touched only by valid contributions; three frames in flight (one being received, one
//! being aggregated, one or two being sent); when a stage is full the core lowers `rx.ready`
//! rather than dropping anything. `idle` is high when nothing is in flight; it comes from a
//! flip-flop, so it follows the blocks' state one cycle late.
//!
//! Control: configuration writes on `cfg` (see `config_registers`), counters read
//! combinationally on `counter` (see `counters`). In the Verilog, an interface's ports are
//! named `rx$valid`, `cfg$write`, `counter$address` and so on.
//!
//! Limits, where the core is narrower than docs/switch.md: frames are stored up to 2048
//! bytes (every standard Ethernet frame), so an ICMP echo request whose reply would exceed
//! 2044 bytes gets a reply cut at 511 words; the counters are 32 bits wide and wrap (the
//! host-side `Counters` are 64-bit); a frame longer than 65535 bytes is measured modulo 2^16.

use crate::aggregator::Aggregator;
use crate::block_ram::RamClient;
use crate::config::CoreConfig;
use crate::config_registers::{ConfigBus, ConfigRegisters, JobSettingsSource, WorkerTableWriteSource};
use crate::counters::{CounterEventSource, CounterPort, Counters};
use crate::frame_parser::DescriptorSource;
use crate::frame_parser::FrameParser;
use crate::lane_adders::{LaneAdderClient, LaneAdders};
use crate::result_builder::{ReplyQueueClient, ResultBuilder};
use crate::scoreboard::{Scoreboard, ScoreboardClient};
use crate::session::Session;
use crate::slot_memory::SlotMemory;
use crate::straggler::{StragglerRead, Stragglers};
use crate::stream_width::{RxWidth, TxWidth};
use crate::vlan::{VlanTag, VlanUntag};
use crate::word_stream::{BeatSink, BeatSource, WordSource};
use rust_hdl::prelude::*;

/// The aggregation core with `D`-bit stream beats (`D = 8 · width_bytes`).
#[derive(LogicBlock)]
pub struct Core<const D: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The received frames, `D` bits a beat.
    pub rx: BeatSink<D>,
    /// The frames sent, `D` bits a beat.
    pub tx: BeatSource<D>,
    /// The job-configuration bus (see `config_registers`).
    pub cfg: ConfigBus,
    /// The counters, read combinationally by index (see `counters`).
    pub counter: CounterPort<5>,
    /// The straggler counters (`crate::straggler`; zero unless `CoreConfig::stragglers`).
    pub straggler: StragglerRead,
    /// Nothing in flight.
    pub idle: Signal<Out, Bit>,
    rx_width: RxWidth<D>,
    tx_width: TxWidth<D>,
    untag: VlanUntag,
    tag: VlanTag,
    registers: ConfigRegisters,
    parser: FrameParser,
    scoreboard: Scoreboard,
    session: Session,
    slot_memory: SlotMemory,
    lane_adders: LaneAdders,
    aggregator: Aggregator,
    result_builder: ResultBuilder,
    counters: Counters,
    stragglers: Stragglers,
    idle_r: DFF<Bit>,
    _config: CoreConfig,
}

impl<const D: usize> Core<D> {
    /// A core for a checked configuration; panics when `D` is not `8 · width_bytes`.
    pub fn new(config: CoreConfig) -> Self {
        assert_eq!(D, 8 * config.width_bytes, "Core<{D}> does not match width_bytes = {}", config.width_bytes);
        Self {
            clock: Default::default(),
            rx: Default::default(),
            tx: Default::default(),
            cfg: Default::default(),
            counter: Default::default(),
            straggler: Default::default(),
            idle: Default::default(),
            rx_width: RxWidth::new(),
            tx_width: TxWidth::new(),
            untag: Default::default(),
            tag: Default::default(),
            registers: ConfigRegisters::new(config.slots, config.tree),
            parser: FrameParser::new(),
            scoreboard: Scoreboard::new(config.slots),
            session: Default::default(),
            slot_memory: SlotMemory::new(&config),
            lane_adders: Default::default(),
            aggregator: Aggregator::new(config.max_elements()),
            result_builder: ResultBuilder::new(),
            counters: Default::default(),
            stragglers: Stragglers::new(config.stragglers),
            idle_r: Default::default(),
            _config: config,
        }
    }

    /// The build parameters.
    pub fn config(&self) -> &CoreConfig {
        &self._config
    }
}

impl<const D: usize> Logic for Core<D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, idle_r);
        clock!(
            self,
            clock,
            rx_width,
            tx_width,
            untag,
            tag,
            registers,
            parser,
            scoreboard,
            session,
            slot_memory,
            lane_adders,
            aggregator,
            result_builder,
            counters,
            stragglers
        );
        // Receive stream.
        self.rx_width.in_valid.next = self.rx.valid.val();
        self.rx_width.in_data.next = self.rx.data.val();
        self.rx_width.in_last.next = self.rx.last.val();
        self.rx_width.in_bytes.next = self.rx.bytes.val();
        self.rx.ready.next = self.rx_width.in_ready.val();
        WordSource::join(&mut self.rx_width.word, &mut self.untag.word_in);
        WordSource::join(&mut self.untag.word_out, &mut self.parser.word);
        self.untag.vid.next = self.registers.vlan_tci.val().get_bits::<12>(0);
        self.parser.tag_stripped.next = self.untag.stripped.val();
        self.parser.tag_short.next = self.untag.short.val();
        self.parser.tag_mismatch.next = self.untag.mismatch.val();
        // Configuration.
        ConfigBus::link(&mut self.cfg, &mut self.registers.bus);
        JobSettingsSource::join(&mut self.registers.job, &mut self.parser.job);
        JobSettingsSource::join(&mut self.registers.job, &mut self.aggregator.job);
        JobSettingsSource::join(&mut self.registers.job, &mut self.result_builder.job);
        WorkerTableWriteSource::join(&mut self.registers.wt, &mut self.parser.wt);
        WorkerTableWriteSource::join(&mut self.registers.wt, &mut self.result_builder.wt);
        self.scoreboard.workers.next = self.registers.job.workers.val();
        self.scoreboard.has_parent.next = self.registers.job.parent_on.val();
        // A reconfiguration or the opening of a session (docs/switch.md §2.1) clears every slot.
        self.scoreboard.clear.next = self.registers.clear.val() | self.session.clear_slots.val();
        // Sessions.
        self.session.configure.next = self.registers.clear.val();
        self.session.job_number.next = self.registers.job.job_number.val();
        self.session.workers.next = self.registers.job.workers.val();
        self.session.rank.next = self.aggregator.sb.rank.val();
        self.session.is_join.next = self.aggregator.sb.set.val();
        self.session.proposal.next = self.aggregator.ss_proposal.val();
        self.session.commit.next = self.aggregator.ss_commit.val();
        self.aggregator.ss_open.next = self.session.open.val();
        self.aggregator.ss_epoch.next = self.session.epoch.val();
        self.aggregator.ss_counted.next = self.session.counted.val();
        self.aggregator.ss_silent.next = self.session.silent.val();
        self.aggregator.ss_opens.next = self.session.opens.val();
        self.counters.clear.next = self.registers.clear_counters.val();
        // Parser to aggregator.
        DescriptorSource::join(&mut self.parser.desc, &mut self.aggregator.desc);
        self.parser.buf_read_address.next = self.aggregator.buf_read_address.val();
        self.aggregator.buf_read_data.next = self.parser.buf_read_data.val();
        // Scoreboard, slot memory and lane adders.
        ScoreboardClient::join(&mut self.aggregator.sb, &mut self.scoreboard.lookup);
        RamClient::<16, 32>::join(&mut self.aggregator.sm, &mut self.slot_memory.values);
        RamClient::<6, 32>::join(&mut self.aggregator.ex, &mut self.slot_memory.exponents);
        LaneAdderClient::join(&mut self.aggregator.la, &mut self.lane_adders.port);
        // Aggregator to result builder.
        ReplyQueueClient::join(&mut self.aggregator.replies, &mut self.result_builder.queue);
        // Transmit stream.
        WordSource::join(&mut self.result_builder.word, &mut self.tag.word_in);
        WordSource::join(&mut self.tag.word_out, &mut self.tx_width.word);
        self.tag.tci.next = self.registers.vlan_tci.val();
        self.tx.valid.next = self.tx_width.out_valid.val();
        self.tx.data.next = self.tx_width.out_data.val();
        self.tx.last.next = self.tx_width.out_last.val();
        self.tx.bytes.next = self.tx_width.out_bytes.val();
        self.tx_width.out_ready.next = self.tx.ready.val();
        // Counters.
        CounterEventSource::join(&mut self.aggregator.events, &mut self.counters.events);
        self.counters.multicast_count.next = self.registers.job.workers.val();
        self.counters.frame_out.next = self.result_builder.frame_sent.val();
        CounterPort::<5>::link(&mut self.counter, &mut self.counters.read);
        // Straggler counters: the scoreboard's commits.
        self.stragglers.clear.next = self.registers.clear_counters.val();
        // (A parent result's commit, docs/switch.md §6, is no contribution.)
        self.stragglers.events.commit.next = self.aggregator.sb.commit.val() & !self.aggregator.sb.parent.val();
        self.stragglers.events.is_new.next = self.scoreboard.lookup.is_new.val();
        self.stragglers.events.first.next = self.scoreboard.lookup.first.val();
        self.stragglers.events.last.next = self.scoreboard.lookup.last.val();
        self.stragglers.events.rank.next = self.aggregator.sb.rank.val();
        self.stragglers.events.slot.next = self.aggregator.sb.slot.val();
        self.stragglers.events.set.next = self.aggregator.sb.set.val();
        StragglerRead::link(&mut self.straggler, &mut self.stragglers.read);
        self.idle.next = self.idle_r.q.val();
        self.idle_r.d.next = !self.parser.busy.val()
            & self.untag.empty.val()
            & self.aggregator.idle.val()
            & !self.result_builder.busy.val()
            & !self.scoreboard.lookup.clearing.val()
            & !self.counters.pending.val()
            & !self.stragglers.busy.val();
    }
}
