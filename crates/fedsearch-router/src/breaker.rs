//! A per-source circuit breaker: after `threshold` consecutive failures the source is skipped
//! (state CIRCUIT_OPEN) for `open_for`; then one probe query is let through, and its outcome
//! closes the circuit again or re-opens it.

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

#[derive(Debug)]
pub struct CircuitBreaker {
    threshold: u32,
    open_for: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    consecutive_failures: u32,
    open_until: Option<Instant>,
    probing: bool,
}

/// What the breaker says about a query about to start.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    Allowed,
    /// Skipped; the circuit re-tries in this long.
    Open(Duration),
}

impl CircuitBreaker {
    pub fn new(threshold: u32, open_for: Duration) -> Self {
        Self { threshold, open_for, state: Mutex::new(State::default()) }
    }

    pub fn admit(&self) -> Admission {
        if self.threshold == 0 {
            return Admission::Allowed;
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match s.open_until {
            Some(until) if Instant::now() < until => Admission::Open(until - Instant::now()),
            Some(_) if s.probing => Admission::Open(Duration::ZERO),
            Some(_) => {
                s.probing = true;
                Admission::Allowed
            }
            None => Admission::Allowed,
        }
    }

    pub fn record_success(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *s = State::default();
    }

    pub fn record_failure(&self) {
        if self.threshold == 0 {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.consecutive_failures += 1;
        s.probing = false;
        if s.consecutive_failures >= self.threshold {
            s.open_until = Some(Instant::now() + self.open_for);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_threshold_and_closes_after_a_good_probe() {
        let b = CircuitBreaker::new(2, Duration::from_millis(30));
        b.record_failure();
        assert_eq!(b.admit(), Admission::Allowed);
        b.record_failure();
        assert!(matches!(b.admit(), Admission::Open(_)));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(b.admit(), Admission::Allowed, "one probe after open_for");
        assert!(matches!(b.admit(), Admission::Open(_)), "only one probe at a time");
        b.record_success();
        assert_eq!(b.admit(), Admission::Allowed);
    }

    #[test]
    fn a_failed_probe_reopens() {
        let b = CircuitBreaker::new(1, Duration::from_millis(20));
        b.record_failure();
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.admit(), Admission::Allowed);
        b.record_failure();
        assert!(matches!(b.admit(), Admission::Open(d) if d > Duration::from_millis(5)));
    }

    #[test]
    fn threshold_zero_disables_it() {
        let b = CircuitBreaker::new(0, Duration::from_secs(60));
        for _ in 0..10 {
            b.record_failure();
        }
        assert_eq!(b.admit(), Admission::Allowed);
    }
}
