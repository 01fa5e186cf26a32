//! The board top's core clock, a property of the build: the PLL's `CLKOS`, the 500 MHz VCO
//! ([`crate::ecp5::BOARD_PLL`]'s, which also gives the 125 MHz transmit clock on `CLKOP`)
//! divided by [`CoreClock::clkos_div`]. Everything on the board that counts core clocks is
//! computed from it here: the UART's clocks per bit, the MDC half period, the clocks per µs of
//! the EAPS time base, the LPF constraint of the core clock net and the PLL's `CLKOS` divider.
//!
//! The design contract (`shared/design.md` §5) asks the core to keep up with back-to-back frames on
//! both ports at the board's clock, not for a given frequency. A board top with one core runs
//! it at 100 MHz; with two (two jobs, docs/switch.md §8, the i9's LFE5U-45F) at 83.33 MHz,
//! where the two-core netlist meets timing and the board simulation at that period still drops
//! nothing of a line-rate trace (docs/performance.md, "Two jobs on the i9").

/// The VCO of the board top's PLL, MHz (25 MHz × 5 × 4).
pub const VCO_MHZ: u32 = 500;

/// The control link's line rate.
pub const UART_BAUD: u32 = 115_200;

/// The MDIO clock's ceiling (IEEE 802.3 clause 22: at most 2.5 MHz).
pub const MDC_MAX_HZ: u32 = 2_500_000;

/// The board top's core clock: [`VCO_MHZ`] / `clkos_div`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreClock {
    /// The PLL's `CLKOS` divider from the VCO.
    pub clkos_div: u32,
}

impl CoreClock {
    /// 100 MHz (500 / 5): the boards with one core.
    pub const MHZ_100: CoreClock = CoreClock { clkos_div: 5 };

    /// 83.33 MHz (500 / 6): the boards with two cores.
    pub const MHZ_83: CoreClock = CoreClock { clkos_div: 6 };

    /// The core clock of a board top with `jobs` cores: 100 MHz for one, 83.33 MHz for two.
    pub const fn for_jobs(jobs: usize) -> CoreClock {
        if jobs > 1 {
            CoreClock::MHZ_83
        } else {
            CoreClock::MHZ_100
        }
    }

    /// The frequency in Hz (whole: the VCO divided by a whole divider, rounded down).
    pub const fn hz(self) -> u32 {
        VCO_MHZ * 1_000_000 / self.clkos_div
    }

    /// The frequency in MHz.
    pub fn mhz(self) -> f64 {
        f64::from(VCO_MHZ) / f64::from(self.clkos_div)
    }

    /// The period in ps (exact: 2 ns of the VCO per divider step).
    pub const fn period_ps(self) -> u64 {
        (self.clkos_div as u64) * 1_000_000 / VCO_MHZ as u64
    }

    /// Clocks per UART bit at [`UART_BAUD`], rounded to the nearest.
    pub const fn baud_divisor(self) -> u32 {
        (self.hz() + UART_BAUD / 2) / UART_BAUD
    }

    /// Clocks per half MDC period: the fewest that keep MDC at most [`MDC_MAX_HZ`].
    pub const fn mdc_half_period(self) -> u32 {
        self.hz().div_ceil(2 * MDC_MAX_HZ)
    }

    /// Clocks per µs, rounded to the nearest (the EAPS time base's unit; 83 at 83.33 MHz, a µs
    /// 0.4 % short).
    pub const fn clocks_per_us(self) -> u32 {
        (self.hz() + 500_000) / 1_000_000
    }

    /// The frequency as the LPF's `FREQUENCY NET` and the PLL's `FREQUENCY_PIN_CLKOS` state it:
    /// a whole number of MHz, else six decimals (83.333333).
    pub fn mhz_text(self) -> String {
        if VCO_MHZ.is_multiple_of(self.clkos_div) {
            (VCO_MHZ / self.clkos_div).to_string()
        } else {
            format!("{:.6}", self.mhz())
        }
    }
}

impl Default for CoreClock {
    fn default() -> Self {
        CoreClock::MHZ_100
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// What the control plane derives from each build's core clock: 115200 baud within 0.1 %,
    /// MDC at most 2.5 MHz, the µs within 0.5 %; the 100 MHz figures are the ones the board had
    /// as constants (868, 20, 100).
    #[test]
    fn derived_divisors() {
        assert_eq!(CoreClock::MHZ_100.period_ps(), 10_000);
        assert_eq!(CoreClock::MHZ_83.period_ps(), 12_000);
        assert_eq!(CoreClock::MHZ_100.baud_divisor(), 868);
        assert_eq!(CoreClock::MHZ_100.mdc_half_period(), 20);
        assert_eq!(CoreClock::MHZ_100.clocks_per_us(), 100);
        assert_eq!(CoreClock::MHZ_83.baud_divisor(), 723);
        assert_eq!(CoreClock::MHZ_83.mdc_half_period(), 17);
        assert_eq!(CoreClock::MHZ_83.clocks_per_us(), 83);
        assert_eq!(CoreClock::MHZ_83.mhz_text(), "83.333333");
        assert_eq!(CoreClock::MHZ_100.mhz_text(), "100");
        for c in [CoreClock::MHZ_100, CoreClock::MHZ_83, CoreClock::for_jobs(1), CoreClock::for_jobs(2)] {
            let baud = c.mhz() * 1e6 / f64::from(c.baud_divisor());
            assert!((baud / f64::from(UART_BAUD) - 1.0).abs() < 1e-3, "{c:?}: {baud} baud");
            let mdc = c.mhz() * 1e6 / f64::from(2 * c.mdc_half_period());
            assert!(mdc <= f64::from(MDC_MAX_HZ) && mdc > 0.9 * f64::from(MDC_MAX_HZ), "{c:?}: MDC {mdc} Hz");
            let us = f64::from(c.clocks_per_us()) / c.mhz();
            assert!((us - 1.0).abs() < 5e-3, "{c:?}: a µs of {us} µs");
        }
        assert_eq!(CoreClock::for_jobs(1), CoreClock::MHZ_100);
        assert_eq!(CoreClock::for_jobs(2), CoreClock::MHZ_83);
    }
}
