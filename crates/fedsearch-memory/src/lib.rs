//! The services' tokio runtime, which hands freed memory back to the OS once the process goes idle.
//!
//! The router and the fusion service allocate through mimalloc (v3). mimalloc keeps the pages a
//! thread freed in that thread's heap and returns them to the OS only when the same thread
//! allocates or collects again. A tokio worker that goes idle after a burst of searches therefore
//! holds what the burst freed: the router started at 17 MB and stayed at ~50 MB after a peak run
//! (BENCHMARKS.md, issue 15: "≤ 30 MB idle, memory returned, not held"). Measured on that run:
//! a collect from any other thread frees none of a worker's pages (the router stayed at 51 MB), and
//! a forced collect on every park gets it to 29–30 MB but costs ~18 % more CPU at 1,000 q/s.
//!
//! So the work is done once per idle period, on each worker:
//! - [`runtime`] builds the runtime (multi-threaded, or current-thread with
//!   `FEDSEARCH_RUNTIME=current_thread`) with a park hook that collects when a new
//!   *trim generation* has started since the worker last collected (one atomic load per park
//!   otherwise);
//! - [`return_idle_memory`] starts a thread that samples the workers' busy time every second and,
//!   when a second without work follows work ([`IdleDetector`]), starts a generation and wakes
//!   every worker so each parks again and collects ([`trim`]).
//!
//! Under load no collect runs; a process that goes idle collects once per worker.

use std::{
    cell::Cell,
    sync::atomic::{AtomicU64, AtomicUsize, Ordering},
    time::Duration,
};

use tokio::runtime::{Builder, Handle, Runtime};

/// How often the idle thread samples the workers' busy time.
pub const TICK: Duration = Duration::from_secs(1);

/// Busy time of all workers together, per tick, below which a tick counts as idle (1 % of a core:
/// timers, health checks and the trim itself stay under it).
const IDLE_BUSY: Duration = Duration::from_millis(10);

/// How many times (20 ms apart: up to a second, for a machine so loaded that a woken thread waits to
/// run) [`trim`] wakes the workers before it gives up on the ones that did not collect; those
/// collect at the next trim.
const WAKE_ROUNDS: usize = 50;

/// The current trim generation: a worker collects on its first park after it changes.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Workers that collected in the current generation.
static COLLECTED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The generation this worker last collected in.
    static SEEN: Cell<u64> = const { Cell::new(0) };
}

/// The environment variable that picks the runtime's scheduler: `multi_thread` (the default) or
/// `current_thread`.
pub const RUNTIME_VAR: &str = "FEDSEARCH_RUNTIME";

/// The runtime every fedsearch service runs on, with the park hook of [`return_idle_memory`].
///
/// By default tokio's multi-threaded scheduler, with the workers tokio chooses
/// (`TOKIO_WORKER_THREADS`, else the CPUs the process may use: a pod's CPU limit).
/// `FEDSEARCH_RUNTIME=current_thread` runs every task on the thread that runs the service's
/// `main` instead: on the side-by-side benchmark (one worker per process) it cost 17–23 % less CPU
/// per search and answered ~0.7 ms later at 1,000 q/s (a woken task waits its turn in one FIFO
/// queue; the multi-threaded scheduler runs it next), with 4–8 % fewer searches/s at c=200 with
/// slow sources (BENCHMARKS.md, session 19). Any other value is refused.
pub fn runtime() -> std::io::Result<Runtime> {
    builder_for(std::env::var(RUNTIME_VAR).ok().as_deref())?.build()
}

/// The builder `FEDSEARCH_RUNTIME` (`value`, unset: `None`) names.
fn builder_for(value: Option<&str>) -> std::io::Result<Builder> {
    match value {
        None | Some("" | "multi_thread") => Ok(runtime_builder()),
        Some("current_thread") => Ok(current_thread_builder()),
        Some(other) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{RUNTIME_VAR}={other:?}: expected multi_thread or current_thread"),
        )),
    }
}

/// The multi-threaded runtime's builder, for a caller that sets more (tests set the worker count).
pub fn runtime_builder() -> Builder {
    let mut builder = Builder::new_multi_thread();
    builder.enable_all().on_thread_park(collect_if_asked);
    builder
}

/// The current-thread runtime's builder, with the same park hook.
pub fn current_thread_builder() -> Builder {
    let mut builder = Builder::new_current_thread();
    builder.enable_all().on_thread_park(collect_if_asked);
    builder
}

/// Runs a service's `main` future to its end on [`runtime`], with [`return_idle_memory`] started:
/// what a fedsearch binary's `main` does.
pub fn block_on<F: std::future::Future>(future: F) -> std::io::Result<F::Output> {
    let runtime = runtime()?;
    return_idle_memory(runtime.handle().clone())?;
    Ok(runtime.block_on(future))
}

/// Starts the thread that returns a runtime's freed memory once the process goes idle. It runs for
/// the life of the process; it costs one wake-up a second and reads the runtime's metrics.
pub fn return_idle_memory(handle: Handle) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("idle-memory".into())
        .spawn(move || {
            let mut idle = IdleDetector::default();
            loop {
                std::thread::sleep(TICK);
                if idle.tick(busy_total(&handle)) {
                    trim(&handle);
                }
            }
        })
        .map(drop)
}

/// Starts a trim generation and wakes the runtime's workers until each has collected (or
/// [`WAKE_ROUNDS`] rounds passed). Returns how many workers collected in this generation.
pub fn trim(handle: &Handle) -> usize {
    let workers = handle.metrics().num_workers();
    COLLECTED.store(0, Ordering::Relaxed);
    GENERATION.fetch_add(1, Ordering::Relaxed);
    for _ in 0..WAKE_ROUNDS {
        wake_workers(handle, workers);
        if COLLECTED.load(Ordering::Relaxed) >= workers {
            break;
        }
    }
    COLLECTED.load(Ordering::Relaxed)
}

/// One task per worker, spawned from outside the runtime (so into its shared queue, which any
/// worker may take). Each task holds its worker for a millisecond, so the next task wakes another
/// worker instead of queueing behind it; a woken worker parks again afterwards and collects.
fn wake_workers(handle: &Handle, workers: usize) {
    for _ in 0..workers {
        handle.spawn(async { std::thread::sleep(Duration::from_millis(1)) });
    }
    std::thread::sleep(Duration::from_millis(20));
}

/// Busy time of all the runtime's workers since it started.
fn busy_total(handle: &Handle) -> Duration {
    let metrics = handle.metrics();
    (0..metrics.num_workers()).map(|w| metrics.worker_total_busy_duration(w)).sum()
}

/// The park hook: collect once per generation.
fn collect_if_asked() {
    let generation = GENERATION.load(Ordering::Relaxed);
    if SEEN.get() != generation {
        SEEN.set(generation);
        collect();
        COLLECTED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Frees this thread's empty pages and purges the allocator's free memory, at once.
#[allow(unsafe_code)]
fn collect() {
    // SAFETY: `mi_collect` takes no pointers and has no preconditions; any thread may call it at
    // any time (it is what mimalloc runs itself on thread exit).
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// Tells, from the workers' total busy time sampled once per tick, when the process has just gone
/// idle: the first idle tick after a tick with work.
#[derive(Debug, Default)]
pub struct IdleDetector {
    busy_before: Duration,
    worked: bool,
}

impl IdleDetector {
    /// Feeds one sample (total busy time so far); true when this tick is the one to trim at.
    pub fn tick(&mut self, busy_total: Duration) -> bool {
        let busy = busy_total.saturating_sub(self.busy_before);
        self.busy_before = busy_total;
        if busy >= IDLE_BUSY {
            self.worked = true;
            return false;
        }
        std::mem::take(&mut self.worked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_runtime_variable_picks_the_scheduler_and_refuses_anything_else() {
        use tokio::runtime::RuntimeFlavor;
        let flavor = |v: Option<&str>| builder_for(v).and_then(|mut b| b.build()).map(|r| r.handle().runtime_flavor());
        assert_eq!(flavor(None).unwrap(), RuntimeFlavor::MultiThread);
        assert_eq!(flavor(Some("multi_thread")).unwrap(), RuntimeFlavor::MultiThread);
        assert_eq!(flavor(Some("current_thread")).unwrap(), RuntimeFlavor::CurrentThread);
        let err = flavor(Some("single")).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("FEDSEARCH_RUNTIME=\"single\""), "{err}");
    }

    #[test]
    fn trims_once_when_work_stops() {
        let mut idle = IdleDetector::default();
        // Idle from the start: nothing to give back.
        assert!(!idle.tick(ms(1)));
        assert!(!idle.tick(ms(2)));
        // Work for two ticks: no trim while busy.
        assert!(!idle.tick(ms(500)));
        assert!(!idle.tick(ms(1500)));
        // The first quiet tick trims, the next quiet ones do not.
        assert!(idle.tick(ms(1503)));
        assert!(!idle.tick(ms(1505)));
        assert!(!idle.tick(ms(1506)));
        // A new burst, then quiet again: one more trim.
        assert!(!idle.tick(ms(1900)));
        assert!(idle.tick(ms(1901)));
    }

    #[test]
    fn the_trims_own_cost_does_not_start_another() {
        let mut idle = IdleDetector::default();
        assert!(!idle.tick(ms(800)));
        assert!(idle.tick(ms(801)));
        // The collect ran on the workers during the next tick: a few ms, under the idle bar.
        assert!(!idle.tick(ms(801) + IDLE_BUSY - ms(1)));
    }
}
