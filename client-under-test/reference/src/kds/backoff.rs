//! Kuma's reconnect backoff (`pkg/core/runtime/component/resilient.go:73-127`,
//! sethvargo/go-retry): `WithJitter(5s, WithCappedDuration(1m,
//! NewExponential(5s)))`. Attempt n waits min(5 s·2^(n-1), 60 s), then a
//! uniform jitter of ±5 s (the jitter is outside the cap: 60±5 s), never
//! below 0; the count starts over after a run longer than 1 min. Unlike
//! gRPC's backoff (`crate::backoff`) the jitter is absolute, not a factor.
//! The jitter comes from the caller's seeded generator.

use std::time::Duration;

use crate::backoff::SplitMix64;

/// The first wait, before jitter.
pub const BASE: Duration = Duration::from_secs(5);
/// The longest wait, before jitter.
pub const MAX: Duration = Duration::from_secs(60);
/// The jitter's half-width: a wait is its nominal value ± this.
pub const JITTER: Duration = Duration::from_secs(5);
/// A connection that lived longer than this starts the count over.
pub const RESET_AFTER: Duration = Duration::from_secs(60);

#[derive(Clone, Debug, Default)]
pub struct KumaBackoff {
    /// Attempts since the last reset.
    attempts: u32,
}

impl KumaBackoff {
    pub fn new() -> Self {
        Self::default()
    }

    /// The nominal wait of the next attempt, without jitter.
    pub fn nominal(&self) -> Duration {
        // 5 s·2^4 = 80 s is past the cap already: no larger shift is needed,
        // and none can overflow.
        let doublings = self.attempts.min(4);
        (BASE * 2u32.pow(doublings)).min(MAX)
    }

    /// The wait before the next attempt, in whole milliseconds (timers run
    /// at millisecond resolution, and timelines read better).
    pub fn next_delay(&mut self, rng: &mut SplitMix64) -> Duration {
        let nominal = self.nominal().as_millis() as f64;
        self.attempts = self.attempts.saturating_add(1);
        let jitter = (rng.next_f64() * 2.0 - 1.0) * JITTER.as_millis() as f64;
        Duration::from_millis((nominal + jitter).round().max(0.0) as u64)
    }

    /// A run that lasted `lived` ended: a long one starts the count over.
    pub fn ended_after(&mut self, lived: Duration) {
        if lived > RESET_AFTER {
            self.attempts = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_5s_to_60s_within_5s_of_jitter() {
        let mut rng = SplitMix64::new(11);
        let mut backoff = KumaBackoff::new();
        let nominal = [5, 10, 20, 40, 60, 60, 60, 60];
        for (attempt, secs) in nominal.into_iter().enumerate() {
            let delay = backoff.next_delay(&mut rng).as_secs_f64();
            let low = (secs as f64 - 5.0).max(0.0);
            assert!(
                delay >= low && delay <= secs as f64 + 5.0,
                "attempt {}: {delay} s, nominal {secs} s",
                attempt + 1
            );
        }
    }

    #[test]
    fn the_jitter_spans_both_sides_and_the_first_wait_0_to_10s() {
        let firsts: Vec<f64> = (0..200)
            .map(|seed| {
                KumaBackoff::new()
                    .next_delay(&mut SplitMix64::new(seed))
                    .as_secs_f64()
            })
            .collect();
        assert!(firsts.iter().all(|d| (0.0..=10.0).contains(d)));
        assert!(firsts.iter().any(|d| *d < 2.0) && firsts.iter().any(|d| *d > 8.0));
    }

    #[test]
    fn only_a_run_longer_than_a_minute_resets_the_count() {
        let mut rng = SplitMix64::new(3);
        let mut backoff = KumaBackoff::new();
        backoff.next_delay(&mut rng);
        backoff.next_delay(&mut rng);
        assert_eq!(backoff.nominal(), Duration::from_secs(20));
        backoff.ended_after(Duration::from_secs(60));
        assert_eq!(backoff.nominal(), Duration::from_secs(20));
        backoff.ended_after(Duration::from_secs(61));
        assert_eq!(backoff.nominal(), BASE);
    }

    #[test]
    fn same_seed_same_waits() {
        let run = |seed| {
            let mut rng = SplitMix64::new(seed);
            let mut backoff = KumaBackoff::new();
            (0..6)
                .map(|_| backoff.next_delay(&mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }
}
