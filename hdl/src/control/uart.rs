//! 8N1 UART receiver and transmitter for the control link.
//!
//! Both take the baud divisor (clocks per bit) as a build parameter: [`DEFAULT_DIVISOR`] is
//! 115200 baud at 125 MHz (the board top, whose core clock is 100 MHz, uses 868); a simulation
//! uses a small divisor (≥ 4) to stay fast.
//!
//! Receiver timing: the line passes a two-flop synchroniser; a low level while idle starts a
//! byte, the start bit is checked again half a bit later (a glitch shorter than half a bit is
//! ignored), then each data bit (LSB first) and the stop bit are sampled one bit time apart,
//! in the middle of the bit. `valid` pulses for one cycle with `data` when the stop bit is
//! high; a low stop bit pulses `frame_error` instead and the byte is dropped. Back-to-back
//! bytes are received (the receiver is idle again from the middle of the stop bit).
//!
//! Transmitter timing: `start` while `busy` is low loads `data`; `busy` is high from the next
//! cycle for exactly 10 bit times (start bit, 8 data bits LSB first, stop bit); the line is
//! high whenever `busy` is low. A `start` while busy is ignored.

use rust_hdl::prelude::*;

/// 125 MHz / 115200 baud, rounded.
pub const DEFAULT_DIVISOR: u32 = 1085;

/// 8N1 receiver.
#[derive(LogicBlock)]
pub struct UartRx {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Serial line (idle high).
    pub line: Signal<In, Bit>,
    /// The byte received (valid while `valid` pulses, held until the next byte).
    pub data: Signal<Out, Bits<8>>,
    /// One-cycle pulse: a byte with a good stop bit.
    pub valid: Signal<Out, Bit>,
    /// One-cycle pulse: a byte with a low stop bit (dropped).
    pub frame_error: Signal<Out, Bit>,
    sync1: DFF<Bit>,
    sync2: DFF<Bit>,
    state: DFF<Bits<2>>,
    count: DFF<Bits<16>>,
    bit_index: DFF<Bits<3>>,
    shift: DFF<Bits<8>>,
    valid_r: DFF<Bit>,
    error_r: DFF<Bit>,
    div_minus_1: Constant<Bits<16>>,
    half: Constant<Bits<16>>,
}

impl UartRx {
    /// A receiver with `divisor` clocks per bit (4..=65535).
    pub fn new(divisor: u32) -> Self {
        assert!((4..=65535).contains(&divisor), "UART divisor {divisor} outside 4..=65535");
        Self {
            clock: Default::default(),
            line: Default::default(),
            data: Default::default(),
            valid: Default::default(),
            frame_error: Default::default(),
            sync1: Default::default(),
            sync2: Default::default(),
            state: Default::default(),
            count: Default::default(),
            bit_index: Default::default(),
            shift: Default::default(),
            valid_r: Default::default(),
            error_r: Default::default(),
            div_minus_1: Constant::new(u64::from(divisor - 1).into()),
            half: Constant::new(u64::from(divisor / 2 - 1).into()),
        }
    }
}

impl Logic for UartRx {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, sync1, sync2, state, count, bit_index, shift, valid_r, error_r);
        self.sync1.d.next = self.line.val();
        self.sync2.d.next = self.sync1.q.val();
        self.data.next = self.shift.q.val();
        self.valid.next = self.valid_r.q.val();
        self.frame_error.next = self.error_r.q.val();
        self.valid_r.d.next = false;
        self.error_r.d.next = false;
        match self.state.q.val().index() {
            0 => {
                // Idle: a low line may be a start bit.
                if !self.sync2.q.val() {
                    self.state.d.next = 1.into();
                    self.count.d.next = self.half.val();
                }
            }
            1 => {
                // Middle of the start bit: still low?
                if self.count.q.val() == 0 {
                    if !self.sync2.q.val() {
                        self.state.d.next = 2.into();
                        self.count.d.next = self.div_minus_1.val();
                        self.bit_index.d.next = 0.into();
                    } else {
                        self.state.d.next = 0.into();
                    }
                } else {
                    self.count.d.next = self.count.q.val() - 1;
                }
            }
            2 => {
                // Data bits, LSB first.
                if self.count.q.val() == 0 {
                    self.shift.d.next = self.shift.q.val() >> 1;
                    if self.sync2.q.val() {
                        self.shift.d.next = (self.shift.q.val() >> 1) | 0x80;
                    }
                    self.count.d.next = self.div_minus_1.val();
                    if self.bit_index.q.val() == 7 {
                        self.state.d.next = 3.into();
                    } else {
                        self.bit_index.d.next = self.bit_index.q.val() + 1;
                    }
                } else {
                    self.count.d.next = self.count.q.val() - 1;
                }
            }
            _ => {
                // Stop bit.
                if self.count.q.val() == 0 {
                    self.state.d.next = 0.into();
                    if self.sync2.q.val() {
                        self.valid_r.d.next = true;
                    } else {
                        self.error_r.d.next = true;
                    }
                } else {
                    self.count.d.next = self.count.q.val() - 1;
                }
            }
        }
    }
}

/// 8N1 transmitter.
#[derive(LogicBlock)]
pub struct UartTx {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Byte to send.
    pub data: Signal<In, Bits<8>>,
    /// Load `data` (ignored while busy).
    pub start: Signal<In, Bit>,
    /// A byte is being sent.
    pub busy: Signal<Out, Bit>,
    /// Serial line (idle high).
    pub line: Signal<Out, Bit>,
    shift: DFF<Bits<10>>,
    bits_left: DFF<Bits<4>>,
    count: DFF<Bits<16>>,
    div_minus_1: Constant<Bits<16>>,
}

impl UartTx {
    /// A transmitter with `divisor` clocks per bit (4..=65535).
    pub fn new(divisor: u32) -> Self {
        assert!((4..=65535).contains(&divisor), "UART divisor {divisor} outside 4..=65535");
        Self {
            clock: Default::default(),
            data: Default::default(),
            start: Default::default(),
            busy: Default::default(),
            line: Default::default(),
            shift: Default::default(),
            bits_left: Default::default(),
            count: Default::default(),
            div_minus_1: Constant::new(u64::from(divisor - 1).into()),
        }
    }
}

impl Logic for UartTx {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, shift, bits_left, count);
        self.busy.next = self.bits_left.q.val() != 0;
        self.line.next = true;
        if self.bits_left.q.val() != 0 {
            self.line.next = self.shift.q.val().get_bit(0);
            if self.count.q.val() == 0 {
                self.shift.d.next = self.shift.q.val() >> 1;
                self.bits_left.d.next = self.bits_left.q.val() - 1;
                self.count.d.next = self.div_minus_1.val();
            } else {
                self.count.d.next = self.count.q.val() - 1;
            }
        } else if self.start.val() {
            // Stop bit (bit 9), data (bits 8..1), start bit (bit 0, low).
            self.shift.d.next = (bit_cast::<10, 8>(self.data.val()) << 1) | 0x200;
            self.bits_left.d.next = 10.into();
            self.count.d.next = self.div_minus_1.val();
        }
    }
}

/// A software model of the far end of a serial line, one call per clock cycle: for tests that
/// step a simulated design (rust-hdl or Verilator) with a small divisor.
#[derive(Debug, Clone)]
pub struct SerialModel {
    divisor: u32,
    out: std::collections::VecDeque<u8>,
    out_bits: u16,
    out_left: u32,
    out_count: u32,
    in_active: bool,
    in_count: u32,
    in_shift: u16,
}

impl SerialModel {
    /// A line at `divisor` clocks per bit.
    pub fn new(divisor: u32) -> Self {
        SerialModel {
            divisor,
            out: Default::default(),
            out_bits: 0,
            out_left: 0,
            out_count: 0,
            in_active: false,
            in_count: 0,
            in_shift: 0,
        }
    }
    /// Queues bytes to send to the design.
    pub fn send(&mut self, bytes: &[u8]) {
        self.out.extend(bytes);
    }
    /// Nothing queued or being sent towards the design.
    pub fn sending(&self) -> bool {
        self.out_left > 0 || !self.out.is_empty()
    }
    /// A byte is being received from the design.
    pub fn receiving(&self) -> bool {
        self.in_active
    }
    /// The level to drive towards the design in this cycle (advances one cycle).
    pub fn drive(&mut self) -> bool {
        if self.out_left == 0 {
            match self.out.pop_front() {
                Some(b) => {
                    self.out_bits = (u16::from(b) << 1) | 0x200;
                    self.out_left = 10;
                    self.out_count = 0;
                }
                None => return true,
            }
        }
        let level = self.out_bits & 1 != 0;
        self.out_count += 1;
        if self.out_count == self.divisor {
            self.out_count = 0;
            self.out_bits >>= 1;
            self.out_left -= 1;
        }
        level
    }
    /// Samples the design's line in this cycle; a whole byte with a good stop bit is returned.
    pub fn sample(&mut self, line: bool) -> Option<u8> {
        if !self.in_active {
            if !line {
                self.in_active = true;
                self.in_count = 0;
                self.in_shift = 0;
            }
            return None;
        }
        self.in_count += 1;
        let d = self.divisor;
        if self.in_count % d == d / 2 {
            let bit = self.in_count / d; // 1..=8 data, 9 stop
            if (1..=8).contains(&bit) {
                self.in_shift |= u16::from(line) << (bit - 1);
            } else if bit == 9 {
                self.in_active = false;
                return line.then_some(self.in_shift as u8);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Transmitter wired to receiver, stepped directly.
    #[derive(LogicBlock)]
    struct Loop {
        clock: Signal<In, Clock>,
        data: Signal<In, Bits<8>>,
        start: Signal<In, Bit>,
        tx: UartTx,
        rx: UartRx,
    }
    impl Logic for Loop {
        #[hdl_gen]
        fn update(&mut self) {
            self.tx.clock.next = self.clock.val();
            self.rx.clock.next = self.clock.val();
            self.tx.data.next = self.data.val();
            self.tx.start.next = self.start.val();
            self.rx.line.next = self.tx.line.val();
        }
    }

    #[test]
    fn loopback_back_to_back_bytes() {
        let div = 5;
        let mut uut = Loop {
            clock: Default::default(),
            data: Default::default(),
            start: Default::default(),
            tx: UartTx::new(div),
            rx: UartRx::new(div),
        };
        uut.connect_all();
        let bytes = [0x00u8, 0xA5, 0xFF, 0x5A, 0x81];
        let mut got = vec![];
        let mut next = 0;
        for _ in 0..(bytes.len() as u32 + 3) * 10 * div {
            crate::step::settle(&mut uut);
            if uut.rx.valid.val() {
                got.push(uut.rx.data.val().index() as u8);
            }
            assert!(!uut.rx.frame_error.val());
            let load = !uut.tx.busy.val() && next < bytes.len();
            if load {
                uut.data.next = (bytes[next] as u64).into();
                uut.start.next = true;
                next += 1;
            } else {
                uut.start.next = false;
            }
            crate::step::settle(&mut uut);
            uut.clock.next = true.into();
            crate::step::settle(&mut uut);
            uut.clock.next = false.into();
        }
        assert_eq!(got, bytes);
    }
}
