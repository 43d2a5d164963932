//! The feedback loop: an agent reports which cited hits it used (or the user accepted) and
//! which it rejected; each report becomes one JSON line in `feedback.path`, with the user's
//! subject and the search's trace id. `fedsearch eval --feedback FILE --suggest-weights` reads
//! the file and reports adoption per source (used / shown) and the fusion weights it suggests.
//!
//! Ids must name sources the user may use (anything else is INVALID_ARGUMENT, like naming an
//! unknown source), so the file never records what a user could not have been shown.

use std::{path::PathBuf, sync::Arc};

use fedsearch_core::Identity;
use fedsearch_proto::api::{FeedbackRequest, FeedbackResponse};
use serde::Serialize;
use tokio::{io::AsyncWriteExt, sync::Mutex};
use tonic::Status;

use crate::registry::Registry;

/// Most ids in one report, and the longest id and query kept.
const MAX_IDS: usize = 200;
const MAX_ID_CHARS: usize = 512;
const MAX_QUERY_CHARS: usize = 1024;

/// Where feedback goes: an append-only JSONL file, or nowhere when not configured.
#[derive(Debug, Clone)]
pub struct FeedbackStore {
    path: Option<PathBuf>,
    lock: Arc<Mutex<()>>,
}

#[derive(Serialize)]
struct Record<'a> {
    at: String,
    user: &'a str,
    trace_id: &'a str,
    query: String,
    used: &'a [String],
    rejected: &'a [String],
    shown: &'a [String],
}

impl FeedbackStore {
    pub fn new(path: Option<PathBuf>) -> Self {
        Self { path, lock: Arc::default() }
    }

    /// Checks and stores one report.
    pub async fn record(
        &self,
        registry: &Registry,
        user: &Identity,
        req: &FeedbackRequest,
    ) -> Result<FeedbackResponse, Status> {
        let Some(path) = &self.path else {
            return Err(Status::failed_precondition("feedback is not enabled on this router (feedback.path)"));
        };
        check(registry, user, req)?;
        let record = Record {
            at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            user: &user.subject,
            trace_id: &req.trace_id,
            query: req.query.chars().take(MAX_QUERY_CHARS).collect(),
            used: &req.used,
            rejected: &req.rejected,
            shown: &req.shown,
        };
        let mut line = serde_json::to_string(&record).map_err(|_| Status::internal("cannot encode feedback"))?;
        line.push('\n');
        let _guard = self.lock.lock().await;
        let write = async {
            let mut f = tokio::fs::OpenOptions::new().create(true).append(true).open(path).await?;
            f.write_all(line.as_bytes()).await?;
            f.flush().await
        };
        write.await.map_err(|e| {
            tracing::warn!(error = %e, "feedback could not be written");
            Status::unavailable("feedback could not be stored; retry later")
        })?;
        Ok(FeedbackResponse { recorded: (req.used.len() + req.rejected.len()) as u32 })
    }
}

fn check(registry: &Registry, user: &Identity, req: &FeedbackRequest) -> Result<(), Status> {
    if req.used.is_empty() && req.rejected.is_empty() {
        return Err(Status::invalid_argument("used or rejected must name at least one hit id"));
    }
    let all = req.used.iter().chain(&req.rejected).chain(&req.shown);
    if req.used.len() + req.rejected.len() + req.shown.len() > MAX_IDS * 2 || req.trace_id.len() > 64 {
        return Err(Status::invalid_argument(format!("at most {MAX_IDS} ids each; trace_id at most 64 characters")));
    }
    for id in all {
        let source = id.split_once(':').map(|(s, _)| s).filter(|_| id.chars().count() <= MAX_ID_CHARS);
        let known = source.and_then(|s| registry.get(s)).is_some_and(|s| s.permits(user));
        if !known {
            return Err(Status::invalid_argument(format!(
                "`{}` is not a hit id of a source you may use (`<source>:<local id>`)",
                id.chars().take(80).collect::<String>()
            )));
        }
    }
    Ok(())
}
