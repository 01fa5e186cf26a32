//! The control link's responder: one response (`protocol::response`: SYNC, status, count, the
//! data words big-endian, CRC-16 over everything after SYNC) handed to the UART transmitter a
//! byte at a time.
//!
//! Inputs: `start` (one cycle, while no response is being sent) with `status` and `count`
//! (0..=32), `word_value` (the word `word_index` names) and the transmitter's `tx_busy`.
//! Outputs: `word_index`, the byte for the transmitter (`tx_data` with `tx_start`) and `done`.
//!
//! Contract: `start` sends `protocol::response(status, words)`, where word i is `word_value`
//! when the responder hands that word's first byte over; it presents i on `word_index` (from a
//! register) from the moment the previous word's last byte is handed over (word 0 from the
//! cycle after `start`), so a read path whose `word_value` follows `word_index` within a byte's
//! transmission time serves it. From the cycle after `start` a byte is handed over in every
//! cycle where `tx_busy` is low (a transmitter busy for at least 2 cycles after each byte);
//! `done` pulses with the last CRC byte, and the responder is idle from the next cycle.
//!
//! Timing: `tx_start` follows only the responder's registers and `tx_busy`, not `start` (so the
//! transmitter's registers do not depend on the logic that decides to answer); every byte comes
//! from registers: the CRC takes each byte into a register in the cycle after it is handed
//! over.

use crate::crc16::Crc16Step;
use rust_hdl::prelude::*;
use spotagg_driver::control::protocol::RESPONSE_SYNC;

/// Which part of the response is being sent.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
enum ResponsePart {
    /// No response.
    Idle,
    /// SYNC, status, count.
    Header,
    /// The data words.
    Words,
    /// The two CRC bytes.
    Crc,
}

/// The responder.
#[derive(LogicBlock)]
pub struct Responder {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Send a response (one cycle).
    pub start: Signal<In, Bit>,
    /// With `start`: its `protocol::Status`.
    pub status: Signal<In, Bits<8>>,
    /// With `start`: its number of data words (0..=32).
    pub count: Signal<In, Bits<8>>,
    /// The data word to send next.
    pub word_index: Signal<Out, Bits<8>>,
    /// Word `word_index` (see the module doc for when it is used).
    pub word_value: Signal<In, Bits<32>>,
    /// The byte handed to the transmitter.
    pub tx_data: Signal<Out, Bits<8>>,
    /// Hand `tx_data` over.
    pub tx_start: Signal<Out, Bit>,
    /// The transmitter is busy (takes no byte).
    pub tx_busy: Signal<In, Bit>,
    /// The last byte is handed over in this cycle.
    pub done: Signal<Out, Bit>,
    part: DFF<ResponsePart>,
    byte_index: DFF<Bits<2>>,
    response_status: DFF<Bits<8>>,
    word_count: DFF<Bits<8>>,
    no_words: DFF<Bit>,
    next_word: DFF<Bits<8>>,
    last_word: DFF<Bit>,
    word_shift: DFF<Bits<32>>,
    crc: DFF<Bits<16>>,
    crc_pending: DFF<Bit>,
    crc_byte: DFF<Bits<8>>,
    crc_step: Crc16Step,
    current_byte: Signal<Local, Bits<8>>,
    byte_in_crc: Signal<Local, Bit>,
    sync: Constant<Bits<8>>,
}

impl Default for Responder {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            start: Default::default(),
            status: Default::default(),
            count: Default::default(),
            word_index: Default::default(),
            word_value: Default::default(),
            tx_data: Default::default(),
            tx_start: Default::default(),
            tx_busy: Default::default(),
            done: Default::default(),
            part: Default::default(),
            byte_index: Default::default(),
            response_status: Default::default(),
            word_count: Default::default(),
            no_words: Default::default(),
            next_word: Default::default(),
            last_word: Default::default(),
            word_shift: Default::default(),
            crc: Default::default(),
            crc_pending: Default::default(),
            crc_byte: Default::default(),
            crc_step: Default::default(),
            current_byte: Default::default(),
            byte_in_crc: Default::default(),
            sync: Constant::new(u64::from(RESPONSE_SYNC).into()),
        }
    }
}

impl Logic for Responder {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            part,
            byte_index,
            response_status,
            word_count,
            no_words,
            next_word,
            last_word,
            word_shift,
            crc,
            crc_pending,
            crc_byte
        );
        self.word_index.next = self.next_word.q.val();
        // The byte at the current position, and whether the CRC covers it.
        self.byte_in_crc.next = true;
        match self.part.q.val() {
            ResponsePart::Words => {
                self.current_byte.next = bit_cast::<8, 32>(self.word_shift.q.val() >> 24);
                if self.byte_index.q.val() == 0 {
                    self.current_byte.next = bit_cast::<8, 32>(self.word_value.val() >> 24);
                }
            }
            ResponsePart::Crc => {
                self.byte_in_crc.next = false;
                self.current_byte.next = bit_cast::<8, 16>(self.crc.q.val());
                if self.byte_index.q.val() == 0 {
                    self.current_byte.next = bit_cast::<8, 16>(self.crc.q.val() >> 8);
                }
            }
            _ => {
                self.current_byte.next = self.word_count.q.val();
                if self.byte_index.q.val() == 1 {
                    self.current_byte.next = self.response_status.q.val();
                }
                if self.byte_index.q.val() == 0 {
                    self.current_byte.next = self.sync.val();
                    self.byte_in_crc.next = false;
                }
            }
        }
        // The CRC takes each byte the cycle after it was handed over (crc_byte), from registers.
        self.crc_pending.d.next = false;
        self.crc_step.crc.next = self.crc.q.val();
        self.crc_step.data.next = self.crc_byte.q.val();
        if self.crc_pending.q.val() {
            self.crc.d.next = self.crc_step.updated.val();
        }
        // Flags from registers, a cycle late: the count and the word index change at most once a
        // byte.
        self.no_words.d.next = self.word_count.q.val() == 0;
        self.last_word.d.next = (self.next_word.q.val() + 1) == self.word_count.q.val();

        self.tx_data.next = self.current_byte.val();
        self.tx_start.next = false;
        self.done.next = false;
        // While idle the status and count follow the inputs, so they are the ones of `start`.
        if self.part.q.val() == ResponsePart::Idle {
            self.response_status.d.next = self.status.val();
            self.word_count.d.next = self.count.val();
        }
        // A byte is handed over whenever a response is under way and the transmitter is free
        // (not gated by `start`, which comes only while idle: the transmitter's registers do not
        // depend on the logic that decides to answer).
        if (self.part.q.val() != ResponsePart::Idle) && !self.tx_busy.val() {
            self.tx_start.next = true;
            if self.byte_in_crc.val() {
                self.crc_pending.d.next = true;
                self.crc_byte.d.next = self.current_byte.val();
            }
            self.byte_index.d.next = self.byte_index.q.val() + 1;
            match self.part.q.val() {
                ResponsePart::Header => {
                    if self.byte_index.q.val() == 0 {
                        self.crc.d.next = 0xffff.into();
                    }
                    if self.byte_index.q.val() == 2 {
                        self.byte_index.d.next = 0.into();
                        self.part.d.next = ResponsePart::Words;
                        if self.no_words.q.val() {
                            self.part.d.next = ResponsePart::Crc;
                        }
                    }
                }
                ResponsePart::Words => {
                    if self.byte_index.q.val() == 0 {
                        self.word_shift.d.next = self.word_value.val() << 8;
                    } else {
                        self.word_shift.d.next = self.word_shift.q.val() << 8;
                    }
                    if self.byte_index.q.val() == 3 {
                        self.next_word.d.next = self.next_word.q.val() + 1;
                        if self.last_word.q.val() {
                            self.part.d.next = ResponsePart::Crc;
                        }
                    }
                }
                _ => {
                    if self.byte_index.q.val() == 1 {
                        self.done.next = true;
                        self.byte_index.d.next = 0.into();
                        self.part.d.next = ResponsePart::Idle;
                    }
                }
            }
        }
        if self.start.val() {
            self.next_word.d.next = 0.into();
            self.byte_index.d.next = 0.into();
            self.part.d.next = ResponsePart::Header;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use spotagg_driver::control::protocol::{response, Status};

    /// Responses of 0..=32 words with every status, through a transmitter busy for 5..=12
    /// cycles after each byte and a read path 0..=4 cycles behind `word_index` (the inputs
    /// other than at `start` and the words not asked for are noise): the bytes handed over are
    /// `protocol::response`, one in each cycle the transmitter is free from the cycle after
    /// `start`, `done` with the last, none after it.
    #[test]
    fn hands_over_the_protocol_response() {
        let mut b = Responder::default();
        b.connect_all();
        let mut rng = Rng(0x7e5_90d);
        let statuses = [
            Status::Ok,
            Status::BadChecksum,
            Status::BadLength,
            Status::UnknownRegister,
            Status::Timeout,
            Status::BadOpcode,
        ];
        let mut busy = 0u64;
        for case in 0..400 {
            let status = statuses[rng.below(statuses.len() as u64) as usize];
            let words: Vec<u32> = (0..rng.below(33)).map(|_| rng.next() as u32).collect();
            let latency = rng.below(5) as usize;
            let mut asked = vec![0usize; latency + 1];
            let (mut sent, mut done_at) = (vec![], vec![]);
            let mut last_byte = 0;
            for cycle in 0..2_000 {
                let start = cycle == 1;
                b.start.next = start;
                b.status.next = if start { u64::from(status as u8) } else { rng.below(256) }.into();
                b.count.next = if start { words.len() as u64 } else { rng.below(256) }.into();
                b.tx_busy.next = busy > 0;
                asked.rotate_right(1);
                crate::step::settle(&mut b);
                asked[0] = b.word_index.val().index();
                let value = words.get(asked[latency]).copied().unwrap_or(rng.next() as u32);
                b.word_value.next = u64::from(value).into();
                crate::step::settle(&mut b);
                let under_way = cycle > 1 && done_at.is_empty();
                let handed = b.tx_start.val();
                assert_eq!(handed, under_way && busy == 0, "case {case}: cycle {cycle}");
                if handed {
                    sent.push(b.tx_data.val().index() as u8);
                    last_byte = cycle;
                }
                if b.done.val() {
                    done_at.push(cycle);
                }
                tick!(&mut b);
                busy = match (handed, busy) {
                    (true, _) => 5 + rng.below(8),
                    (false, 0) => 0,
                    (false, n) => n - 1,
                };
                if !done_at.is_empty() && cycle > last_byte + 20 {
                    break;
                }
            }
            assert_eq!(
                sent,
                response(status, &words),
                "case {case}: {status:?}, {} words, latency {latency}",
                words.len()
            );
            assert_eq!(done_at, vec![last_byte], "case {case}");
        }
    }
}
