//! Per-source answer cache, enabled by `cache_ttl` on a source: a local tier (moka) in every
//! router, and optionally a shared tier (Redis, `shared_cache`) so router replicas reuse each
//! other's answers.
//!
//! The key is a canonical encoding of the sub-query minus its deadline ([`key`]): source,
//! rewritten text, filters, limit, template, parameters and the verified user (subject, groups,
//! attributes). Two users never share an entry, and the full bytes are the key (no hash
//! collisions: the shared tier files an entry under the key's SHA-256 but stores the key with it
//! and serves it only to the very same key). Only OK answers are stored, sub-queries with a
//! delegated credential never are, and an entry lives at most `cache_ttl` in either tier — so a
//! permission change at the source takes effect within that time. A cached answer says so in its
//! status message. The shared tier is best effort: every call to it is bounded by its timeout,
//! and an unreachable Redis means no shared tier, never a failed search.

use std::{
    sync::{Arc, OnceLock},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use fedsearch_proto::{
    adapter::{HitBatch, SubQuery},
    types::SourceHit,
};
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

/// One source's cache: the local tier, and the shared tier when the router has one.
#[derive(Clone)]
pub struct AnswerCache {
    local: moka::future::Cache<Vec<u8>, Cached>,
    shared: SharedHandle,
    ttl: Duration,
}

impl std::fmt::Debug for AnswerCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerCache").field("ttl", &self.ttl).field("shared", &self.shared.get().is_some()).finish()
    }
}

/// The router's shared tier, set once at start-up and seen by every source's cache.
pub type SharedHandle = Arc<OnceLock<SharedCache>>;

/// Builds the cache of one source.
pub fn new(ttl: Duration, max_entries: u64, shared: SharedHandle) -> AnswerCache {
    AnswerCache {
        local: moka::future::Cache::builder().time_to_live(ttl).max_capacity(max_entries).build(),
        shared,
        ttl,
    }
}

impl AnswerCache {
    pub async fn get(&self, key: &[u8]) -> Option<Cached> {
        if let Some(hit) = self.local.get(key).await {
            return Some(hit);
        }
        let shared = self.shared.get()?;
        let (hits, age) = shared.get(key).await?;
        let cached =
            Cached { hits: Arc::new(hits), stored: Instant::now().checked_sub(age).unwrap_or_else(Instant::now) };
        self.local.insert(key.to_vec(), cached.clone()).await;
        Some(cached)
    }

    pub async fn insert(&self, key: Vec<u8>, value: Cached) {
        if let Some(shared) = self.shared.get() {
            shared.put(&key, &value.hits, self.ttl);
        }
        self.local.insert(key, value).await;
    }
}

/// The connection, once made; whether a call is connecting now; and when connecting last failed
/// (no new try for a second).
#[derive(Default)]
struct Connection {
    manager: Option<redis::aio::ConnectionManager>,
    connecting: bool,
    failed_at: Option<Instant>,
}

/// Clears `connecting` when the call that connects ends, finished or dropped mid-way.
struct Connecting<'a>(&'a std::sync::Mutex<Connection>);

impl Drop for Connecting<'_> {
    fn drop(&mut self) {
        let mut c = self.0.lock().unwrap_or_else(|e| e.into_inner());
        c.connecting = false;
        if c.manager.is_none() {
            c.failed_at = Some(Instant::now());
        }
    }
}

/// The shared tier: Redis, through a lazily-connected, self-reconnecting connection manager.
#[derive(Clone)]
pub struct SharedCache {
    client: redis::Client,
    conn: Arc<std::sync::Mutex<Connection>>,
    prefix: String,
    timeout: Duration,
}

impl std::fmt::Debug for SharedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: never printed.
        f.debug_struct("SharedCache").field("prefix", &self.prefix).field("timeout", &self.timeout).finish()
    }
}

impl SharedCache {
    /// Checks the URL now; connects on first use.
    pub fn new(config: &crate::config::SharedCacheSection) -> anyhow::Result<Self> {
        let client = redis::Client::open(config.redis_url.as_str())
            .map_err(|e| anyhow::anyhow!("shared_cache.redis_url is not a Redis URL: {e}"))?;
        Ok(Self { client, conn: Arc::default(), prefix: config.key_prefix.clone(), timeout: config.timeout })
    }

    fn redis_key(&self, key: &[u8]) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(key);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("{}{hex}", self.prefix)
    }

    /// A connection, connecting (within the timeout) if there is none yet. One call connects at a
    /// time, and no lock is held while it does: the others answer without the cache meanwhile.
    async fn connection(&self) -> Option<redis::aio::ConnectionManager> {
        {
            let mut c = self.conn.lock().unwrap_or_else(|e| e.into_inner());
            let recently_failed = c.failed_at.is_some_and(|t| t.elapsed() < Duration::from_secs(1));
            if c.manager.is_some() || c.connecting || recently_failed {
                return c.manager.clone();
            }
            c.connecting = true;
        }
        let _connecting = Connecting(&self.conn);
        let manager = match tokio::time::timeout(self.timeout * 4, self.client.get_connection_manager()).await {
            Ok(Ok(m)) => Some(m),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "shared cache unreachable; answering without it");
                None
            }
            Err(_) => {
                tracing::warn!("shared cache did not connect in time; answering without it");
                None
            }
        };
        self.conn.lock().unwrap_or_else(|e| e.into_inner()).manager.clone_from(&manager);
        manager
    }

    async fn get(&self, key: &[u8]) -> Option<(Vec<SourceHit>, Duration)> {
        let mut conn = self.connection().await?;
        let redis_key = self.redis_key(key);
        let read = async move {
            let bytes: Option<Vec<u8>> = redis::cmd("GET").arg(&redis_key).query_async(&mut conn).await.ok()?;
            bytes
        };
        let bytes = tokio::time::timeout(self.timeout, read).await.ok()??;
        decode_entry(&bytes, key)
    }

    /// Stores in the background: the answer never waits for Redis.
    fn put(&self, key: &[u8], hits: &[SourceHit], ttl: Duration) {
        let (this, redis_key, value) = (self.clone(), self.redis_key(key), encode_entry(key, hits));
        tokio::spawn(async move {
            let Some(mut conn) = this.connection().await else { return };
            let mut set = redis::cmd("SET");
            set.arg(&redis_key).arg(value).arg("PX").arg(ttl.as_millis().max(1) as u64);
            let write = set.query_async::<()>(&mut conn);
            if !matches!(tokio::time::timeout(this.timeout, write).await, Ok(Ok(()))) {
                tracing::debug!("shared cache write failed or timed out");
            }
        });
    }
}

/// An entry: the full key (checked on read), when it was stored, and the hits.
fn encode_entry(key: &[u8], hits: &[SourceHit]) -> Vec<u8> {
    let stored_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let batch = HitBatch { sub_query_id: String::new(), hits: hits.to_vec() }.encode_to_vec();
    let mut out = Vec::with_capacity(16 + key.len() + batch.len());
    out.extend_from_slice(&(key.len() as u64).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&stored_ms.to_le_bytes());
    out.extend_from_slice(&batch);
    out
}

/// The hits and age of an entry, only if it was stored under exactly `key`.
fn decode_entry(bytes: &[u8], key: &[u8]) -> Option<(Vec<SourceHit>, Duration)> {
    let len = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize;
    let stored_key = bytes.get(8..8usize.checked_add(len)?)?;
    if stored_key != key {
        return None;
    }
    let rest = &bytes[8 + len..];
    let stored_ms = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
    let batch = HitBatch::decode(&rest[8..]).ok()?;
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    Some((batch.hits, Duration::from_millis(now_ms.saturating_sub(stored_ms))))
}

/// The cache key of a sub-query: a canonical, typed encoding of everything that can change its
/// answer. Each part is framed by a tag and its length, maps are sorted, and the deadline, id
/// and trace context are left out — so equal queries give equal keys and different ones never collide. `as_of` is
/// part of it only when the caller gave one: "now" may drift within the cache's TTL, which is
/// what a TTL means.
pub fn key(sub_query: &SubQuery, explicit_as_of: bool) -> Vec<u8> {
    let mut q = sub_query.clone();
    q.deadline = None;
    q.id.clear();
    q.trace_context.clear();
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

    /// A Redis that accepts connections and never answers: connecting hangs until the timeout.
    async fn silent_redis() -> (tokio::net::TcpListener, SharedCache) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let section = crate::config::SharedCacheSection {
            redis_url: format!("redis://{}/", listener.local_addr().unwrap()),
            key_prefix: "t:".into(),
            timeout: Duration::from_secs(3600),
        };
        (listener, SharedCache::new(&section).unwrap())
    }

    #[tokio::test]
    async fn while_one_call_connects_the_others_go_on_without_the_cache() {
        use futures::FutureExt;
        let (_listener, cache) = silent_redis().await;
        let mut first = Box::pin(cache.connection());
        assert!((&mut first).now_or_never().is_none(), "the first call is connecting");
        // Not waiting for the first call's connect: answered at once, without a connection.
        assert!(matches!(cache.connection().now_or_never(), Some(None)));
        // The connecting call given up: the next try waits out the one-second pause.
        drop(first);
        let c = cache.conn.lock().unwrap();
        assert!(!c.connecting && c.failed_at.is_some() && c.manager.is_none());
    }

    #[test]
    fn keys_differ_per_user_and_query_and_ignore_deadline_trace_and_group_order() {
        let a = q("alice", &["support", "employee"], "支付超时");
        let mut a2 = q("alice", &["employee", "support"], "支付超时");
        a2.deadline = Some(prost_types::Timestamp { seconds: 99, nanos: 0 });
        a2.trace_context.insert("traceparent".into(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into());
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
    fn a_shared_entry_is_served_only_to_its_own_key() {
        let hits = vec![SourceHit { local_id: "KB-1".into(), title: "退款".into(), ..Default::default() }];
        let a = key(&q("alice", &["support"], "退款"), false);
        let b = key(&q("carol", &["employee"], "退款"), false);
        let entry = encode_entry(&a, &hits);
        let (back, age) = decode_entry(&entry, &a).expect("the same key reads it");
        assert_eq!(back, hits);
        assert!(age < Duration::from_secs(5));
        assert!(decode_entry(&entry, &b).is_none(), "another user's key never reads it");
        assert!(decode_entry(&entry[..5], &a).is_none(), "a truncated entry is no entry");
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
