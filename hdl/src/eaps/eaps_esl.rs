//! The master's pass rule for other EDP frames in hardware (docs/eaps.md §2), the reference
//! node's `EapsNode::master_passes`: [`EslCheck`] checks a received frame as an ESL segment
//! health PDU on the fly, beside the port's `EapsRx`, and [`EslSeen`] is the table of the last
//! EDP sequence passed per sender.
//!
//! [`EslCheck`] accepts exactly what `spotagg_driver::wire::esl::parse_frame` accepts: the
//! destination 00-E0-2B-00-00-04, TPID 0x8100, an 802.3 length of 62..=1500 that the frame
//! holds, LLC/SNAP AA-AA-03 00-E0-2B 00BB, EDP length 54, TLV marker 0x99 type 0x0E length 38,
//! ESL version 1, type 1 (segment health), and a good EDP checksum (the one's-complement sum of
//! bytes 26..80 is 0xffff). At a frame's last byte, when `load` is high, it holds the verdict,
//! the ESL system MAC (bytes 54..60) and the EDP sequence (bytes 32..34) until the next frame
//! it loads. The node drives `load` with the port's `EapsRx` hold condition (nothing held, or
//! what is held taken this clock), so the two hold the same frame.
//!
//! [`EslSeen`] has [`ESL_SEEN`] entries (domain, MAC, sequence, deadline); an entry is live
//! while `now - deadline` is negative as a 32-bit number. `pass` is high when the query's
//! (domain, MAC) has a live entry whose sequence the query's is newer than (16-bit serial
//! order), or when it has none and some entry is empty or not live; `write` then records the
//! query in that entry (the first free one, in index order), deadline `now + age`. Each entry's
//! three answers (live and the query's, newer, free) are registered: `pass` answers the query
//! and `now` of the clock before, so the query and `now` must be held one clock before `pass`
//! is used, and the table read a clock after a write (the node's `Settle` phase does both).

use rust_hdl::prelude::*;

/// Entries of [`EslSeen`]: the reference's `spotagg_spec::eaps::ESL_SEEN`.
pub const ESL_SEEN: usize = 4;

/// Checks a port's received frames as ESL PDUs (docs/eaps.md §2, §11).
#[derive(LogicBlock, Default)]
pub struct EslCheck {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The received byte (the port's stream, as `EapsRx` sees it: one a clock while `valid`).
    pub data: Signal<In, Bits<8>>,
    /// Byte valid.
    pub valid: Signal<In, Bit>,
    /// Last byte of the frame.
    pub last: Signal<In, Bit>,
    /// Hold the verdict of the frame ending this clock.
    pub load: Signal<In, Bit>,
    /// The frame held is a valid ESL PDU.
    pub ok: Signal<Out, Bit>,
    /// Its ESL system MAC.
    pub mac: Signal<Out, Bits<48>>,
    /// Its EDP sequence.
    pub seq: Signal<Out, Bits<16>>,
    count: DFF<Bits<11>>,
    bad: DFF<Bit>,
    hi: DFF<Bits<8>>,
    sum: DFF<Bits<16>>,
    len: DFF<Bits<16>>,
    w_mac: DFF<Bits<48>>,
    w_seq: DFF<Bits<16>>,
    ok_q: DFF<Bit>,
    mac_q: DFF<Bits<48>>,
    seq_q: DFF<Bits<16>>,
    want_byte: Signal<Local, Bits<8>>,
    fixed: Signal<Local, Bit>,
    byte_ok: Signal<Local, Bit>,
    sum17: Signal<Local, Bits<17>>,
    sum_next: Signal<Local, Bits<16>>,
    count_next: Signal<Local, Bits<11>>,
    len_ok: Signal<Local, Bit>,
}

impl Logic for EslCheck {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, count, bad, hi, sum, len, w_mac, w_seq, ok_q, mac_q, seq_q);
        self.ok.next = self.ok_q.q.val();
        self.mac.next = self.mac_q.q.val();
        self.seq.next = self.seq_q.q.val();
        // The constant bytes.
        self.fixed.next = true;
        self.want_byte.next = 0.into();
        match self.count.q.val().index() {
            1 => {
                self.want_byte.next = 0xe0.into();
            }
            2 => {
                self.want_byte.next = 0x2b.into();
            }
            5 => {
                self.want_byte.next = 0x04.into();
            }
            12 => {
                self.want_byte.next = 0x81.into();
            }
            18 => {
                self.want_byte.next = 0xaa.into();
            }
            19 => {
                self.want_byte.next = 0xaa.into();
            }
            20 => {
                self.want_byte.next = 0x03.into();
            }
            22 => {
                self.want_byte.next = 0xe0.into();
            }
            23 => {
                self.want_byte.next = 0x2b.into();
            }
            25 => {
                self.want_byte.next = 0xbb.into();
            }
            29 => {
                self.want_byte.next = 0x36.into();
            }
            42 => {
                self.want_byte.next = 0x99.into();
            }
            43 => {
                self.want_byte.next = 0x0e.into();
            }
            45 => {
                self.want_byte.next = 0x26.into();
            }
            46 => {
                self.want_byte.next = 0x01.into();
            }
            47 => {
                self.want_byte.next = 0x01.into();
            }
            0 => {
                self.want_byte.next = 0.into();
            }
            3 => {
                self.want_byte.next = 0.into();
            }
            4 => {
                self.want_byte.next = 0.into();
            }
            13 => {
                self.want_byte.next = 0.into();
            }
            21 => {
                self.want_byte.next = 0.into();
            }
            24 => {
                self.want_byte.next = 0.into();
            }
            28 => {
                self.want_byte.next = 0.into();
            }
            44 => {
                self.want_byte.next = 0.into();
            }
            _ => {
                self.fixed.next = false;
            }
        }
        self.byte_ok.next = !self.fixed.val() | (self.data.val() == self.want_byte.val());
        // The EDP checksum over bytes 26..80, one 16-bit word at every odd byte.
        self.sum17.next = bit_cast::<17, 16>(self.sum.q.val())
            + bit_cast::<17, 16>((bit_cast::<16, 8>(self.hi.q.val()) << 8) | bit_cast::<16, 8>(self.data.val()));
        self.sum_next.next = self.sum.q.val();
        if (self.count.q.val() >= 26) & (self.count.q.val() < 80) & self.count.q.val().get_bit(0) {
            self.sum_next.next =
                self.sum17.val().get_bits::<16>(0) + bit_cast::<16, 1>(self.sum17.val().get_bit(16).into());
        }
        self.count_next.next = self.count.q.val();
        if self.count.q.val() != 2047 {
            self.count_next.next = self.count.q.val() + 1;
        }
        self.len_ok.next = (self.len.q.val() >= 62)
            & (self.len.q.val() <= 1500)
            & (bit_cast::<16, 11>(self.count_next.val()) >= self.len.q.val() + 18);
        if self.valid.val() {
            self.hi.d.next = self.data.val();
            self.sum.d.next = self.sum_next.val();
            self.count.d.next = self.count_next.val();
            self.bad.d.next = self.bad.q.val() | !self.byte_ok.val();
            if (self.count.q.val() >= 16) & (self.count.q.val() < 18) {
                self.len.d.next = (self.len.q.val() << 8) | bit_cast::<16, 8>(self.data.val());
            }
            if (self.count.q.val() >= 32) & (self.count.q.val() < 34) {
                self.w_seq.d.next = (self.w_seq.q.val() << 8) | bit_cast::<16, 8>(self.data.val());
            }
            if (self.count.q.val() >= 54) & (self.count.q.val() < 60) {
                self.w_mac.d.next = (self.w_mac.q.val() << 8) | bit_cast::<48, 8>(self.data.val());
            }
            if self.last.val() {
                self.count.d.next = 0.into();
                self.bad.d.next = false;
                self.sum.d.next = 0.into();
                if self.load.val() {
                    self.ok_q.d.next = !self.bad.q.val()
                        & self.byte_ok.val()
                        & (self.count_next.val() >= 80)
                        & self.len_ok.val()
                        & (self.sum_next.val() == 0xffff);
                    self.mac_q.d.next = self.w_mac.q.val();
                    self.seq_q.d.next = self.w_seq.q.val();
                }
            }
        }
    }
}

/// The table of ESL senders a master has passed PDUs from (docs/eaps.md §2).
#[derive(LogicBlock, Default)]
pub struct EslSeen {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Time (the node's `now`).
    pub now: Signal<In, Bits<32>>,
    /// The query: domain index.
    pub dom: Signal<In, Bits<4>>,
    /// The query: the ESL PDU's system MAC.
    pub mac: Signal<In, Bits<48>>,
    /// The query: its EDP sequence.
    pub seq: Signal<In, Bits<16>>,
    /// How long an entry written now lives (the domain's fail period).
    pub age: Signal<In, Bits<32>>,
    /// The query passes.
    pub pass: Signal<Out, Bit>,
    /// Record the query (one clock, while `pass`).
    pub write: Signal<In, Bit>,
    e_valid: [DFF<Bit>; ESL_SEEN],
    e_dom: [DFF<Bits<4>>; ESL_SEEN],
    e_mac: [DFF<Bits<48>>; ESL_SEEN],
    e_seq: [DFF<Bits<16>>; ESL_SEEN],
    e_until: [DFF<Bits<32>>; ESL_SEEN],
    dt: [Signal<Local, Bits<32>>; ESL_SEEN],
    live: [Signal<Local, Bit>; ESL_SEEN],
    diff: [Signal<Local, Bits<16>>; ESL_SEEN],
    /// Entry i is live and holds the query's (domain, MAC) (registered).
    is_query: [DFF<Bit>; ESL_SEEN],
    /// The query's sequence is newer than entry i's (registered).
    newer: [DFF<Bit>; ESL_SEEN],
    /// Entry i is empty or lapsed (registered).
    free_q: [DFF<Bit>; ESL_SEEN],
    hit: Signal<Local, Bit>,
    hit_newer: Signal<Local, Bit>,
    free: Signal<Local, Bit>,
    free_i: Signal<Local, Bits<3>>,
    hit_i: Signal<Local, Bits<3>>,
    slot: Signal<Local, Bits<3>>,
}

impl Logic for EslSeen {
    #[hdl_gen]
    fn update(&mut self) {
        // Each entry against the query, registered.
        for i in 0..ESL_SEEN {
            self.e_valid[i].clock.next = self.clock.val();
            self.e_valid[i].d.next = self.e_valid[i].q.val();
            self.e_dom[i].clock.next = self.clock.val();
            self.e_dom[i].d.next = self.e_dom[i].q.val();
            self.e_mac[i].clock.next = self.clock.val();
            self.e_mac[i].d.next = self.e_mac[i].q.val();
            self.e_seq[i].clock.next = self.clock.val();
            self.e_seq[i].d.next = self.e_seq[i].q.val();
            self.e_until[i].clock.next = self.clock.val();
            self.e_until[i].d.next = self.e_until[i].q.val();
            self.is_query[i].clock.next = self.clock.val();
            self.newer[i].clock.next = self.clock.val();
            self.free_q[i].clock.next = self.clock.val();
            self.dt[i].next = self.now.val() - self.e_until[i].q.val();
            self.live[i].next = self.e_valid[i].q.val() & self.dt[i].val().get_bit(31);
            self.is_query[i].d.next = self.live[i].val()
                & (self.e_dom[i].q.val() == self.dom.val())
                & (self.e_mac[i].q.val() == self.mac.val());
            // Newer in 16-bit serial order: (seq - last) as i16 > 0.
            self.diff[i].next = self.seq.val() - self.e_seq[i].q.val();
            self.newer[i].d.next = self.diff[i].val().any() & !self.diff[i].val().get_bit(15);
            self.free_q[i].d.next = !self.live[i].val();
        }
        // The first entry holding the query, else the first free one.
        self.hit.next = false;
        self.hit_newer.next = false;
        self.hit_i.next = 0.into();
        self.free.next = false;
        self.free_i.next = 0.into();
        for i in 0..ESL_SEEN {
            if !self.hit.val() & self.is_query[i].q.val() {
                self.hit.next = true;
                self.hit_i.next = i.to_bits();
                self.hit_newer.next = self.newer[i].q.val();
            }
            if !self.free.val() & self.free_q[i].q.val() {
                self.free.next = true;
                self.free_i.next = i.to_bits();
            }
        }
        self.pass.next = self.free.val();
        self.slot.next = self.free_i.val();
        if self.hit.val() {
            self.pass.next = self.hit_newer.val();
            self.slot.next = self.hit_i.val();
        }
        for i in 0..ESL_SEEN {
            if self.write.val() & self.pass.val() & (self.slot.val().index() == i) {
                self.e_valid[i].d.next = true;
                self.e_dom[i].d.next = self.dom.val();
                self.e_mac[i].d.next = self.mac.val();
                self.e_seq[i].d.next = self.seq.val();
                self.e_until[i].d.next = self.now.val() + self.age.val();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{damage_edp_frame, random_eaps_repr};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use spotagg_driver::wire::eaps::emit_frame;
    use spotagg_driver::wire::esl::{self, EslRepr, EslRole, EslState};
    use spotagg_driver::wire::MacAddr;

    /// [`EslSeen`] has as many entries as the reference node's table.
    #[test]
    fn table_has_the_reference_nodes_size() {
        assert_eq!(ESL_SEEN, spotagg_spec::eaps::ESL_SEEN);
    }

    /// An ESL PDU with random fields.
    fn random_esl(rng: &mut ChaCha8Rng) -> EslRepr {
        EslRepr {
            edp_sequence: rng.gen(),
            control_vlan: rng.gen_range(1..4095),
            system_mac: MacAddr::from_bytes(&rng.gen::<[u8; 6]>()),
            state: EslState::from(rng.gen_range(0..5)),
            role: EslRole::from(rng.gen_range(0..4)),
            link_id: rng.gen(),
            failed_link: rng.gen(),
            rb_id: rng.gen(),
        }
    }

    /// `EslCheck` (the master's pass rule, docs/eaps.md §2) accepts what `esl::parse_frame`
    /// accepts, and holds that PDU's system MAC and EDP sequence, on 400 seeded frames: ESL PDUs
    /// good, with one bit flipped, truncated, padded, with a longer 802.3 length, with a damaged
    /// constant field (checksum fixed up), and EAPS PDUs; a frame that ends while `load` is low
    /// leaves the verdict held before.
    #[test]
    fn esl_check_accepts_what_esl_parse_frame_accepts() {
        let mut rng = ChaCha8Rng::seed_from_u64(20);
        let mut c = EslCheck::default();
        c.connect_all();
        let (mut good, mut bad, mut kept) = (0, 0, 0);
        let mut held: Option<(u16, MacAddr)> = None;
        for case in 0..400 {
            let r = random_esl(&mut rng);
            let mut f = esl::emit_frame(&r, MacAddr::from_bytes(&rng.gen::<[u8; 6]>()), rng.gen_range(0..8));
            match rng.gen_range(0..7) {
                0 | 1 => {}
                k @ 2..=4 => damage_edp_frame(&mut rng, &mut f, k, 62),
                5 => {
                    // A damaged constant field, checksum fixed up so only the field check catches it.
                    let i = [0usize, 5, 12, 13, 16, 18, 20, 22, 24, 25, 26, 28, 29, 42, 43, 44, 45, 46, 47]
                        [rng.gen_range(0..19)];
                    f[i] = rng.gen();
                    f[30..32].copy_from_slice(&[0, 0]);
                    let c = spotagg_driver::wire::checksum::compute(&f[26..80]);
                    f[30..32].copy_from_slice(&c.to_be_bytes());
                }
                _ => f = emit_frame(&random_eaps_repr(&mut rng), MacAddr([2, 0, 0, 0, 0, 1]), 7),
            }
            let load = rng.gen_bool(0.9);
            for (i, &b) in f.iter().enumerate() {
                c.valid.next = true;
                c.data.next = u64::from(b).into();
                c.last.next = i + 1 == f.len();
                c.load.next = load;
                tick!(&mut c);
            }
            c.valid.next = false;
            tick!(&mut c);
            let want = esl::parse_frame(&f).ok().map(|(_, e)| (e.edp_sequence, e.system_mac));
            if load {
                held = want;
                match want {
                    Some(_) => good += 1,
                    None => bad += 1,
                }
            } else {
                kept += 1;
            }
            let got = c
                .ok
                .val()
                .then(|| (c.seq.val().to_u32() as u16, MacAddr::from_bytes(&c.mac.val().to_u64().to_be_bytes()[2..])));
            assert_eq!(got, held, "case {case} (load {load}): {:02x?}", f);
        }
        assert!(good > 100 && bad > 150 && kept > 20, "{good} good, {bad} bad, {kept} not loaded: cases too narrow");
    }
}
