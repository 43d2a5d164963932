//! Admission at the edge: whether a call may start now. Applied alike to every gRPC method and
//! every MCP tool call, after the caller is authenticated.
//!
//! - **Load shedding**: an adaptive concurrency limit. Each search reports whether it answered
//!   within its own budget; an answer that came late means the router is overloaded, and the
//!   limit drops to nine tenths of what was in flight (multiplicative decrease). Answers on time
//!   while the limit is what holds work back raise it by one per limit's worth of answers
//!   (additive increase), up to `limits.max_in_flight`. Over the limit, a call gets
//!   RESOURCE_EXHAUSTED at once, with a `retry-after-ms` hint, instead of a late answer.
//! - **Fairness**: per user (the token's subject), an in-flight cap and an optional token-bucket
//!   rate (governor), so one user's flood never takes the capacity other users' answers need.

use std::{
    num::NonZeroU32,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use fedsearch_core::errors::Reason;
use governor::{DefaultKeyedRateLimiter, Quota};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::Status;

use crate::config::Limits;

/// Shared by every handler; cheap to clone.
#[derive(Clone)]
pub struct Admission {
    inner: Arc<Inner>,
}

struct Inner {
    limit: AdaptiveLimit,
    users: moka::sync::Cache<String, Arc<Semaphore>>,
    per_user_in_flight: usize,
    rate: Option<DefaultKeyedRateLimiter<String>>,
    admitted: AtomicU64,
}

/// Why a call was refused (mapped to RESOURCE_EXHAUSTED in [`Refusal::status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The router as a whole is at its (adaptive) limit.
    Overloaded,
    /// This user has too many calls in flight.
    UserInFlight,
    /// This user called faster than their rate.
    UserRate,
}

impl Refusal {
    pub fn status(self, limit: usize) -> Status {
        let (message, retry_ms) = match self {
            Refusal::Overloaded => {
                (format!("the router is at capacity ({limit} searches in flight); retry shortly"), 200)
            }
            Refusal::UserInFlight => {
                (format!("too many calls of this user in flight (at most {limit}); retry shortly"), 100)
            }
            Refusal::UserRate => ("this user is calling faster than the allowed rate; slow down".to_string(), 1000),
        };
        let reason = match self {
            Refusal::Overloaded => Reason::Overloaded,
            Refusal::UserInFlight | Refusal::UserRate => Reason::RateLimited,
        };
        let mut status = fedsearch_core::errors::exhausted(reason, message, Duration::from_millis(retry_ms));
        status.metadata_mut().insert("retry-after-ms", retry_ms.into());
        status
    }

    /// The metric label of the refusal (`fedsearch.admission.reason`).
    pub fn label(self) -> &'static str {
        match self {
            Refusal::Overloaded => "overloaded",
            Refusal::UserInFlight => "user_in_flight",
            Refusal::UserRate => "user_rate",
        }
    }

    fn refuse(self, limit: usize) -> Status {
        crate::metrics::refused(self.label());
        self.status(limit)
    }
}

/// Holds the caller's place while it runs; dropping it frees the place. Report how a search
/// went with [`Ticket::finish`] so the limit can adapt.
pub struct Ticket {
    inner: Arc<Inner>,
    _user: OwnedSemaphorePermit,
}

impl Ticket {
    /// `late`: the answer went out after the call's own budget (the router is overloaded).
    pub fn finish(self, late: bool) {
        self.inner.limit.observe(late);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.inner.limit.release();
    }
}

impl Admission {
    pub fn new(limits: &Limits) -> Self {
        let per_user = &limits.per_user;
        let rate = NonZeroU32::new(per_user.rate_per_second).map(|rate| {
            let burst = NonZeroU32::new(per_user.burst).unwrap_or(rate);
            governor::RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        let users = moka::sync::Cache::builder().time_to_idle(Duration::from_secs(600)).max_capacity(100_000).build();
        let limit =
            AdaptiveLimit::new(limits.min_in_flight.min(limits.max_in_flight), limits.max_in_flight, limits.adaptive);
        Self {
            inner: Arc::new(Inner {
                limit,
                users,
                per_user_in_flight: per_user.max_in_flight.max(1),
                rate,
                admitted: AtomicU64::new(0),
            }),
        }
    }

    /// Admits one call of `subject`, or says why not.
    pub fn admit(&self, subject: &str) -> Result<Ticket, Status> {
        let inner = &self.inner;
        if let Some(rate) = &inner.rate {
            // The keyed store keeps one entry per user seen; forget idle ones now and then.
            if inner.admitted.fetch_add(1, Ordering::Relaxed) % 4096 == 4095 {
                rate.retain_recent();
            }
            if rate.check_key(&subject.to_string()).is_err() {
                return Err(Refusal::UserRate.refuse(0));
            }
        }
        let per_user = inner.per_user_in_flight;
        let gate = inner.users.get_with_by_ref(subject, || Arc::new(Semaphore::new(per_user)));
        let user = gate.try_acquire_owned().map_err(|_| Refusal::UserInFlight.refuse(per_user))?;
        if !inner.limit.try_acquire() {
            return Err(Refusal::Overloaded.refuse(inner.limit.current()));
        }
        Ok(Ticket { inner: inner.clone(), _user: user })
    }

    /// The current limit on calls in flight.
    pub fn limit(&self) -> usize {
        self.inner.limit.current()
    }

    /// Watches how late the runtime wakes a timer: when a 20 ms sleep ends more than
    /// `max_lag` late, tasks wait for a CPU, answers are about to come late, and the limit drops
    /// now rather than after the first late answer. `max_lag` zero: no watch.
    pub fn watch_runtime_lag(&self, max_lag: Duration) {
        if max_lag.is_zero() {
            return;
        }
        let inner = self.inner.clone();
        tokio::spawn(async move {
            const TICK: Duration = Duration::from_millis(20);
            loop {
                let before = tokio::time::Instant::now();
                tokio::time::sleep(TICK).await;
                if before.elapsed().saturating_sub(TICK) > max_lag {
                    inner.limit.congested();
                }
            }
        });
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.inner.limit.in_flight.load(Ordering::Relaxed)
    }
}

/// An AIMD concurrency limit (see the module doc).
struct AdaptiveLimit {
    in_flight: AtomicUsize,
    state: Mutex<LimitState>,
    min: usize,
    max: usize,
    adaptive: bool,
}

struct LimitState {
    limit: f64,
    last_decrease: Option<Instant>,
}

/// A decrease counts once for the answers that were late together.
const DECREASE_EVERY: Duration = Duration::from_millis(100);

impl AdaptiveLimit {
    fn new(min: usize, max: usize, adaptive: bool) -> Self {
        let max = max.max(1);
        Self {
            in_flight: AtomicUsize::new(0),
            state: Mutex::new(LimitState { limit: max as f64, last_decrease: None }),
            min: min.max(1),
            max,
            adaptive,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LimitState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn current(&self) -> usize {
        self.lock().limit as usize
    }

    fn try_acquire(&self) -> bool {
        let limit = self.current();
        self.in_flight.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < limit).then_some(n + 1)).is_ok()
    }

    fn release(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    fn observe(&self, late: bool) {
        if !self.adaptive {
            return;
        }
        if late {
            self.congested();
            return;
        }
        let in_flight = self.in_flight.load(Ordering::Acquire) as f64;
        let mut s = self.lock();
        if in_flight + 1.0 >= s.limit * 0.9 {
            s.limit = (s.limit + 1.0 / s.limit.max(1.0)).min(self.max as f64);
        }
    }

    /// A sign of overload (a late answer, or the runtime falling behind): the limit drops to
    /// nine tenths of what is in flight, at most once per [`DECREASE_EVERY`].
    fn congested(&self) {
        if !self.adaptive {
            return;
        }
        let in_flight = self.in_flight.load(Ordering::Acquire) as f64;
        let mut s = self.lock();
        let now = Instant::now();
        if s.last_decrease.is_none_or(|t| now.duration_since(t) >= DECREASE_EVERY) {
            s.limit = (s.limit.min(in_flight.max(1.0)) * 0.9).max(self.min as f64);
            s.last_decrease = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PerUserLimits;

    fn limits(max: usize, per_user: usize, rate: u32) -> Limits {
        Limits {
            max_in_flight: max,
            min_in_flight: 2,
            per_user: PerUserLimits { max_in_flight: per_user, rate_per_second: rate, burst: rate },
            ..Default::default()
        }
    }

    #[test]
    fn one_user_at_their_cap_leaves_room_for_the_others() {
        let a = Admission::new(&limits(100, 3, 0));
        let held: Vec<_> = (0..3).map(|_| a.admit("mallory").unwrap()).collect();
        let refused = a.admit("mallory").err().unwrap();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(refused.metadata().get("retry-after-ms").is_some());
        assert!(a.admit("alice").is_ok(), "another user is not held back");
        drop(held);
        assert!(a.admit("mallory").is_ok(), "finished calls free the user's places");
    }

    #[test]
    fn a_user_over_their_rate_is_refused_and_others_are_not() {
        let a = Admission::new(&limits(100, 100, 5));
        let admitted = (0..20).filter(|_| a.admit("mallory").is_ok()).count();
        assert_eq!(admitted, 5, "the burst, then nothing until tokens come back");
        assert!(a.admit("alice").is_ok());
    }

    #[test]
    fn late_answers_shrink_the_limit_to_below_what_was_in_flight_and_on_time_ones_grow_it_back() {
        let a = Admission::new(&limits(100, 1000, 0));
        let tickets: Vec<_> = (0..40).map(|i| a.admit(&format!("u{i}")).unwrap()).collect();
        let mut tickets = tickets.into_iter();
        tickets.next().unwrap().finish(true);
        assert_eq!(a.limit(), 36, "nine tenths of the 40 in flight");
        let refused = (0..10).filter(|i| a.admit(&format!("v{i}")).is_err()).count();
        assert!(refused > 0, "new calls are shed once the limit is reached");
        for t in tickets {
            t.finish(false);
        }
        let before = a.limit();
        // Keep the router busy at its limit with answers on time: the limit grows.
        for round in 0..200 {
            let held: Vec<_> = (0..a.limit()).filter_map(|i| a.admit(&format!("w{round}-{i}")).ok()).collect();
            for t in held {
                t.finish(false);
            }
        }
        assert!(a.limit() > before, "{} > {before}", a.limit());
    }

    #[tokio::test]
    async fn a_runtime_that_falls_behind_lowers_the_limit_before_any_answer_is_late() {
        let a = Admission::new(&limits(100, 1000, 0));
        let _held: Vec<_> = (0..20).map(|i| a.admit(&format!("u{i}")).unwrap()).collect();
        a.watch_runtime_lag(Duration::from_millis(50));
        tokio::task::yield_now().await;
        // Block this (current-thread) runtime: the watcher's 20 ms sleep ends ~200 ms late.
        std::thread::sleep(Duration::from_millis(200));
        for _ in 0..50 {
            if a.limit() < 100 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(a.limit(), 18, "nine tenths of the 20 in flight");
    }

    #[test]
    fn the_limit_never_drops_below_its_floor_and_a_fixed_limit_stays_fixed() {
        let a = Admission::new(&limits(100, 1000, 0));
        for _ in 0..3 {
            let t = a.admit("u").unwrap();
            std::thread::sleep(DECREASE_EVERY);
            t.finish(true);
        }
        assert_eq!(a.limit(), 2);
        let fixed = Admission::new(&Limits { adaptive: false, ..limits(10, 1000, 0) });
        fixed.admit("u").unwrap().finish(true);
        assert_eq!(fixed.limit(), 10);
    }
}
