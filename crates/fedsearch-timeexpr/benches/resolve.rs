//! Reading the time phrase of one question: `cargo bench -p fedsearch-timeexpr --bench resolve`.
//!
//! The router resolves every question once per search; most questions name no time, so the
//! cost that counts is the scan that finds nothing.

use std::hint::black_box;

use chrono::{TimeZone, Utc};
use criterion::{Criterion, criterion_group, criterion_main};

const QUESTIONS: &[(&str, &str)] = &[
    ("zh, no time (the load generator's question)", "支付超时问题"),
    ("zh, time", "上个月华东仓有哪些订单还没发货？"),
    ("en, no time", "What is the current refund policy for damaged items shipped to customers?"),
    ("en, time", "Which incidents hit the payment gateway between March 3 and last Friday?"),
];

fn resolve(c: &mut Criterion) {
    let as_of = Utc.with_ymd_and_hms(2026, 11, 20, 8, 0, 0).unwrap();
    let tz = fedsearch_timeexpr::parse_tz("Asia/Shanghai").unwrap();
    let mut group = c.benchmark_group("resolve");
    for (name, question) in QUESTIONS {
        group.bench_function(*name, |b| b.iter(|| fedsearch_timeexpr::resolve(black_box(question), as_of, tz)));
    }
    group.finish();
}

criterion_group!(benches, resolve);
criterion_main!(benches);
