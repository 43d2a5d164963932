//! Per-source answer cache (moka), enabled by `cache_ttl` on a source.
//!
//! The key is the whole encoded sub-query minus its deadline: source, rewritten text, filters,
//! limit, template, parameters and the verified user (subject, groups, attributes). Two users
//! never share an entry, and the full bytes are the key (no hash collisions). Only OK answers are
//! stored, sub-queries with a delegated credential never are, and an entry lives at most
//! `cache_ttl` — so a permission change at the source takes effect within that time. A cached
//! answer says so in its status message.

use std::{sync::Arc, time::Duration};

use fedsearch_proto::{adapter::SubQuery, types::SourceHit};
use prost::Message;
use tokio::time::Instant;

#[derive(Clone, Debug)]
pub struct Cached {
    pub hits: Arc<Vec<SourceHit>>,
    pub stored: Instant,
}

impl Cached {
    pub fn new(hits: Vec<SourceHit>) -> Self {
        Self { hits: Arc::new(hits), stored: Instant::now() }
    }
}

pub type AnswerCache = moka::future::Cache<Vec<u8>, Cached>;

/// Builds the cache of one source.
pub fn new(ttl: Duration, max_entries: u64) -> AnswerCache {
    moka::future::Cache::builder().time_to_live(ttl).max_capacity(max_entries).build()
}

/// The cache key of a sub-query: its encoding without the deadline.
pub fn key(sub_query: &SubQuery) -> Vec<u8> {
    let mut q = sub_query.clone();
    q.deadline = None;
    q.id.clear();
    // Map fields encode in hash-map order; sort them so equal queries give equal keys.
    let mut out = Vec::new();
    let mut params: Vec<_> = q.params.drain().collect();
    params.sort();
    let mut user = q.user.take().unwrap_or_default();
    let mut attrs: Vec<_> = user.attributes.drain().collect();
    attrs.sort();
    user.groups.sort();
    let mut filters = q.filters.take().unwrap_or_default();
    let mut equals: Vec<_> = filters.equals.drain().collect();
    equals.sort();
    q.encode(&mut out).expect("encoding into a Vec cannot fail");
    user.encode(&mut out).expect("encoding into a Vec cannot fail");
    filters.encode(&mut out).expect("encoding into a Vec cannot fail");
    for (k, v) in params.iter().chain(attrs.iter()).chain(equals.iter()) {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use fedsearch_proto::types::UserContext;

    use super::*;

    fn q(subject: &str, groups: &[&str], text: &str) -> SubQuery {
        SubQuery {
            text: text.into(),
            source: "kb".into(),
            user: Some(UserContext {
                subject: subject.into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn keys_differ_per_user_and_query_and_ignore_deadline_and_group_order() {
        let a = q("alice", &["support", "employee"], "支付超时");
        let mut a2 = q("alice", &["employee", "support"], "支付超时");
        a2.deadline = Some(prost_types::Timestamp { seconds: 99, nanos: 0 });
        assert_eq!(key(&a), key(&a2));
        assert_ne!(key(&a), key(&q("carol", &["support", "employee"], "支付超时")));
        assert_ne!(key(&a), key(&q("alice", &["employee"], "支付超时")));
        assert_ne!(key(&a), key(&q("alice", &["support", "employee"], "支付")));
    }
}
