//! The portable core: Ethernet frames in and out as streams, the aggregation switch of
//! docs/switch.md in between.
//!
//! ```text
//! rx stream ─ RxWidth ─ VlanUntag ─ FrameParser ─ Aggregator ─ ResultBuilder ─ VlanTag ─ TxWidth ─ tx stream
//!                                (frame buffer,      │  │   │       (reply buffer,
//!                                 worker search)     │  │   │        worker table)
//!                                        Scoreboard ─┘  │   └─ Counters
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
use crate::config::CoreConfig;
use crate::config_registers::{ConfigBus, ConfigRegisters, JobSettingsSource, WorkerTableWriteSource};
use crate::counters::{CounterPort, Counters};
use crate::frame_parser::DescriptorSource;
use crate::frame_parser::FrameParser;
use crate::lane_adders::LaneAdders;
use crate::result_builder::ResultBuilder;
use crate::scoreboard::Scoreboard;
use crate::slot_memory::SlotMemory;
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
    /// Nothing in flight.
    pub idle: Signal<Out, Bit>,
    rx_width: RxWidth<D>,
    tx_width: TxWidth<D>,
    untag: VlanUntag,
    tag: VlanTag,
    registers: ConfigRegisters,
    parser: FrameParser,
    scoreboard: Scoreboard,
    slot_memory: SlotMemory,
    lane_adders: LaneAdders,
    aggregator: Aggregator,
    result_builder: ResultBuilder,
    counters: Counters,
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
            idle: Default::default(),
            rx_width: RxWidth::new(),
            tx_width: TxWidth::new(),
            untag: Default::default(),
            tag: Default::default(),
            registers: ConfigRegisters::new(config.slots),
            parser: FrameParser::new(),
            scoreboard: Scoreboard::new(config.slots),
            slot_memory: SlotMemory::new(&config),
            lane_adders: Default::default(),
            aggregator: Aggregator::new(config.max_elements()),
            result_builder: ResultBuilder::new(),
            counters: Default::default(),
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
            slot_memory,
            lane_adders,
            aggregator,
            result_builder,
            counters
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
        self.scoreboard.clear.next = self.registers.clear.val();
        self.counters.clear.next = self.registers.clear_counters.val();
        // Parser to aggregator.
        DescriptorSource::join(&mut self.parser.desc, &mut self.aggregator.desc);
        self.parser.buf_read_address.next = self.aggregator.buf_read_address.val();
        self.aggregator.buf_read_data.next = self.parser.buf_read_data.val();
        // Scoreboard.
        self.aggregator.clearing.next = self.scoreboard.clearing.val();
        self.scoreboard.slot.next = self.aggregator.sb_slot.val();
        self.scoreboard.set.next = self.aggregator.sb_set.val();
        self.scoreboard.rank.next = self.aggregator.sb_rank.val();
        self.scoreboard.active.next = self.aggregator.sb_active.val();
        self.scoreboard.commit.next = self.aggregator.sb_commit.val();
        self.aggregator.sb_new.next = self.scoreboard.is_new.val();
        self.aggregator.sb_first.next = self.scoreboard.first.val();
        self.aggregator.sb_last.next = self.scoreboard.last.val();
        self.aggregator.sb_complete.next = self.scoreboard.complete.val();
        // Slot memory and lane adders.
        self.slot_memory.read_address.next = self.aggregator.sm_read_address.val();
        self.aggregator.sm_read_data.next = self.slot_memory.read_data.val();
        self.slot_memory.write_address.next = self.aggregator.sm_write_address.val();
        self.slot_memory.write_data.next = self.aggregator.sm_write_data.val();
        self.slot_memory.write_enable.next = self.aggregator.sm_write_enable.val();
        self.slot_memory.exp_read_address.next = self.aggregator.ex_read_address.val();
        self.aggregator.ex_read_data.next = self.slot_memory.exp_read_data.val();
        self.slot_memory.exp_write_address.next = self.aggregator.ex_write_address.val();
        self.slot_memory.exp_write_data.next = self.aggregator.ex_write_data.val();
        self.slot_memory.exp_write_enable.next = self.aggregator.ex_write_enable.val();
        self.lane_adders.stored.next = self.aggregator.la_stored.val();
        self.lane_adders.incoming.next = self.aggregator.la_incoming.val();
        self.lane_adders.first.next = self.aggregator.la_first.val();
        self.aggregator.la_sum.next = self.lane_adders.sum.val();
        self.lane_adders.exp_stored.next = self.aggregator.la_exp_stored.val();
        self.lane_adders.exp_incoming.next = self.aggregator.la_exp_incoming.val();
        self.lane_adders.exp_active.next = self.aggregator.la_exp_active.val();
        self.aggregator.la_exp_out.next = self.lane_adders.exp_out.val();
        // Aggregator to result builder.
        self.result_builder.buf_write_address.next = self.aggregator.tx_write_address.val();
        self.result_builder.buf_write_data.next = self.aggregator.tx_write_data.val();
        self.result_builder.buf_write_enable.next = self.aggregator.tx_write_enable.val();
        self.result_builder.hdr_write_address.next = self.aggregator.hdr_write_address.val();
        self.result_builder.hdr_write_data.next = self.aggregator.hdr_write_data.val();
        self.result_builder.hdr_write_enable.next = self.aggregator.hdr_write_enable.val();
        self.aggregator.tx_half.next = self.result_builder.load_half.val();
        self.aggregator.tx_free.next = self.result_builder.load_free.val();
        self.result_builder.load.next = self.aggregator.tx_load.val();
        self.result_builder.load_kind.next = self.aggregator.tx_kind.val();
        self.result_builder.load_first.next = self.aggregator.tx_first.val();
        self.result_builder.load_last.next = self.aggregator.tx_last.val();
        self.result_builder.load_nwords.next = self.aggregator.tx_nwords.val();
        self.result_builder.load_last_bytes.next = self.aggregator.tx_last_bytes.val();
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
        self.counters.bucket.next = self.aggregator.ev_bucket.val();
        self.counters.bucket_index.next = self.aggregator.ev_bucket_index.val();
        self.counters.multicast.next = self.aggregator.ev_multicast.val();
        self.counters.multicast_count.next = self.registers.job.workers.val();
        self.counters.retransmit.next = self.aggregator.ev_retransmit.val();
        self.counters.frame_out.next = self.result_builder.frame_sent.val();
        CounterPort::<5>::link(&mut self.counter, &mut self.counters.read);
        self.idle.next = self.idle_r.q.val();
        self.idle_r.d.next = !self.parser.busy.val()
            & self.aggregator.idle.val()
            & !self.result_builder.busy.val()
            & !self.scoreboard.clearing.val()
            & !self.counters.pending.val();
    }
}
