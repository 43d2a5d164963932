//! A timer that wakes a sleeper at its deadline, to within the kernel's timer slack (~50 µs), for
//! the scripted sources' latencies.
//!
//! tokio's timer wheel ticks in milliseconds and rounds every sleep up to its next tick: a 30 ms
//! source answered after 30–31 ms, so the benchmark's "overhead over the slowest source" held up
//! to a millisecond of the simulator's own. One thread per process keeps every pending deadline
//! in a heap and parks until the earliest (`park_timeout`, a futex wait that Linux runs on
//! high-resolution timers); each sleeper waits on a oneshot channel, so no task blocks a thread.
//! A sleeper wakes the thread only when its deadline comes before every pending one: with one
//! fixed latency, deadlines arrive in order and the thread wakes only to fire them.

use std::{
    cmp::Reverse,
    collections::BinaryHeap,
    sync::{Arc, Mutex},
    thread::Thread,
    time::{Duration, Instant},
};

use tokio::sync::oneshot;

/// One pending deadline; ordered by its deadline, then by when it was asked (`seq`).
struct Pending {
    at: Instant,
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// The pending deadlines, earliest first, and how many were ever asked.
#[derive(Default)]
struct Heap {
    pending: BinaryHeap<Reverse<Pending>>,
    asked: u64,
}

/// The handle sleepers ask through. The thread lives as long as the process (one per
/// `scripted-adapter`).
#[derive(Clone)]
pub struct PreciseTimer {
    heap: Arc<Mutex<Heap>>,
    thread: Thread,
}

impl PreciseTimer {
    /// Starts the timer's thread.
    pub fn start() -> std::io::Result<Self> {
        let heap = Arc::new(Mutex::new(Heap::default()));
        let shared = heap.clone();
        let handle = std::thread::Builder::new().name("precise-timer".into()).spawn(move || run(&shared))?;
        Ok(PreciseTimer { heap, thread: handle.thread().clone() })
    }

    /// Waits until `at` (at once when it has passed).
    pub async fn sleep_until(&self, at: Instant) {
        let (wake, woken) = oneshot::channel();
        let first = {
            let mut heap = self.heap.lock().unwrap_or_else(|e| e.into_inner());
            heap.asked += 1;
            let seq = heap.asked;
            let first = heap.pending.peek().is_none_or(|Reverse(p)| at < p.at);
            heap.pending.push(Reverse(Pending { at, seq, wake }));
            first
        };
        if first {
            self.thread.unpark();
        }
        let _ = woken.await;
    }

    /// Waits `latency` from now.
    pub async fn sleep(&self, latency: Duration) {
        self.sleep_until(Instant::now() + latency).await;
    }
}

/// The thread: wakes every sleeper whose deadline has passed, then parks until the next
/// deadline (or until a sleeper with an earlier one unparks it).
fn run(heap: &Mutex<Heap>) {
    loop {
        let next = {
            let mut heap = heap.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            while heap.pending.peek().is_some_and(|Reverse(p)| p.at <= now) {
                if let Some(Reverse(p)) = heap.pending.pop() {
                    let _ = p.wake.send(());
                }
            }
            heap.pending.peek().map(|Reverse(p)| p.at.saturating_duration_since(now))
        };
        match next {
            Some(wait) => std::thread::park_timeout(wait),
            None => std::thread::park(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_sleeper_wakes_and_none_before_its_deadline() {
        let timer = PreciseTimer::start().unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let start = Instant::now();
        for ms in [30u64, 10, 20, 0] {
            let (timer, tx) = (timer.clone(), tx.clone());
            tokio::spawn(async move {
                let at = start + Duration::from_millis(ms);
                timer.sleep_until(at).await;
                assert!(Instant::now() >= at, "never before the deadline");
                tx.send(ms).unwrap();
            });
        }
        drop(tx);
        let mut woken = Vec::new();
        while let Some(ms) = rx.recv().await {
            woken.push(ms);
        }
        woken.sort_unstable();
        assert_eq!(woken, [0, 10, 20, 30]);
    }

    #[tokio::test]
    async fn a_deadline_already_passed_wakes_at_once() {
        let timer = PreciseTimer::start().unwrap();
        let past = Instant::now().checked_sub(Duration::from_millis(5)).unwrap_or_else(Instant::now);
        timer.sleep_until(past).await;
        timer.sleep(Duration::ZERO).await;
    }
}
