//! Per-source answer cache (moka), enabled by `cache_ttl` on a source.
//!
//! The key is a canonical encoding of the sub-query minus its deadline ([`key`]): source,
//! rewritten text, filters, limit, template, parameters and the verified user (subject, groups,
//! attributes). Two users never share an entry, and the full bytes are the key (no hash
//! collisions). Only OK answers are
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

/// The cache key of a sub-query: a canonical, typed encoding of everything that can change its
/// answer. Each part is framed by a tag and its length, maps are sorted, and the deadline and id
/// are left out — so equal queries give equal keys and different ones never collide. `as_of` is
/// part of it only when the caller gave one: "now" may drift within the cache's TTL, which is
/// what a TTL means.
pub fn key(sub_query: &SubQuery, explicit_as_of: bool) -> Vec<u8> {
    let mut q = sub_query.clone();
    q.deadline = None;
    q.id.clear();
    if !explicit_as_of {
        q.as_of = None;
    }
    let mut params: Vec<_> = q.params.drain().collect();
    params.sort();
    let mut user = q.user.take().unwrap_or_default();
    user.delegated_credential = None;
    let mut attrs: Vec<_> = user.attributes.drain().collect();
    attrs.sort();
    user.groups.sort();
    let mut filters = q.filters.take().unwrap_or_default();
    let mut equals: Vec<_> = filters.equals.drain().collect();
    equals.sort();
    let mut key = KeyWriter::default();
    key.part(Part::SubQuery, &q.encode_to_vec());
    key.part(Part::User, &user.encode_to_vec());
    key.part(Part::Filters, &filters.encode_to_vec());
    for (part, pairs) in [(Part::Param, &params), (Part::Attribute, &attrs), (Part::Equals, &equals)] {
        for (k, v) in pairs {
            key.part(part, k.as_bytes());
            key.part(part, v.as_bytes());
        }
    }
    key.out
}

#[derive(Clone, Copy)]
#[repr(u8)]
enum Part {
    SubQuery = 1,
    User = 2,
    Filters = 3,
    Param = 4,
    Attribute = 5,
    Equals = 6,
}

#[derive(Default)]
struct KeyWriter {
    out: Vec<u8>,
}

impl KeyWriter {
    fn part(&mut self, part: Part, bytes: &[u8]) {
        self.out.push(part as u8);
        self.out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.out.extend_from_slice(bytes);
    }
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
        assert_eq!(key(&a, false), key(&a2, false));
        assert_ne!(key(&a, false), key(&q("carol", &["support", "employee"], "支付超时"), false));
        assert_ne!(key(&a, false), key(&q("alice", &["employee"], "支付超时"), false));
        assert_ne!(key(&a, false), key(&q("alice", &["support", "employee"], "支付"), false));
    }

    #[test]
    fn distinct_requests_never_share_a_key() {
        // The user's groups and the filter's doc_types are both field 2 of their messages; an
        // attribute and a same-named parameter are both a (name, value) pair.
        let mut groups = q("alice", &["x"], "t");
        let mut doc_types = q("alice", &[], "t");
        doc_types.filters = Some(fedsearch_proto::types::Filters { doc_types: vec!["x".into()], ..Default::default() });
        assert_ne!(key(&groups, false), key(&doc_types, false));
        groups.user.as_mut().unwrap().groups.clear();
        groups.user.as_mut().unwrap().attributes.insert("a".into(), "b".into());
        let mut param = q("alice", &[], "t");
        param.params.insert("a".into(), "b".into());
        assert_ne!(key(&groups, false), key(&param, false));
        let mut two = q("alice", &[], "t");
        two.params.insert("ab".into(), String::new());
        let mut split = q("alice", &[], "t");
        split.params.insert("a".into(), "b".into());
        assert_ne!(key(&two, false), key(&split, false), "lengths frame every part");
    }

    #[test]
    fn as_of_counts_only_when_the_caller_gave_it() {
        let mut a = q("alice", &[], "昨天的工单");
        let mut b = a.clone();
        a.as_of = Some(prost_types::Timestamp { seconds: 1_000, nanos: 0 });
        b.as_of = Some(prost_types::Timestamp { seconds: 1_001, nanos: 0 });
        assert_eq!(key(&a, false), key(&b, false), "now drifting within the TTL is the same question");
        assert_ne!(key(&a, true), key(&b, true), "an explicit as_of is another question");
    }
}
