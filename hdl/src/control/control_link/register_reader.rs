//! The control link's read path: the value of register `address` + `word_index`, through two
//! register stages of multiplexing (docs/control.md's register map).
//!
//! Inputs: the request's first register `address` and the response's `word_index`; the
//! sources: the job registers (`job`), `link_state`, `core_idle`, `snapshot_late`, the EAPS
//! node's `eaps_status_data`, and the shadow RAM's write port (`shadow`: the counter
//! snapshot's). Outputs: `value` and `eaps_status_address`.
//!
//! Contract: from the fourth cycle after `address` or `word_index` changes (the sources held
//! from then on), `value` is the value of register `address` + `word_index`: the identity
//! (0x0000..=0x000A: shadow words [`IDENTITY_BASE`].., the RAM's initial contents), the job
//! registers (0x0100..=0x0109, `job`; 0x0106 reads `enabled`), the counters (0x0200..: shadow
//! words 0..C, as the snapshot wrote them), the link states (0x0300..=0x0303, one byte of
//! `link_state` each), the status (0x0400: bit 0 `core_idle`, bit 1 `snapshot_late`; 0x0401: S
//! clamped to the built slots; 0x0402: the clock cycles since power-up, two cycles late), the
//! straggler counters (0x0600..: shadow words [`STRAGGLER_BASE`]..) and the EAPS node's status
//! words (0x0800..: `eaps_status_address` is the offset from the second cycle, the node answers
//! on `eaps_status_data` in the same cycle). Other registers read some value: the request
//! parser lets no read of them through, so each region decodes only the offset bits it needs.
//! A shadow word is not read in the cycle it is written.
//!
//! Timing: `value` and `eaps_status_address` come from registers (the address sum, then each
//! region's value by offset, then the region's; the shadow RAM's output registered once more).
//!
//! [`IDENTITY_BASE`]: super::IDENTITY_BASE
//! [`STRAGGLER_BASE`]: super::STRAGGLER_BASE

use super::counter_snapshot::ShadowWrite;
use super::register_writer::JobReadback;
use super::{IDENTITY_BASE, STRAGGLER_BASE, STRAGGLER_WORDS};
use crate::block_ram::BlockRam;
use rust_hdl::prelude::*;

/// Which first-stage value a register's region reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
enum ValueSource {
    /// The status registers (and any unmapped region).
    Status,
    /// The job registers.
    Job,
    /// The shadow RAM: the identity, the counters, the straggler counters.
    Shadow,
    /// The link states.
    Link,
    /// The EAPS node's status.
    Eaps,
}

// The shadow's read address is the register's offset with the base's bits set.
const _: () = assert!(IDENTITY_BASE.is_multiple_of(16) && STRAGGLER_BASE.is_multiple_of(128));

/// The read path.
#[derive(LogicBlock)]
pub struct RegisterReader {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The request's first register.
    pub address: Signal<In, Bits<16>>,
    /// The word of the response being read.
    pub word_index: Signal<In, Bits<8>>,
    /// The value of register `address` + `word_index` (from the fourth cycle after they change).
    pub value: Signal<Out, Bits<32>>,
    /// The job registers.
    pub job: JobReadback,
    /// Link state of ports 0..=3, one byte each (port 0 in the low byte).
    pub link_state: Signal<In, Bits<32>>,
    /// The core is idle (status bit 0).
    pub core_idle: Signal<In, Bit>,
    /// The last counter snapshot was not quiescent (status bit 1).
    pub snapshot_late: Signal<In, Bit>,
    /// The counter snapshot's writes into the shadow RAM.
    pub shadow: ShadowWrite,
    /// The EAPS status word to read (its offset in 0x0800..).
    pub eaps_status_address: Signal<Out, Bits<8>>,
    /// The EAPS status word.
    pub eaps_status_data: Signal<In, Bits<32>>,
    register_address: DFF<Bits<16>>,
    region: Signal<Local, Bits<8>>,
    offset: Signal<Local, Bits<8>>,
    shadow_ram: BlockRam<8, 32>,
    shadow_word: DFF<Bits<32>>,
    job_value: DFF<Bits<32>>,
    link_states: DFF<Bits<32>>,
    link_value: DFF<Bits<32>>,
    status_value: DFF<Bits<32>>,
    eaps_value: DFF<Bits<32>>,
    value_source: DFF<ValueSource>,
    selected: Signal<Local, Bits<32>>,
    read_value: DFF<Bits<32>>,
    slots_used: DFF<Bits<32>>,
    uptime: DFF<Bits<32>>,
    built_slots: Constant<Bits<32>>,
    identity_base: Constant<Bits<8>>,
    straggler_base: Constant<Bits<8>>,
}

impl RegisterReader {
    /// The read path of a link to a core of `built_slots` slots whose identity registers
    /// 0x0000..=0x000A read `identity`.
    pub fn new(built_slots: usize, identity: &[u32; 11]) -> Self {
        Self {
            clock: Default::default(),
            address: Default::default(),
            word_index: Default::default(),
            value: Default::default(),
            job: Default::default(),
            link_state: Default::default(),
            core_idle: Default::default(),
            snapshot_late: Default::default(),
            shadow: Default::default(),
            eaps_status_address: Default::default(),
            eaps_status_data: Default::default(),
            register_address: Default::default(),
            region: Default::default(),
            offset: Default::default(),
            // The link never reads a shadow word in the cycle it is written (written only while
            // a snapshot is copied, read only while a response is sent).
            shadow_ram: BlockRam::new(STRAGGLER_BASE + STRAGGLER_WORDS)
                .with_contents(IDENTITY_BASE, &identity.map(u64::from))
                .without_collision_check(),
            shadow_word: Default::default(),
            job_value: Default::default(),
            link_states: Default::default(),
            link_value: Default::default(),
            status_value: Default::default(),
            eaps_value: Default::default(),
            value_source: Default::default(),
            selected: Default::default(),
            read_value: Default::default(),
            slots_used: Default::default(),
            uptime: Default::default(),
            built_slots: Constant::new((built_slots as u64).into()),
            identity_base: Constant::new((IDENTITY_BASE as u64).into()),
            straggler_base: Constant::new((STRAGGLER_BASE as u64).into()),
        }
    }
}

impl Logic for RegisterReader {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            register_address,
            shadow_word,
            job_value,
            link_states,
            link_value,
            status_value,
            eaps_value,
            value_source,
            read_value,
            slots_used,
            uptime
        );
        clock!(self, clock, shadow_ram);
        self.uptime.d.next = self.uptime.q.val() + 1;
        self.value.next = self.read_value.q.val();
        // The register at address + word (the sum registered: it follows the word index a
        // cycle late).
        self.register_address.d.next = self.address.val() + bit_cast::<16, 8>(self.word_index.val());
        self.region.next = bit_cast::<8, 16>(self.register_address.q.val() >> 8);
        self.offset.next = bit_cast::<8, 16>(self.register_address.q.val());
        // The counters (region 2) are shadow words 0..C, the identity (region 0) and the
        // straggler counters (region 6) the words from their bases.
        self.shadow_ram.read_address.next = self.offset.val() & 0x3F;
        if self.region.val() == 0 {
            self.shadow_ram.read_address.next = (self.offset.val() & 0x0F) | self.identity_base.val();
        }
        if self.region.val() == 6 {
            self.shadow_ram.read_address.next = (self.offset.val() & 0x7F) | self.straggler_base.val();
        }
        self.shadow_ram.write_address.next = self.shadow.address.val();
        self.shadow_ram.write_data.next = self.shadow.data.val();
        self.shadow_ram.write_enable.next = self.shadow.write.val();
        self.link_states.d.next = self.link_state.val();
        self.eaps_status_address.next = self.offset.val();
        self.eaps_value.d.next = self.eaps_status_data.val();
        // S clamped to the built slots, from a register (S changes only by a write).
        self.slots_used.d.next = bit_cast::<32, 16>(self.job.slots_in_use.val());
        if bit_cast::<32, 16>(self.job.slots_in_use.val()) > self.built_slots.val() {
            self.slots_used.d.next = self.built_slots.val();
        }

        // The first stage: each region's value by offset. Each region decodes only the offset bits
        // its registers need (0x0100..=0x0109: four, 0x0300..=0x0303 and 0x0400..=0x0402: two);
        // the request parser lets no read of another offset through.
        self.job_value.d.next = bit_cast::<32, 1>(self.job.enabled.val().into());
        match self.offset.val().get_bits::<4>(0).index() {
            0 => {
                self.job_value.d.next = bit_cast::<32, 16>(self.job.switch_mac_hi.val());
            }
            1 => {
                self.job_value.d.next = self.job.switch_mac_lo.val();
            }
            2 => {
                self.job_value.d.next = self.job.switch_ip.val();
            }
            3 => {
                self.job_value.d.next = bit_cast::<32, 6>(self.job.workers.val());
            }
            4 => {
                self.job_value.d.next = bit_cast::<32, 3>(self.job.size_code.val());
            }
            5 => {
                self.job_value.d.next = bit_cast::<32, 16>(self.job.slots_in_use.val());
            }
            7 => {
                self.job_value.d.next = bit_cast::<32, 16>(self.job.vlan.val());
            }
            8 => {
                self.job_value.d.next = bit_cast::<32, 25>(self.job.worker_port.val());
            }
            9 => {
                self.job_value.d.next = bit_cast::<32, 8>(self.job.job_number.val());
            }
            _ => {}
        }
        self.link_value.d.next =
            (self.link_states.q.val() >> (bit_cast::<32, 2>(self.offset.val().get_bits::<2>(0)) << 3)) & 0xff;
        self.status_value.d.next = self.uptime.q.val();
        match self.offset.val().get_bits::<2>(0).index() {
            0 => {
                self.status_value.d.next = bit_cast::<32, 1>(self.core_idle.val().into())
                    | (bit_cast::<32, 1>(self.snapshot_late.val().into()) << 1);
            }
            1 => {
                self.status_value.d.next = self.slots_used.q.val();
            }
            _ => {}
        }
        self.value_source.d.next = ValueSource::Status;
        match self.region.val().index() {
            0 => {
                self.value_source.d.next = ValueSource::Shadow;
            }
            1 => {
                self.value_source.d.next = ValueSource::Job;
            }
            2 => {
                self.value_source.d.next = ValueSource::Shadow;
            }
            3 => {
                self.value_source.d.next = ValueSource::Link;
            }
            6 => {
                self.value_source.d.next = ValueSource::Shadow;
            }
            8 => {
                self.value_source.d.next = ValueSource::Eaps;
            }
            _ => {}
        }
        self.shadow_word.d.next = self.shadow_ram.read_data.val();

        // The second stage: the region's value.
        self.selected.next = self.status_value.q.val();
        match self.value_source.q.val() {
            ValueSource::Job => {
                self.selected.next = self.job_value.q.val();
            }
            ValueSource::Shadow => {
                self.selected.next = self.shadow_word.q.val();
            }
            ValueSource::Link => {
                self.selected.next = self.link_value.q.val();
            }
            ValueSource::Eaps => {
                self.selected.next = self.eaps_value.q.val();
            }
            ValueSource::Status => {}
        }
        self.read_value.d.next = self.selected.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;

    const BUILT_SLOTS: u32 = 16;
    const COUNTERS: u16 = 46;

    /// What the registers hold: the sources of the read path.
    struct Registers {
        identity: [u32; 11],
        job: [u32; 10],
        enabled: bool,
        counters: [u32; COUNTERS as usize],
        stragglers: [u32; 128],
        link_state: u32,
        core_idle: bool,
        late: bool,
        eaps_seed: u64,
    }

    /// The EAPS node's status word `offset`.
    fn eaps_status(seed: u64, offset: u64) -> u32 {
        ((seed ^ offset).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
    }

    /// docs/control.md's value of register `register` in cycle `cycle`.
    fn model(r: &Registers, register: u16, cycle: u64) -> u32 {
        let offset = usize::from(register & 0xFF);
        match (register >> 8, offset) {
            (0, _) => r.identity[offset],
            (1, 6) => u32::from(r.enabled),
            (1, _) => r.job[offset],
            (2, _) => r.counters[offset],
            (3, _) => (r.link_state >> (8 * offset)) & 0xFF,
            (4, 0) => u32::from(r.core_idle) | u32::from(r.late) << 1,
            (4, 1) => r.job[5].min(BUILT_SLOTS),
            (4, _) => (cycle - 2) as u32,
            (6, _) => r.stragglers[offset],
            _ => eaps_status(r.eaps_seed, offset as u64),
        }
    }

    /// The readable regions: first register and size.
    const REGIONS: [(u16, u16); 7] =
        [(0x0000, 11), (0x0100, 10), (0x0200, COUNTERS), (0x0300, 4), (0x0400, 3), (0x0600, 128), (0x0800, 256)];

    /// A register a read may name.
    fn register(rng: &mut Rng) -> u16 {
        let (base, n) = REGIONS[rng.below(REGIONS.len() as u64) as usize];
        base + rng.below(u64::from(n)) as u16
    }

    /// Drives the sources of `r` (the shadow RAM's words are written separately).
    fn present(b: &mut RegisterReader, r: &Registers) {
        let j = &mut b.job;
        let v = |x: u32| Bits::<32>::from(u64::from(x));
        j.switch_mac_hi.next = (r.job[0] as u64).into();
        j.switch_mac_lo.next = v(r.job[1]);
        j.switch_ip.next = v(r.job[2]);
        j.workers.next = (r.job[3] as u64).into();
        j.size_code.next = (r.job[4] as u64).into();
        j.slots_in_use.next = (r.job[5] as u64).into();
        j.enabled.next = r.enabled;
        j.vlan.next = (r.job[7] as u64).into();
        j.worker_port.next = (r.job[8] as u64).into();
        j.job_number.next = (r.job[9] as u64).into();
        b.link_state.next = v(r.link_state);
        b.core_idle.next = r.core_idle;
        b.snapshot_late.next = r.late;
    }

    /// Reads of every register the map has, the request's first register and word index split
    /// at random, with the sources changed (and some shadow words written) between reads: from
    /// the fourth cycle on, `value` is the model's value of the register (the uptime two cycles
    /// late), and `eaps_status_address` its offset from the second.
    #[test]
    fn reads_every_register_as_the_model() {
        let mut rng = Rng(0x4ead_e4e4);
        let identity: [u32; 11] = std::array::from_fn(|_| rng.next() as u32);
        let mut b = RegisterReader::new(BUILT_SLOTS as usize, &identity);
        b.connect_all();
        let mut r = Registers {
            identity,
            job: [0; 10],
            enabled: false,
            counters: [0; COUNTERS as usize],
            stragglers: [0; 128],
            link_state: 0,
            core_idle: false,
            late: false,
            eaps_seed: 0,
        };
        let mut cycle = 0u64;
        let mut step = |b: &mut RegisterReader, r: &Registers| {
            crate::step::settle(b);
            let status = eaps_status(r.eaps_seed, b.eaps_status_address.val().index() as u64);
            b.eaps_status_data.next = u64::from(status).into();
            tick!(b);
            cycle += 1;
            cycle
        };
        let mut seen = [0usize; 9];
        for case in 0..3000 {
            if case % 100 == 0 {
                // A snapshot: every counter and scan word written, one a cycle.
                r.counters = std::array::from_fn(|_| rng.next() as u32);
                r.stragglers = std::array::from_fn(|_| rng.next() as u32);
                let words = (0..).zip(r.counters).chain((STRAGGLER_BASE as u64..).zip(r.stragglers));
                for (word, value) in words.collect::<Vec<_>>() {
                    b.shadow.write.next = true;
                    b.shadow.address.next = word.into();
                    b.shadow.data.next = u64::from(value).into();
                    step(&mut b, &r);
                }
                b.shadow.write.next = false;
            }
            // Sources changed now and then, with the register to read.
            if rng.one_in(4) {
                let masks = [0xFFFF, !0, !0, 0x3F, 0x7, 0xFFFF, 0, 0xFFFF, 0xFFFF, 0xFF];
                r.job = std::array::from_fn(|i| rng.next() as u32 & masks[i]);
                r.job[5] = rng.below(2 * u64::from(BUILT_SLOTS)) as u32;
                r.enabled = rng.one_in(2);
                r.link_state = rng.next() as u32;
                r.core_idle = rng.one_in(2);
                r.late = rng.one_in(2);
                r.eaps_seed = rng.next();
            }
            present(&mut b, &r);
            let reg = register(&mut rng);
            let word = rng.below(u64::from((reg & 0xFF).min(31)) + 1) as u16;
            b.address.next = u64::from(reg - word).into();
            b.word_index.next = u64::from(word).into();
            seen[usize::from(reg >> 8)] += 1;
            for k in 1..=4 + rng.below(4) {
                let now = step(&mut b, &r);
                assert_eq!(b.eaps_status_address.val().index() as u16, reg & 0xFF, "case {case}: {reg:#06x}");
                if k >= 4 {
                    let got = b.value.val().index() as u32;
                    assert_eq!(got, model(&r, reg, now), "case {case}: register {reg:#06x}, word {word}, cycle {k}");
                }
            }
        }
        assert!(seen.iter().enumerate().all(|(region, &n)| n > 200 || [5, 7].contains(&region)), "{seen:?}");
    }
}
