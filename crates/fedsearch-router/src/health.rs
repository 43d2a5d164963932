//! The active health probe behind the circuit breaker: while a source's circuit is open, its
//! adapter is asked `grpc.health.v1.Health/Check` every `health_interval`; SERVING ends the open
//! period, so the next query probes the source for real. A source that is back is used again
//! within about one interval instead of after the whole open period.

use std::time::Duration;

use crate::registry::{Registry, Source};

/// Starts the probe loop; it ends when the runtime shuts down. `interval` zero: no probe.
pub fn spawn(registry: Registry, interval: Duration) {
    if interval.is_zero() {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let open = registry.all().filter(|s| s.breaker.is_open());
            futures::future::join_all(open.map(|s| probe(s, interval))).await;
        }
    });
}

async fn probe(source: &Source, timeout: Duration) {
    if fedsearch_core::grpc::is_serving(source.channel.clone(), timeout).await {
        tracing::info!(source = source.name(), "adapter reports SERVING; the open circuit lets its probe through");
        source.breaker.mark_healthy();
    }
}
