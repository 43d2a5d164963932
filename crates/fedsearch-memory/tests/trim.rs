//! A burst of allocations on the workers, then `trim`: every worker collects and the process's
//! resident memory comes back down (without the trim it stays at the burst's peak: mimalloc keeps
//! a worker's freed pages until that worker allocates again).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The tests share the process's resident set and the trim generation: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Resident set of this process in MB (Linux).
fn rss_mb() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("rss field");
    pages * 4096 / (1 << 20)
}

#[test]
fn an_idle_runtime_hands_back_what_a_burst_freed() {
    let _one = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let runtime = fedsearch_memory::runtime_builder().worker_threads(2).build().expect("runtime");
    let handle = runtime.handle().clone();
    let before = rss_mb();
    runtime.block_on(async {
        // 96 MB in 1 KiB blocks, allocated on the workers, each task's freed by its own worker.
        let tasks: Vec<_> = (0..96)
            .map(|i| {
                tokio::spawn(async move {
                    let blocks: Vec<Box<[u8]>> =
                        (0..1024).map(|j| vec![(i + j) as u8; 1024].into_boxed_slice()).collect();
                    tokio::task::yield_now().await;
                    blocks.iter().map(|b| b[0] as u64).sum::<u64>()
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("task");
        }
    });
    let peak = rss_mb();
    // On a machine so loaded that a woken worker waits over a second to run, a later trim
    // (a new generation) asks again, as the idle thread would at its next idle second.
    let collected = (0..10).map(|_| fedsearch_memory::trim(&handle)).find(|&n| n == 2).unwrap_or(0);
    let after = rss_mb();
    assert_eq!(collected, 2, "every worker collects");
    assert!(
        after <= before + 16,
        "memory returned: {before} MB before the burst, {peak} MB after it, {after} MB after the trim"
    );
    drop(runtime);
}

#[test]
fn a_current_thread_runtime_hands_back_what_a_burst_freed() {
    let _one = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let runtime = fedsearch_memory::current_thread_builder().build().expect("runtime");
    let handle = runtime.handle().clone();
    let before = rss_mb();
    let (peak, collected) = runtime.block_on(async move {
        let blocks: Vec<Box<[u8]>> = (0..96 * 1024).map(|j| vec![j as u8; 1024].into_boxed_slice()).collect();
        tokio::task::yield_now().await;
        drop(blocks);
        let peak = rss_mb();
        // The idle thread trims from outside while the runtime's one thread runs the service.
        let trims = tokio::task::spawn_blocking(move || {
            (0..10).map(|_| fedsearch_memory::trim(&handle)).find(|&n| n == 1).unwrap_or(0)
        });
        (peak, trims.await.expect("trim"))
    });
    let after = rss_mb();
    assert_eq!(collected, 1, "the runtime's thread collects");
    // The idle thread tells idle from busy by the busy time the runtime reports.
    let busy = runtime.handle().metrics().worker_total_busy_duration(0);
    assert!(busy > std::time::Duration::ZERO, "busy time is measured: {busy:?}");
    assert!(
        after <= before + 16,
        "memory returned: {before} MB before the burst, {peak} MB after it, {after} MB after the trim"
    );
}
