//! The retransmission timeout estimator of a worker, in the manner of RFC 6298 §2 (and of
//! quinn-proto's `RttEstimator`): a smoothed round-trip time and its mean deviation from the
//! packets that were answered, and a timeout of `srtt + max(G, 4·rttvar, floor, D)`.
//!
//! - **Karn's rule.** Only a packet sent once gives a sample ([`RttEstimator::sample`] is called
//!   by the worker for those alone): the result of a retransmitted packet may answer any of
//!   its copies.
//! - **Floor and initial value.** The job's `timeout_ms` is the timeout before the first sample
//!   and the floor of the margin over the smoothed round trip (so of the timeout too): on a host
//!   whose CPU is shared (workers, switch and trainer on few cores) the round trip is steady
//!   between scheduling stalls, `4·rttvar` shrinks to nearly nothing, and a timeout of
//!   `srtt + 4·rttvar` would fire on the first stall. [`MAX_BACKOFF`](crate::worker::MAX_BACKOFF)
//!   (or the floor, if larger) is the ceiling.
//! - **Spurious retransmissions.** A result that arrives for a retransmitted packet sooner
//!   than the smallest round trip after its last copy answers an earlier copy: the
//!   retransmission was spurious. The worker reports it ([`RttEstimator::spurious`]) with the
//!   delay the earlier copy saw beyond the smoothed round trip, and that delay D joins the
//!   margin, decaying by 1/8192 a sample (half-life about 5,700 samples).
//! - **Backoff kept until a new sample** (RFC 6298 §5.5, §5.7): a retransmission doubles the
//!   timeout of its packet; the backed-off value then also applies to the packets loaded after
//!   it, until a packet sent once is answered. Without this, a timeout shorter than the path's
//!   round trip would retransmit every packet and, by Karn's rule, never learn the round trip.
//! - **...or a loss recovered** ([`RttEstimator::recovered`]): the result of a retransmitted
//!   packet that arrives at least the smallest round trip and at most the un-backed-off timeout
//!   after its last copy came at the path's usual pace: a frame was lost (this worker's, or in
//!   an aggregation round any other rank's or switch's), the path is not slow, and the backoff
//!   ends (still without a sample). At most [`MAX_RECOVERIES`] times between two samples, so
//!   that on a path whose round trip really grew past the timeout, where an answer may land
//!   just after some copy, the backoff still lasts until a packet sent once measures it.
//! - **Rounds that waited for others** (clipped samples): a result comes when the *last* rank's
//!   contribution has arrived, so a sample of a packet sent once also measures the other ranks'
//!   delays and recoveries. With hundreds of ranks and some loss, nearly every round waits for
//!   someone's retransmission; fed to the mean and the deviation unclipped, such samples made
//!   the timeout grow with every round (SRTT 363 ms over a 10 µs path at 1024 workers in the
//!   cluster simulator). A sample above `max(floor, 2 × the smallest of the last` [`WINDOW`]
//!   `samples)` is taken as that bound; the window lets the bound follow a path that slows for
//!   good.
//!
//! The estimator reads no clock: the worker hands it durations it computed from the times it
//! was given, so that the worker core stays deterministic.

use std::time::Duration;

/// Timer granularity G of RFC 6298 (QUIC's kGranularity): the smallest variance term.
pub const GRANULARITY: Duration = Duration::from_millis(1);

/// Samples whose smallest bounds a sample (twice it, or the floor).
pub const WINDOW: usize = 64;

/// Backoffs [`RttEstimator::recovered`] may end between two samples.
pub const MAX_RECOVERIES: u32 = 8;

/// Smoothed round-trip time, its variation and the retransmission timeout they give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RttEstimator {
    floor: Duration,
    ceiling: Duration,
    srtt: Option<Duration>,
    rttvar: Duration,
    min_rtt: Option<Duration>,
    backoff: Option<Duration>,
    samples: u64,
    /// D: the largest excess delay a spurious retransmission revealed, decaying.
    excess: Duration,
    spurious: u64,
    /// The last [`WINDOW`] samples (a ring, unclipped).
    recent: Vec<Duration>,
    /// Backoffs ended by [`RttEstimator::recovered`] since the last sample.
    recoveries: u32,
}

impl RttEstimator {
    /// An estimator with no sample yet: the timeout is `floor` (the job's `timeout_ms`), and
    /// never more than `max(floor, ceiling)`.
    pub fn new(floor: Duration, ceiling: Duration) -> RttEstimator {
        RttEstimator {
            floor,
            ceiling: ceiling.max(floor),
            srtt: None,
            rttvar: Duration::ZERO,
            min_rtt: None,
            backoff: None,
            samples: 0,
            excess: Duration::ZERO,
            spurious: 0,
            recent: Vec::with_capacity(WINDOW),
            recoveries: 0,
        }
    }

    /// A round-trip time measured on a packet that was sent once (Karn's rule: never on a
    /// retransmitted one), clipped to [`RttEstimator::bound`] once the window has one. Ends any
    /// backoff.
    pub fn sample(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        if self.recent.len() < WINDOW {
            self.recent.push(rtt);
        } else {
            self.recent[self.samples as usize % WINDOW] = rtt;
        }
        self.samples += 1;
        self.recoveries = 0;
        let rtt = rtt.min(self.bound());
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let dev = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + dev) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
        self.backoff = None;
        self.excess -= self.excess / 8192;
    }

    /// A retransmission turned out spurious: the result came for an earlier copy, sent `rtt`
    /// before it arrived. The delay beyond the smoothed round trip widens the margin, and the
    /// backoff is undone (the path answered; the timeout was short, not the packet lost).
    pub fn spurious(&mut self, rtt: Duration) {
        self.spurious += 1;
        self.backoff = None;
        let excess = rtt.saturating_sub(self.srtt.unwrap_or(Duration::ZERO));
        self.excess = self.excess.max(excess);
    }

    /// Spurious retransmissions reported.
    pub fn spurious_count(&self) -> u64 {
        self.spurious
    }

    /// The largest round trip taken as the path's: twice the smallest of the last [`WINDOW`]
    /// samples, or the floor if that is larger (no bound before a sample).
    pub fn bound(&self) -> Duration {
        match self.recent.iter().min() {
            Some(&m) => (m * 2).max(self.floor),
            None => Duration::MAX,
        }
    }

    /// The result of a retransmitted packet came `since_last_copy` after its last copy. If that
    /// is no sooner than the smallest round trip (sooner, the retransmission was spurious) and
    /// no later than [`RttEstimator::base_rto`], a lost frame was recovered at the path's usual
    /// pace: the backoff ends, without a sample (Karn's rule), at most [`MAX_RECOVERIES`] times
    /// between two samples. Returns whether it ended.
    pub fn recovered(&mut self, since_last_copy: Duration) -> bool {
        let usual = self.min_rtt.is_some_and(|m| since_last_copy >= m) && since_last_copy <= self.base_rto();
        if !usual || self.backoff.is_none() || self.recoveries >= MAX_RECOVERIES {
            return false;
        }
        self.backoff = None;
        self.recoveries += 1;
        true
    }

    /// A packet was retransmitted with the (doubled) timeout `rto`: later packets start with
    /// at least that timeout until the next sample.
    pub fn backed_off(&mut self, rto: Duration) {
        let rto = rto.min(self.ceiling);
        self.backoff = Some(self.backoff.map_or(rto, |b| b.max(rto)));
    }

    /// The timeout a packet sent now starts with: [`RttEstimator::base_rto`], or the backoff if
    /// longer.
    pub fn rto(&self) -> Duration {
        let base = self.base_rto();
        self.backoff.map_or(base, |b| b.max(base))
    }

    /// The timeout without backoff: `srtt + max(G, 4·rttvar, floor, D)` within the floor and the
    /// ceiling, or the floor before a sample.
    pub fn base_rto(&self) -> Duration {
        match self.srtt {
            None => self.floor,
            Some(srtt) => {
                let margin = (self.rttvar * 4).max(GRANULARITY).max(self.floor).max(self.excess);
                (srtt + margin).clamp(self.floor, self.ceiling)
            }
        }
    }

    /// The largest timeout (the cap of the doubling).
    pub fn ceiling(&self) -> Duration {
        self.ceiling
    }

    /// The smoothed round-trip time, once there is a sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The round-trip time variation (zero before the first sample).
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The smallest sample so far.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// Samples taken.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn first_sample_and_smoothing_follow_rfc6298() {
        let mut e = RttEstimator::new(ms(20), ms(1000));
        assert_eq!(e.rto(), ms(20));
        e.sample(ms(40));
        // SRTT = R, RTTVAR = R/2, RTO = SRTT + 4·RTTVAR.
        assert_eq!((e.srtt(), e.rttvar(), e.rto()), (Some(ms(40)), ms(20), ms(120)));
        e.sample(ms(80));
        // RTTVAR = 3/4·20 + 1/4·|40 − 80| = 25; SRTT = 7/8·40 + 1/8·80 = 45; RTO = 145.
        assert_eq!((e.srtt(), e.rttvar(), e.rto()), (Some(ms(45)), ms(25), ms(145)));
        assert_eq!((e.min_rtt(), e.samples()), (Some(ms(40)), 2));
    }

    #[test]
    fn the_job_timeout_is_the_floor_and_the_ceiling_holds() {
        let mut e = RttEstimator::new(ms(20), ms(1000));
        for _ in 0..50 {
            e.sample(Duration::from_micros(100));
        }
        // 4·RTTVAR is below a millisecond: the floor is the margin.
        assert!(e.rto() >= ms(20) && e.rto() < ms(21), "{:?}", e.rto());
        // One long sample is clipped to max(floor, 2 × the window's smallest): 20 ms.
        e.sample(ms(5000));
        assert!(e.srtt().unwrap() < ms(3), "{:?}", e.srtt());
        // A path that stays that slow moves the window's smallest, and the ceiling holds.
        for _ in 0..WINDOW {
            e.sample(ms(5000));
        }
        assert_eq!(e.rto(), ms(1000));
        // A floor above the ceiling raises the ceiling.
        let e = RttEstimator::new(ms(3000), ms(1000));
        assert_eq!((e.rto(), e.ceiling()), (ms(3000), ms(3000)));
    }

    #[test]
    fn backoff_lasts_until_the_next_sample() {
        let mut e = RttEstimator::new(ms(20), ms(1000));
        e.backed_off(ms(40));
        e.backed_off(ms(80));
        e.backed_off(ms(40));
        assert_eq!(e.rto(), ms(80));
        e.backed_off(ms(5000));
        assert_eq!(e.rto(), ms(1000));
        e.sample(ms(30));
        assert_eq!(e.rto(), ms(90));
    }

    #[test]
    fn rounds_that_waited_for_other_ranks_do_not_inflate_the_timeout() {
        // A 50 µs path; every other packet sent once is answered only after 40 ms, when some
        // other rank's retransmission completed its round (it was sent under a carried backoff).
        let mut e = RttEstimator::new(ms(1), ms(1000));
        for i in 0..200 {
            e.sample(if i % 2 == 0 { Duration::from_micros(50) } else { ms(40) });
        }
        // Unclipped, SRTT would settle near 20 ms and 4·RTTVAR near 80 ms: a 100 ms timeout.
        // Clipped to max(floor, 2 × 50 µs) = 1 ms: SRTT ≤ 1 ms, RTTVAR ≤ 1 ms.
        assert!(e.srtt().unwrap() <= ms(1) && e.rttvar() <= ms(1), "{:?} {:?}", e.srtt(), e.rttvar());
        assert!(e.rto() <= ms(5), "{:?}", e.rto());
        assert_eq!(e.bound(), ms(1));
    }

    #[test]
    fn a_recovered_loss_ends_the_backoff_a_bounded_number_of_times() {
        let mut e = RttEstimator::new(ms(20), ms(1000));
        assert!(!e.recovered(ms(15)), "no sample yet: no smallest round trip");
        e.sample(ms(10));
        assert_eq!(e.base_rto(), ms(30));
        e.backed_off(ms(120));
        // Sooner than the smallest round trip (a spurious retransmission), later than the base
        // timeout (a slow path, not a loss): the backoff stays.
        assert!(!e.recovered(ms(5)) && !e.recovered(ms(31)));
        assert_eq!(e.rto(), ms(120));
        // About a round trip after the last copy: recovered.
        assert!(e.recovered(ms(12)));
        assert_eq!(e.rto(), ms(30));
        assert!(!e.recovered(ms(12)), "no backoff to end");
        for _ in 1..MAX_RECOVERIES {
            e.backed_off(ms(60));
            assert!(e.recovered(ms(12)));
        }
        e.backed_off(ms(60));
        assert!(!e.recovered(ms(12)), "{MAX_RECOVERIES} ends without a sample: until the next");
        assert_eq!(e.rto(), ms(60));
        e.sample(ms(10));
        e.backed_off(ms(60));
        assert!(e.recovered(ms(12)));
    }

    #[test]
    fn a_spurious_retransmission_widens_the_margin_then_it_decays() {
        let mut e = RttEstimator::new(ms(20), ms(1000));
        for _ in 0..100 {
            e.sample(ms(10));
        }
        let before = e.rto();
        assert!(before >= ms(30) && before < ms(31), "{before:?}");
        // An earlier copy was answered after 70 ms: 60 ms beyond the smoothed round trip.
        e.spurious(ms(70));
        assert_eq!(e.spurious_count(), 1);
        assert!(e.rto() >= ms(69) && e.rto() <= ms(71), "{:?}", e.rto());
        for _ in 0..8192 * 3 {
            e.sample(ms(10));
        }
        assert!(e.rto() < ms(35) && e.rto() >= ms(30), "{:?}", e.rto());
    }
}
