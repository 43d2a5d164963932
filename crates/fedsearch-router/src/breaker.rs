//! A per-source circuit breaker that no single user can trip for everyone.
//!
//! - Only failures the *source* caused count ([`Outcome`], classified in [`crate::fanout`]): an
//!   unreachable adapter, a source error not caused by the input, a timeout after the source had
//!   its whole configured budget. A client's short deadline, INVALID_ARGUMENT, DENIED, one user's
//!   401/403/429 and cancellations never count.
//! - Failures an input could have caused open the circuit only when they come from at least
//!   `min_distinct_users` different users in a row; an unreachable adapter opens it whoever asked.
//! - While open, the source is skipped; failures of queries that started before it opened do not
//!   push the re-try time out. After the open period one probe is let through, holding a
//!   [`Permit`] that is released when dropped (so a probe that ends DENIED, SKIPPED or cancelled
//!   frees the slot). A failed probe re-opens the circuit for twice as long, up to `max_open_for`.
//! - [`crate::health`] asks an open source's adapter for its gRPC health every `health_interval`;
//!   SERVING ends the open period at once, so a source that is back is used within about that long.

use std::{
    hash::{Hash, Hasher},
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use crate::config::CircuitBreakerConfig;

#[derive(Debug)]
pub struct CircuitBreaker {
    config: CircuitBreakerConfig,
    state: Mutex<State>,
    /// Transitions into open, half-open and closed, for metrics ([`CircuitBreaker::transitions`]).
    transitions: [AtomicU64; 3],
}

/// What the breaker is doing now, as a metric value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i64)]
pub enum BreakerState {
    Closed = 0,
    HalfOpen = 1,
    Open = 2,
}

#[derive(Debug, Default)]
struct State {
    /// Failures since the last success.
    consecutive: u32,
    /// Of those, failures no input can cause (the adapter was unreachable).
    unreachable: u32,
    /// Distinct users (hashed) among the consecutive failures, at most `min_distinct_users`.
    users: Vec<u64>,
    open: Option<Open>,
    probing: bool,
}

#[derive(Debug, Clone, Copy)]
struct Open {
    until: Instant,
    /// The length of the current open period; doubles after each failed probe.
    period: Duration,
}

/// Who is to blame for a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// Nothing in the request could have caused it (the adapter could not be reached).
    Source,
    /// The source failed, but the input may have played a part.
    Unclear,
}

/// How one sub-query ended, as far as the breaker is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Failure(Blame),
    /// Says nothing about the source's health (denied, cancelled, the caller's short deadline,
    /// invalid input, rate limited).
    Neutral,
}

/// What the breaker says about a query about to start.
#[derive(Debug)]
pub enum Admission<'a> {
    Allowed(Permit<'a>),
    /// Skipped; the circuit re-tries in this long.
    Open(Duration),
}

/// A query the breaker let through. Report its [`Outcome`] with [`Permit::record`]; a permit
/// dropped unrecorded (the query was cancelled) counts as [`Outcome::Neutral`].
#[derive(Debug)]
#[must_use = "record the outcome, or drop the permit to count it as neutral"]
pub struct Permit<'a> {
    breaker: &'a CircuitBreaker,
    probe: bool,
}

impl Permit<'_> {
    pub fn record(mut self, outcome: Outcome, subject: &str) {
        let probe = std::mem::take(&mut self.probe);
        self.breaker.record(outcome, subject, probe);
    }

    /// Whether this query is the half-open probe.
    pub fn is_probe(&self) -> bool {
        self.probe
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.probe {
            self.breaker.record(Outcome::Neutral, "", true);
        }
    }
}

fn user_hash(subject: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    subject.hash(&mut h);
    h.finish()
}

impl CircuitBreaker {
    pub fn new(config: &CircuitBreakerConfig) -> Self {
        Self { config: config.clone(), state: Mutex::new(State::default()), transitions: Default::default() }
    }

    /// Closed, open (skipping), or half-open (the open period is over: a probe may go or is out).
    pub fn state(&self) -> BreakerState {
        let s = self.lock();
        match s.open {
            None => BreakerState::Closed,
            Some(open) if s.probing || Instant::now() >= open.until => BreakerState::HalfOpen,
            Some(_) => BreakerState::Open,
        }
    }

    /// How many times the breaker entered each state since start: `(state, count)`.
    pub fn transitions(&self) -> [(&'static str, u64); 3] {
        let n = |i: usize| self.transitions[i].load(Ordering::Relaxed);
        [("open", n(0)), ("half_open", n(1)), ("closed", n(2))]
    }

    fn count(&self, to: BreakerState) {
        let i = match to {
            BreakerState::Open => 0,
            BreakerState::HalfOpen => 1,
            BreakerState::Closed => 2,
        };
        self.transitions[i].fetch_add(1, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn admit(&self) -> Admission<'_> {
        if self.config.failure_threshold == 0 {
            return Admission::Allowed(Permit { breaker: self, probe: false });
        }
        let mut s = self.lock();
        let now = Instant::now();
        match s.open {
            Some(open) if now < open.until => Admission::Open(open.until - now),
            Some(_) if s.probing => Admission::Open(Duration::ZERO),
            Some(_) => {
                s.probing = true;
                self.count(BreakerState::HalfOpen);
                Admission::Allowed(Permit { breaker: self, probe: true })
            }
            None => Admission::Allowed(Permit { breaker: self, probe: false }),
        }
    }

    /// Whether the circuit is open (the source is being skipped or probed).
    pub fn is_open(&self) -> bool {
        self.lock().open.is_some()
    }

    /// The adapter reports itself healthy: an open circuit lets its probe through now.
    pub fn mark_healthy(&self) {
        let mut s = self.lock();
        if let Some(open) = s.open.as_mut() {
            open.until = open.until.min(Instant::now());
        }
    }

    fn record(&self, outcome: Outcome, subject: &str, probe: bool) {
        let mut s = self.lock();
        if probe {
            s.probing = false;
        }
        match outcome {
            Outcome::Neutral => {}
            Outcome::Success => {
                if s.open.is_some() {
                    self.count(BreakerState::Closed);
                }
                *s = State::default()
            }
            Outcome::Failure(_) if probe => {
                let period = s.open.map_or(self.config.open_for, |o| o.period * 2).min(self.config.max_open_for);
                s.open = Some(Open { until: Instant::now() + period, period });
                self.count(BreakerState::Open);
            }
            // A query that started before the circuit opened: the circuit already knows.
            Outcome::Failure(_) if s.open.is_some() => {}
            Outcome::Failure(blame) => {
                s.consecutive += 1;
                if blame == Blame::Source {
                    s.unreachable += 1;
                }
                let user = user_hash(subject);
                if s.users.len() < self.config.min_distinct_users as usize && !s.users.contains(&user) {
                    s.users.push(user);
                }
                let threshold = self.config.failure_threshold;
                let enough_users = s.users.len() >= self.config.min_distinct_users.max(1) as usize;
                if s.consecutive >= threshold && (enough_users || s.unreachable >= threshold) {
                    let period = self.config.open_for;
                    s.open = Some(Open { until: Instant::now() + period, period });
                    self.count(BreakerState::Open);
                    tracing::warn!(failures = s.consecutive, open_for_ms = period.as_millis() as u64, "circuit opened");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(threshold: u32, open_for_ms: u64, min_users: u32) -> CircuitBreaker {
        CircuitBreaker::new(&CircuitBreakerConfig {
            failure_threshold: threshold,
            open_for: Duration::from_millis(open_for_ms),
            max_open_for: Duration::from_millis(open_for_ms * 4),
            min_distinct_users: min_users,
            ..Default::default()
        })
    }

    fn fail(b: &CircuitBreaker, blame: Blame, user: &str) {
        match b.admit() {
            Admission::Allowed(p) => p.record(Outcome::Failure(blame), user),
            Admission::Open(_) => panic!("expected the breaker to admit"),
        }
    }

    fn allowed(b: &CircuitBreaker) -> bool {
        matches!(b.admit(), Admission::Allowed(_))
    }

    /// Lets the open period pass without sleeping: the health probe ends it.
    fn expire(b: &CircuitBreaker) {
        b.mark_healthy();
    }

    #[test]
    fn opens_after_threshold_failures_from_enough_users_and_closes_after_a_good_probe() {
        let b = breaker(2, 60_000, 2);
        fail(&b, Blame::Unclear, "alice");
        assert!(allowed(&b));
        fail(&b, Blame::Unclear, "bob");
        assert!(matches!(b.admit(), Admission::Open(d) if d > Duration::from_secs(50)));
        expire(&b);
        let Admission::Allowed(probe) = b.admit() else { panic!("one probe after the open period") };
        assert!(probe.is_probe());
        assert!(matches!(b.admit(), Admission::Open(_)), "only one probe at a time");
        probe.record(Outcome::Success, "carol");
        assert!(allowed(&b));
        assert!(!b.is_open());
    }

    #[test]
    fn one_user_alone_cannot_open_it_with_failures_an_input_may_cause() {
        let b = breaker(3, 60_000, 2);
        for _ in 0..50 {
            fail(&b, Blame::Unclear, "mallory");
        }
        assert!(!b.is_open(), "mallory's own failures switch the source off for nobody");
        fail(&b, Blame::Unclear, "alice");
        assert!(b.is_open(), "a second user failing too is the source's problem");
    }

    #[test]
    fn an_unreachable_adapter_opens_it_whoever_asked() {
        let b = breaker(3, 60_000, 2);
        for _ in 0..3 {
            fail(&b, Blame::Source, "alice");
        }
        assert!(b.is_open());
    }

    #[test]
    fn neutral_outcomes_and_successes_do_not_add_up_to_an_open_circuit() {
        let b = breaker(2, 60_000, 1);
        fail(&b, Blame::Unclear, "alice");
        let Admission::Allowed(p) = b.admit() else { panic!() };
        p.record(Outcome::Neutral, "alice");
        let Admission::Allowed(p) = b.admit() else { panic!() };
        p.record(Outcome::Success, "bob");
        fail(&b, Blame::Unclear, "alice");
        assert!(!b.is_open(), "the success reset the count");
    }

    #[test]
    fn a_probe_that_is_dropped_or_neutral_frees_the_slot() {
        let b = breaker(1, 60_000, 1);
        fail(&b, Blame::Source, "alice");
        expire(&b);
        let Admission::Allowed(probe) = b.admit() else { panic!() };
        drop(probe); // cancelled mid-flight
        let Admission::Allowed(probe) = b.admit() else { panic!("the dropped probe released its slot") };
        probe.record(Outcome::Neutral, "bob"); // e.g. DENIED for this user
        assert!(allowed(&b), "a neutral probe released its slot too");
    }

    #[test]
    fn a_failed_probe_reopens_for_twice_as_long_up_to_the_maximum() {
        let b = breaker(1, 10_000, 1);
        fail(&b, Blame::Source, "alice");
        let mut periods = Vec::new();
        for _ in 0..4 {
            expire(&b);
            let Admission::Allowed(probe) = b.admit() else { panic!() };
            probe.record(Outcome::Failure(Blame::Unclear), "alice");
            let Admission::Open(d) = b.admit() else { panic!("a failed probe re-opens") };
            periods.push(d.as_secs_f64().round() as u64);
        }
        assert_eq!(periods, [20, 40, 40, 40]);
    }

    #[test]
    fn failures_of_queries_started_before_it_opened_do_not_push_the_retry_out() {
        let b = breaker(1, 60_000, 1);
        let Admission::Allowed(late) = b.admit() else { panic!() };
        fail(&b, Blame::Source, "alice");
        let Admission::Open(before) = b.admit() else { panic!() };
        late.record(Outcome::Failure(Blame::Source), "bob");
        let Admission::Open(after) = b.admit() else { panic!() };
        assert!(after <= before);
    }

    #[test]
    fn threshold_zero_disables_it() {
        let b = breaker(0, 60_000, 1);
        for _ in 0..10 {
            fail(&b, Blame::Source, "alice");
        }
        assert!(allowed(&b));
    }

    #[test]
    fn state_and_transitions_are_what_the_metrics_report() {
        let b = breaker(2, 0, 1);
        assert_eq!(b.state(), BreakerState::Closed);
        fail(&b, Blame::Source, "alice");
        fail(&b, Blame::Source, "alice");
        // open_for is 0 ms: the open period is over at once, so the breaker is half-open.
        assert_eq!(b.state(), BreakerState::HalfOpen);
        match b.admit() {
            Admission::Allowed(p) => p.record(Outcome::Success, "alice"),
            Admission::Open(_) => panic!("the probe is let through"),
        }
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.transitions(), [("open", 1), ("half_open", 1), ("closed", 1)]);
    }
}
