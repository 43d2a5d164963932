//! The audit trail: one JSON record per call — Search, SearchStream, GetDocument, ListSources,
//! Feedback and every MCP tool call, allowed or denied — with the time, trace id, subject, the
//! query (full, hashed or redacted: `audit.query`), the sources selected and their states,
//! the returned hit ids, the fetched ids, and denials with their stable reasons. Never a
//! token, a credential, a snippet or a document's text.
//!
//! Records go to a JSON-lines file and/or an append-only PostgreSQL table
//! (deploy/observability/audit-postgres.sql: the router's role may INSERT, nothing else).
//! Each sink is written by its own background task from a bounded channel: a full channel
//! drops the record, a failed write is counted (`fedsearch.router.audit.records`) and logged,
//! and neither ever delays or fails the call being audited.

use std::sync::Arc;

use fedsearch_proto::api::SearchResponse;
use serde::Serialize;
use sha2::Digest;
use tokio::{io::AsyncWriteExt, sync::mpsc};

use crate::config::{AuditQuery, AuditSection};

/// One audit record (the JSON shape of a line and of the `record` column).
#[derive(Debug, Clone, Serialize, Default)]
pub struct Record {
    pub time: String,
    pub trace_id: String,
    /// The token's subject; `None` when the caller was not authenticated.
    pub subject: Option<String>,
    /// `grpc` or `mcp`.
    pub channel: &'static str,
    /// `Search`, `SearchStream`, `GetDocument`, `ListSources`, `Feedback`, or the MCP tool.
    pub method: String,
    pub allowed: bool,
    /// The gRPC code name of the answer (`OK`, `UNAUTHENTICATED`, ...).
    pub code: String,
    /// The `ErrorInfo.reason` of a refused call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceOutcome>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hit_ids: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fetched_ids: Vec<String>,
    /// Sources that refused the user (DENIED), with their state message's reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denials: Vec<Denial>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SourceOutcome {
    pub source: String,
    pub state: &'static str,
    pub hits: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Denial {
    pub source: String,
    pub code: String,
}

/// The audit writer; cheap to clone. Disabled (every call a no-op) without a sink.
#[derive(Clone, Default)]
pub struct Audit {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    query: AuditQuery,
    sinks: Vec<(&'static str, mpsc::Sender<Arc<Record>>)>,
}

impl Audit {
    /// Starts the sink tasks (needs a Tokio runtime when a sink is configured).
    pub fn new(config: &AuditSection) -> anyhow::Result<Self> {
        let mut sinks = Vec::new();
        if let Some(path) = &config.path {
            let (tx, rx) = mpsc::channel(config.buffer);
            tokio::spawn(file_sink(path.clone(), rx));
            sinks.push(("file", tx));
        }
        if let Some(pg) = &config.postgres {
            let url = fedsearch_core::secret::resolve_with_env(&pg.url, &pg.url_env, "audit.postgres.url")
                .map_err(anyhow::Error::msg)?;
            // The DSN holds a password: the error names the key, never the value.
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(2)
                .acquire_timeout(std::time::Duration::from_secs(2))
                .connect_lazy(url.expose())
                .map_err(|e| anyhow::anyhow!("audit.postgres.url: invalid DSN: {e}"))?;
            let (tx, rx) = mpsc::channel(config.buffer);
            tokio::spawn(postgres_sink(pool, pg.table.clone(), rx));
            sinks.push(("postgres", tx));
        }
        if sinks.is_empty() {
            return Ok(Self::default());
        }
        Ok(Self { inner: Some(Arc::new(Inner { query: config.query, sinks })) })
    }

    pub fn enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// The query as the config says to record it.
    pub fn query(&self, query: &str) -> Option<String> {
        let inner = self.inner.as_ref()?;
        Some(match inner.query {
            AuditQuery::Full => query.to_string(),
            AuditQuery::Hashed => format!("sha256:{:x}", sha2::Sha256::digest(query.as_bytes())),
            AuditQuery::Redacted => "[redacted]".to_string(),
        })
    }

    /// Queues `record` on every sink without waiting.
    pub fn write(&self, mut record: Record) {
        let Some(inner) = &self.inner else { return };
        if record.time.is_empty() {
            record.time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        }
        if record.trace_id.is_empty() {
            record.trace_id = fedsearch_core::propagation::current_trace_id();
        }
        let record = Arc::new(record);
        for (sink, tx) in &inner.sinks {
            if tx.try_send(record.clone()).is_err() {
                crate::metrics::audit(sink, "dropped");
                tracing::warn!(sink, "audit buffer full; record dropped");
            }
        }
    }
}

/// A record of a call, filled in from its outcome.
pub fn record(channel: &'static str, method: &str, subject: Option<&str>) -> Record {
    Record {
        channel,
        method: method.to_string(),
        subject: subject.map(str::to_string),
        allowed: true,
        code: "OK".into(),
        ..Default::default()
    }
}

impl Record {
    /// Marks the call refused with `status`'s code and reason.
    pub fn refused(mut self, status: &tonic::Status) -> Self {
        self.allowed = false;
        self.code = fedsearch_core::grpc::code_name(status.code()).to_string();
        self.reason = fedsearch_core::errors::reason_of(status);
        self
    }

    /// The sources, their states, denials and the returned hit ids of a search.
    pub fn with_response(mut self, response: &SearchResponse) -> Self {
        for s in &response.sources {
            let state = s.state();
            self.sources.push(SourceOutcome { source: s.source.clone(), state: state.label(), hits: s.hit_count });
            if state == fedsearch_proto::types::SourceState::Denied {
                self.denials.push(Denial { source: s.source.clone(), code: s.code.clone() });
            }
        }
        self.hit_ids = response.hits.iter().map(|h| h.id.clone()).collect();
        self
    }

    /// `result` of the call: the refusal when it failed.
    pub fn outcome<T>(self, result: &Result<T, tonic::Status>) -> Self {
        match result {
            Ok(_) => self,
            Err(status) => self.refused(status),
        }
    }
}

async fn file_sink(path: std::path::PathBuf, mut rx: mpsc::Receiver<Arc<Record>>) {
    let mut file = None;
    while let Some(record) = rx.recv().await {
        let mut line = serde_json::to_vec(&*record).unwrap_or_default();
        line.push(b'\n');
        if file.is_none() {
            file = tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .await
                .map_err(|e| tracing::warn!(error = %e, "cannot open the audit file"))
                .ok();
        }
        let written = match file.as_mut() {
            Some(f) => f.write_all(&line).await.and(f.flush().await),
            None => Err(std::io::Error::other("audit file not open")),
        };
        match written {
            Ok(()) => crate::metrics::audit("file", "written"),
            Err(e) => {
                file = None;
                crate::metrics::audit("file", "failed");
                tracing::warn!(error = %e, "writing an audit record to the file failed");
            }
        }
    }
}

async fn postgres_sink(pool: sqlx::PgPool, table: String, mut rx: mpsc::Receiver<Arc<Record>>) {
    // The table name is validated at config load (letters, digits, `_`, `.`).
    let insert = format!(
        "INSERT INTO {table} (at, trace_id, subject, channel, method, allowed, code, record) \
         VALUES ($1::timestamptz, $2, $3, $4, $5, $6, $7, $8::jsonb)"
    );
    while let Some(record) = rx.recv().await {
        let json = serde_json::to_string(&*record).unwrap_or_default();
        let result = sqlx::query(sqlx::AssertSqlSafe(insert.as_str()))
            .bind(&record.time)
            .bind(&record.trace_id)
            .bind(&record.subject)
            .bind(record.channel)
            .bind(&record.method)
            .bind(record.allowed)
            .bind(&record.code)
            .bind(json)
            .execute(&pool)
            .await;
        match result {
            Ok(_) => crate::metrics::audit("postgres", "written"),
            Err(e) => {
                crate::metrics::audit("postgres", "failed");
                tracing::warn!(error = %e, "writing an audit record to PostgreSQL failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn queries_are_recorded_as_configured_and_records_reach_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let config = AuditSection { path: Some(path.clone()), ..Default::default() };
        let audit = Audit::new(&config).unwrap();
        let hashed = audit.query("退款手续费").unwrap();
        assert!(hashed.starts_with("sha256:") && hashed.len() == 7 + 64, "{hashed}");
        assert!(!hashed.contains("退款"));
        let full = Audit::new(&AuditSection { query: AuditQuery::Full, ..config.clone() }).unwrap();
        assert_eq!(full.query("q").as_deref(), Some("q"));
        let status = fedsearch_core::errors::auth(&fedsearch_core::AuthError::Expired);
        audit.write(record("grpc", "Search", None).refused(&status));
        for _ in 0..100 {
            if std::fs::read_to_string(&path).is_ok_and(|t| t.lines().count() == 1) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let line: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&path).unwrap().lines().next().unwrap()).unwrap();
        assert_eq!(line["allowed"], false);
        assert_eq!(line["reason"], "TOKEN_EXPIRED");
        assert_eq!(line["code"], "UNAUTHENTICATED");
        assert!(Audit::new(&AuditSection::default()).unwrap().query("q").is_none(), "off without a sink");
    }
}
