//! The DokuWiki connector: `dokuwiki.search`, `wiki.getPage`, `wiki.getPageInfo`,
//! `wiki.getPageVersions` and `wiki.getRecentChanges` over XML-RPC (`POST <url>/lib/exe/xmlrpc.php`, HTTP Basic auth as the end user), so the wiki
//! applies its own ACL to every call.
//!
//! DokuWiki 2022-07-31 reports most errors without a `<fault>` (see the recorded exchanges in
//! `data/sample/wiki/xmlrpc-examples/`): HTTP 401 for missing or wrong credentials
//! (→ `Unauthenticated`, state DENIED), HTTP 403 for a page the ACL refuses (→
//! `PermissionDenied`), and HTTP 200 with an empty `<struct>` for an unknown method or a wrong
//! argument count (→ `FailedPrecondition`). A real `<fault>` becomes an error naming only its code.
//! No answer at all → `Unavailable`; the next call simply tries again (no restart needed).
//!
//! `dokuwiki.search` returns every readable match sorted by score and has no date filter; the
//! adapter cuts the list and applies `time_range` on `mtime` afterwards (see [`crate::source`]).
//! Within a bounded window, `wiki.getRecentChanges` (ACL-checked by the wiki) lists the pages
//! changed in it that no search found.
//! Only the first 15 results carry a snippet. It requires EVERY word of its query, so one
//! sub-query runs several searches, one per key term, merged by the adapter (see
//! [`crate::terms`], [`crate::merge`]).
//!
//! `wiki.getPageVersions(id, first)` lists a page's revisions newest first, the current one
//! included, `$conf['recent']` (default 20) per call; `first` is the offset of the next call.
//! [`DokuWiki::history`] reads at most [`MAX_HISTORY_CALLS`] such lists: the current revision's
//! date, the first revision's date and the number of revisions (see [`History`]).

use std::time::Duration;

use fedsearch_adapter_kit::AdapterError;
use prost_types::Timestamp;

use crate::{
    http,
    identity::Credential,
    source::{Found, PageText},
    text,
    xmlrpc::{self, Param, Response, Value},
};

const WIKI: &str = "wiki";

/// `wiki.getPageVersions` calls per page at most (20 revisions each by default).
pub const MAX_HISTORY_CALLS: usize = 3;
/// The earliest `since` of `wiki.getRecentChanges`: DokuWiki refuses a timestamp that is not ten
/// digits long (fault 311), so an open-ended past asks from 2001-09-09.
pub const EARLIEST_CHANGE_SECS: i64 = 1_000_000_000;

/// A page's revision history as the wiki lists it to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    /// The current revision's date (unix seconds).
    pub current: i64,
    /// The oldest revision's date (unix seconds); only the oldest READ when not `complete`.
    pub first: i64,
    /// Revisions listed.
    pub count: usize,
    /// Whether the whole history was read (false: more than [`MAX_HISTORY_CALLS`] lists).
    pub complete: bool,
}

/// A revision's date: its `version` (unix seconds), else its `modified` time.
fn revision_date(item: &Value) -> Option<i64> {
    item.get("version")
        .and_then(Value::as_i64)
        .filter(|t| *t > 0)
        .or_else(|| item.get("modified").and_then(Value::as_str).and_then(timestamp_from_iso).map(|t| t.seconds))
}

/// A DokuWiki site.
#[derive(Debug, Clone)]
pub struct DokuWiki {
    base: String,
    endpoint: String,
    http: reqwest::Client,
}

/// A DokuWiki page id: what `cleanID` produces (letters, digits, `:_.-`), bounded.
pub fn valid_page_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 255
        && id.chars().all(|c| c.is_alphanumeric() || matches!(c, ':' | '_' | '.' | '-'))
        && !id.split(':').any(|part| part == ".." || part == ".")
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'.' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The namespace of a page id (`support:runbook_x` → `support`; root pages → ``).
pub fn namespace_of(id: &str) -> &str {
    id.rsplit_once(':').map_or("", |(ns, _)| ns)
}

fn fault_error(code: i64) -> AdapterError {
    match code {
        111 | 112 | 131 => AdapterError::PermissionDenied("the wiki denies this user access".into()),
        121 => AdapterError::NotFound("no such wiki page".into()),
        -32601 => AdapterError::FailedPrecondition("the wiki does not offer this remote method".into()),
        c => AdapterError::FailedPrecondition(format!("the wiki answered with fault {c}")),
    }
}

fn unusable(method: &str) -> AdapterError {
    AdapterError::FailedPrecondition(format!(
        "the wiki gave no usable answer to {method} (method unknown or remote API restricted)"
    ))
}

fn timestamp_from_iso(s: &str) -> Option<Timestamp> {
    fedsearch_core::time::parse_rfc3339(s).or_else(|| {
        // the XML-RPC spec form: 20261020T15:15:12 (UTC assumed)
        chrono::NaiveDateTime::parse_from_str(s, "%Y%m%dT%H:%M:%S")
            .ok()
            .map(|t| fedsearch_core::time::from_chrono(t.and_utc()))
    })
}

impl DokuWiki {
    pub fn new(base_url: &str, http: reqwest::Client) -> Self {
        let base = base_url.trim_end_matches('/').to_string();
        let endpoint = format!("{base}/lib/exe/xmlrpc.php");
        Self { base, endpoint, http }
    }

    /// The stable page URL: `<base>/doku.php?id=<page>`.
    pub fn page_url(&self, id: &str) -> String {
        format!("{}/doku.php?id={}", self.base, percent_encode(id))
    }

    /// One XML-RPC call as the user.
    #[tracing::instrument(name = "dokuwiki.xmlrpc", skip_all, fields(otel.kind = "client", rpc.method = %method))]
    pub async fn call(
        &self,
        credential: &Credential,
        method: &str,
        params: &[Param<'_>],
        timeout: Duration,
    ) -> Result<Value, AdapterError> {
        let request = self
            .http
            .post(&self.endpoint)
            .header(reqwest::header::CONTENT_TYPE, "text/xml; charset=utf-8")
            .timeout(timeout)
            .body(xmlrpc::method_call(method, params));
        let response = credential.apply(request).send().await.map_err(|e| http::send_error(e, WIKI))?;
        let status = response.status().as_u16();
        if status != 200 {
            tracing::debug!(method, status, "wiki refused the call");
            return Err(http::status_error(status, WIKI));
        }
        let body = http::read_body(response, WIKI).await?;
        match xmlrpc::parse_response(&body) {
            Ok(Response::Value(v)) => Ok(v),
            Ok(Response::Fault { code, .. }) => {
                tracing::warn!(method, fault_code = code, "wiki answered with a fault");
                Err(fault_error(code))
            }
            Err(e) => {
                tracing::warn!(method, error = %e, "wiki answer is not xml-rpc");
                Err(AdapterError::FailedPrecondition(
                    "the wiki's answer is not XML-RPC (is the url right and the remote API enabled?)".into(),
                ))
            }
        }
    }

    /// Like [`Self::call`], but an empty `<struct>` (DokuWiki's answer to an unknown method or
    /// a wrong argument count) is `FailedPrecondition`.
    pub async fn call_strict(
        &self,
        cred: &Credential,
        method: &str,
        params: &[Param<'_>],
        timeout: Duration,
    ) -> Result<Value, AdapterError> {
        let value = self.call(cred, method, params, timeout).await?;
        if value.is_empty_struct() {
            tracing::warn!(method, "wiki answered with an empty struct");
            return Err(unusable(method));
        }
        Ok(value)
    }

    /// `dokuwiki.search(text)` as the user: every readable match, best first.
    pub async fn search(
        &self,
        credential: &Credential,
        query: &str,
        timeout: Duration,
    ) -> Result<Vec<Found>, AdapterError> {
        let value = self.call_strict(credential, "dokuwiki.search", &[Param::Str(query)], timeout).await?;
        let Value::Array(items) = value else {
            return Err(unusable("dokuwiki.search"));
        };
        Ok(items.iter().filter_map(|item| self.found(item)).collect())
    }

    fn found(&self, item: &Value) -> Option<Found> {
        let id = item.get("id").and_then(Value::as_str).filter(|id| valid_page_id(id))?.to_string();
        let title = item.get("title").and_then(Value::as_str).map(text::collapse_whitespace).unwrap_or_default();
        let snippet = item.get("snippet").and_then(Value::as_str).map(text::dokuwiki_snippet).unwrap_or_default();
        let updated_at =
            item.get("mtime").and_then(Value::as_i64).filter(|t| *t > 0).map(|seconds| Timestamp { seconds, nanos: 0 });
        Some(Found {
            url: self.page_url(&id),
            namespace: namespace_of(&id).to_string(),
            title: if title.is_empty() { id.clone() } else { title },
            snippet,
            updated_at,
            score: item.get("score").and_then(Value::as_i64).map(|s| s as f64),
            id,
            extra: Vec::new(),
            matched: Vec::new(),
        })
    }

    /// `wiki.getRecentChanges(since)` as the user: the pages changed since `since` (unix seconds,
    /// at the earliest [`EARLIEST_CHANGE_SECS`]: the wiki takes ten digits only) that the user may
    /// read — the wiki checks its ACL for each — with their change times.
    /// DokuWiki answers an empty `<struct>` when nothing changed (and when the method is unknown):
    /// no pages.
    pub async fn recent_changes(
        &self,
        credential: &Credential,
        since: i64,
        timeout: Duration,
    ) -> Result<Vec<(String, Option<Timestamp>)>, AdapterError> {
        let since = i32::try_from(since.max(EARLIEST_CHANGE_SECS)).unwrap_or(i32::MAX);
        let items = match self.call(credential, "wiki.getRecentChanges", &[Param::Int(since)], timeout).await? {
            Value::Array(items) => items,
            v if v.is_empty_struct() => return Ok(Vec::new()),
            _ => return Err(unusable("wiki.getRecentChanges")),
        };
        Ok(items
            .iter()
            .filter_map(|item| {
                let id = item.get("name").and_then(Value::as_str).filter(|id| valid_page_id(id))?;
                let at = item.get("lastModified").and_then(Value::as_str).and_then(timestamp_from_iso);
                Some((id.to_string(), at))
            })
            .collect())
    }

    /// `wiki.getPage` alone as the user: the raw wiki text ('' for a missing page).
    pub async fn page_text(
        &self,
        credential: &Credential,
        id: &str,
        timeout: Duration,
    ) -> Result<String, AdapterError> {
        match self.call_strict(credential, "wiki.getPage", &[Param::Str(id)], timeout).await? {
            Value::String(s) => Ok(s),
            _ => Err(unusable("wiki.getPage")),
        }
    }

    /// `wiki.getPageVersions` as the user (the wiki checks the ACL): `None` when it lists no
    /// revision (no changelog, or a page that does not exist).
    pub async fn history(
        &self,
        credential: &Credential,
        id: &str,
        timeout: Duration,
    ) -> Result<Option<History>, AdapterError> {
        let mut dates = Vec::new();
        let (mut listed, mut per_call, mut complete) = (0usize, None, false);
        for _ in 0..MAX_HISTORY_CALLS {
            let offset = i32::try_from(listed).unwrap_or(i32::MAX);
            let value =
                self.call(credential, "wiki.getPageVersions", &[Param::Str(id), Param::Int(offset)], timeout).await?;
            let Value::Array(items) = value else {
                return Err(unusable("wiki.getPageVersions"));
            };
            listed += items.len();
            dates.extend(items.iter().filter_map(revision_date));
            // a shorter list than the first one (or none) is the end of the history
            if items.is_empty() || items.len() < *per_call.get_or_insert(items.len()) {
                complete = true;
                break;
            }
        }
        let (Some(&current), Some(&first)) = (dates.iter().max(), dates.iter().min()) else {
            return Ok(None);
        };
        Ok(Some(History { current, first, count: dates.len(), complete }))
    }

    /// `wiki.getPage` + `wiki.getPageInfo` as the user: the wiki re-checks permission now.
    pub async fn page(&self, credential: &Credential, id: &str, timeout: Duration) -> Result<PageText, AdapterError> {
        let params = [Param::Str(id)];
        let (page, info) = tokio::join!(
            self.call_strict(credential, "wiki.getPage", &params, timeout),
            self.call(credential, "wiki.getPageInfo", &params, timeout),
        );
        let content = match page? {
            Value::String(s) => s,
            _ => return Err(unusable("wiki.getPage")),
        };
        let info = info?;
        if content.is_empty() && info.is_empty_struct() {
            return Err(AdapterError::NotFound("no such wiki page".into()));
        }
        let updated_at = info.get("lastModified").and_then(Value::as_str).and_then(timestamp_from_iso);
        let author = info.get("author").and_then(Value::as_str).unwrap_or_default().to_string();
        let title = content
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("==") && l.ends_with("=="))
            .map(|l| text::collapse_whitespace(l.trim_matches('=')))
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| id.to_string());
        let mut extra = vec![("page_id".to_string(), id.to_string())];
        if !author.is_empty() {
            extra.push(("author".into(), author));
        }
        Ok(PageText {
            id: id.to_string(),
            title,
            content,
            url: self.page_url(id),
            updated_at,
            namespace: namespace_of(id).to_string(),
            extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_ids_are_checked_and_urls_stable() {
        assert!(valid_page_id("support:runbook_payment_timeout"));
        assert!(valid_page_id("public:return_policy_2025"));
        for bad in ["", "a b", "../conf", "a:..:b", "x?do=admin", "a/b", "a&b"] {
            assert!(!valid_page_id(bad), "{bad}");
        }
        let wiki = DokuWiki::new("http://127.0.0.1:8090/", reqwest::Client::new());
        assert_eq!(wiki.page_url("public:return_policy"), "http://127.0.0.1:8090/doku.php?id=public:return_policy");
        assert_eq!(namespace_of("support:runbooks:x"), "support:runbooks");
        assert_eq!(namespace_of("start"), "");
    }

    #[test]
    fn search_items_become_clean_hits() {
        let xml = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/sample/wiki/xmlrpc-examples/05-search-jushou-shouxufei-carol.response.xml"
        ))
        .unwrap();
        let Ok(Response::Value(Value::Array(items))) = xmlrpc::parse_response(&xml) else { panic!() };
        let wiki = DokuWiki::new("http://w", reqwest::Client::new());
        let found: Vec<Found> = items.iter().filter_map(|i| wiki.found(i)).collect();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].id, "public:return_policy");
        assert_eq!(found[0].namespace, "public");
        assert_eq!(found[0].title, "退货政策（2026 版） Return Policy 2026");
        // the old policy is older (mtimes in the recording depend on its load time)
        assert!(found[0].updated_at.as_ref().unwrap().seconds > found[1].updated_at.as_ref().unwrap().seconds);
        assert!(found[0].snippet.contains("拒收手续费 12 元"), "{}", found[0].snippet);
        assert!(!text::looks_dirty(&found[0].snippet), "{}", found[0].snippet);
        assert!(found.iter().all(|f| f.snippet.chars().count() <= text::SNIPPET_MAX_CHARS));
    }

    #[test]
    fn faults_and_times_map_safely() {
        assert!(matches!(fault_error(111), AdapterError::PermissionDenied(_)));
        assert!(
            matches!(fault_error(-32700), AdapterError::FailedPrecondition(m) if m == "the wiki answered with fault -32700")
        );
        assert_eq!(timestamp_from_iso("2026-10-20T15:15:12+00:00").map(|t| t.seconds), Some(1792509312));
        assert_eq!(timestamp_from_iso("20261020T15:15:12").map(|t| t.seconds), Some(1792509312));
        assert_eq!(timestamp_from_iso("yesterday"), None);
    }
}
