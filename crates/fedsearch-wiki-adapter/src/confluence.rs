//! The Confluence connector (Cloud and Data Center): CQL search over REST with the end user's
//! own token, so Confluence applies its own permissions.
//!
//! **Verified against Atlassian's documented request/response shapes, not a live Confluence**:
//! no Confluence can run in this project's test environment. `tests/confluence.rs` serves
//! fixture JSON written from the REST API documentation (search results, content, and the
//! `{statusCode, message}` error bodies for 400/401/403/404/429) from an in-test HTTP server on
//! 127.0.0.1, so the real reqwest request path, auth headers and paging run.
//!
//! - Cloud: `GET <site>/wiki/rest/api/search?cql=…&start=…&limit=…`, HTTP Basic
//!   `email:api_token`; results are `{content:{id,type,title,space,_links}, title, excerpt,
//!   url, lastModified}` with `@@@hl@@@…@@@endhl@@@` around matches.
//! - Data Center: `GET <base>/rest/api/content/search?cql=…&start=…&limit=…&expand=space,version`,
//!   `Authorization: Bearer <PAT>`; results are content objects `{id,type,title,space,version,_links}`
//!   (an `excerpt`, when present, is used for the snippet).
//! - CQL: `text ~ "<user text>"` where user text only ever appears inside string literals with
//!   `\` and `"` escaped. A sub-query's plan (the short text as sent and one entry per key term,
//!   see [`crate::terms`]) becomes one clause ORing them, `(text ~ "a" OR text ~ "b")`, so
//!   Confluence ranks pages matching more of them first; content types, configured spaces and
//!   `lastmodified` bounds (UTC, `yyyy-MM-dd HH:mm`) are ANDed. Paging uses `start`/`limit` until the sub-query limit is
//!   filled, the results end, or `max_pages` requests were made.
//! - Fetch: `GET …/rest/api/content/{id}?expand=body.storage,version,space` as the user;
//!   Confluence answers 404 both for a missing page and for one the user may not see.

use std::time::Duration;

use fedsearch_adapter_kit::AdapterError;
use fedsearch_proto::types::TimeRange;
use prost_types::Timestamp;
use serde_json::Value as Json;

use crate::{
    config::{ConfluenceConfig, ConfluenceFlavor},
    http,
    identity::Credential,
    source::{Found, PageText},
    text,
};

const WIKI: &str = "confluence";

/// A Confluence site.
#[derive(Debug, Clone)]
pub struct Confluence {
    base: String,
    flavor: ConfluenceFlavor,
    content_types: Vec<String>,
    spaces: Vec<String>,
    pub page_size: u32,
    pub max_pages: u32,
    http: reqwest::Client,
}

/// A CQL string literal: `"` + text with `\` and `"` backslash-escaped + `"`. Control
/// characters are replaced by spaces.
pub fn cql_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn cql_time(t: &Timestamp) -> Option<String> {
    fedsearch_core::time::to_chrono(t).map(|t| cql_literal(&t.format("%Y-%m-%d %H:%M").to_string()))
}

/// The CQL for one search: the `texts` ORed. Only `texts` come from the user, each only inside a
/// literal.
pub fn build_cql(
    texts: &[&str],
    content_types: &[String],
    spaces: &[String],
    time_range: Option<&TimeRange>,
) -> String {
    let alternatives: Vec<String> = texts.iter().map(|t| format!("text ~ {}", cql_literal(t))).collect();
    let mut clauses = vec![match alternatives.len() {
        1 => alternatives[0].clone(),
        _ => format!("({})", alternatives.join(" OR ")),
    }];
    if !content_types.is_empty() {
        let types: Vec<String> = content_types.iter().map(|t| cql_literal(t)).collect();
        clauses.push(format!("type in ({})", types.join(", ")));
    }
    if !spaces.is_empty() {
        let keys: Vec<String> = spaces.iter().map(|s| cql_literal(s)).collect();
        clauses.push(format!("space in ({})", keys.join(", ")));
    }
    if let Some(range) = time_range {
        if let Some(from) = range.from.as_ref().and_then(cql_time) {
            clauses.push(format!("lastmodified >= {from}"));
        }
        if let Some(to) = range.to.as_ref().and_then(cql_time) {
            clauses.push(format!("lastmodified <= {to}"));
        }
    }
    clauses.join(" AND ")
}

/// Confluence content ids are numbers; anything else never reaches a URL path.
pub fn valid_content_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit())
}

/// One page of search results.
#[derive(Debug)]
pub struct SearchPage {
    pub found: Vec<Found>,
    /// Number of raw results in this page (before any filtering).
    pub size: usize,
    /// Whether Confluence says more results follow (`_links.next`, or `totalSize`).
    pub more: bool,
}

fn str_at<'a>(v: &'a Json, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str()
}

fn error_for(status: u16, body: &str) -> AdapterError {
    // The documented error body is {"statusCode":N,"message":"..."}; the message can quote the
    // CQL or internals, so only the status decides what the caller sees.
    let documented = serde_json::from_str::<Json>(body).ok().and_then(|j| j.get("statusCode").and_then(Json::as_u64));
    tracing::debug!(status, body_status = ?documented, "confluence refused the request");
    http::status_error(status, WIKI)
}

impl Confluence {
    pub fn new(base_url: &str, config: &ConfluenceConfig, spaces: Vec<String>, http: reqwest::Client) -> Self {
        Self {
            base: base_url.trim_end_matches('/').to_string(),
            flavor: config.flavor,
            content_types: config.content_types.clone(),
            spaces,
            page_size: config.page_size,
            max_pages: config.max_pages,
            http,
        }
    }

    fn api(&self, path: &str) -> String {
        match self.flavor {
            ConfluenceFlavor::Cloud => format!("{}/wiki/rest/api/{path}", self.base),
            ConfluenceFlavor::DataCenter => format!("{}/rest/api/{path}", self.base),
        }
    }

    /// The CQL this connector sends for `texts` (ORed).
    pub fn cql(&self, texts: &[&str], time_range: Option<&TimeRange>) -> String {
        build_cql(texts, &self.content_types, &self.spaces, time_range)
    }

    #[tracing::instrument(name = "confluence.rest", skip_all, fields(otel.kind = "client"))]
    async fn get(
        &self,
        credential: &Credential,
        url: &str,
        query: &[(&str, String)],
        timeout: Duration,
    ) -> Result<Json, AdapterError> {
        let request =
            self.http.get(url).query(query).header(reqwest::header::ACCEPT, "application/json").timeout(timeout);
        let response = credential.apply(request).send().await.map_err(|e| http::send_error(e, WIKI))?;
        let status = response.status().as_u16();
        let body = http::read_body(response, WIKI).await?;
        if status != 200 {
            return Err(error_for(status, &body));
        }
        serde_json::from_str(&body)
            .map_err(|_| AdapterError::FailedPrecondition("confluence sent a malformed answer".into()))
    }

    /// One search request: results `start..start+limit`.
    pub async fn search_page(
        &self,
        credential: &Credential,
        cql: &str,
        start: u32,
        limit: u32,
        timeout: Duration,
    ) -> Result<SearchPage, AdapterError> {
        let mut query = vec![("cql", cql.to_string()), ("start", start.to_string()), ("limit", limit.to_string())];
        let url = match self.flavor {
            ConfluenceFlavor::Cloud => {
                query.push(("expand", "content.space,content.version".into()));
                self.api("search")
            }
            ConfluenceFlavor::DataCenter => {
                query.push(("expand", "space,version".into()));
                self.api("content/search")
            }
        };
        let json = self.get(credential, &url, &query, timeout).await?;
        let results = json
            .get("results")
            .and_then(Json::as_array)
            .ok_or_else(|| AdapterError::FailedPrecondition("confluence search answer has no results list".into()))?;
        let base = str_at(&json, &["_links", "base"]).unwrap_or(&self.base).trim_end_matches('/').to_string();
        let found = results.iter().filter_map(|r| self.found(r, &base)).collect();
        let total = json.get("totalSize").and_then(Json::as_u64);
        let more = str_at(&json, &["_links", "next"]).is_some()
            || total.is_some_and(|t| (start as u64 + results.len() as u64) < t);
        Ok(SearchPage { found, size: results.len(), more })
    }

    fn found(&self, result: &Json, base: &str) -> Option<Found> {
        // Cloud /search wraps the content; DC /content/search returns it directly.
        let content = result.get("content").filter(|c| c.is_object()).unwrap_or(result);
        let id = content.get("id").and_then(Json::as_str).filter(|id| valid_content_id(id))?.to_string();
        let title_raw =
            result.get("title").and_then(Json::as_str).or_else(|| content.get("title").and_then(Json::as_str));
        let title = title_raw.map(text::confluence_plain).unwrap_or_default();
        let snippet = result.get("excerpt").and_then(Json::as_str).map(text::confluence_snippet).unwrap_or_default();
        let updated = result
            .get("lastModified")
            .and_then(Json::as_str)
            .or_else(|| str_at(content, &["version", "when"]))
            .and_then(fedsearch_core::time::parse_rfc3339);
        let space = str_at(content, &["space", "key"]).map(str::to_string).or_else(|| {
            str_at(result, &["resultGlobalContainer", "displayUrl"])
                .and_then(|u| u.strip_prefix("/spaces/"))
                .map(|k| k.trim_end_matches('/').to_string())
        });
        let webui = str_at(content, &["_links", "webui"]).or_else(|| result.get("url").and_then(Json::as_str));
        let url = match webui {
            Some(path) if path.starts_with("http://") || path.starts_with("https://") => path.to_string(),
            Some(path) => format!("{base}{path}"),
            None => format!("{base}/pages/viewpage.action?pageId={id}"),
        };
        let mut extra = vec![("content_id".to_string(), id.clone())];
        if let Some(t) = content.get("type").and_then(Json::as_str) {
            extra.push(("content_type".into(), t.to_string()));
        }
        Some(Found {
            title: if title.is_empty() { id.clone() } else { title },
            snippet,
            url,
            updated_at: updated,
            score: None,
            namespace: space.unwrap_or_default(),
            id,
            extra,
            matched: Vec::new(),
        })
    }

    /// The page body as plain text, as the user.
    pub async fn page(&self, credential: &Credential, id: &str, timeout: Duration) -> Result<PageText, AdapterError> {
        let url = self.api(&format!("content/{id}"));
        let json = self.get(credential, &url, &[("expand", "body.storage,version,space".into())], timeout).await?;
        let base = str_at(&json, &["_links", "base"]).unwrap_or(&self.base).trim_end_matches('/').to_string();
        let hit = self
            .found(&json, &base)
            .ok_or_else(|| AdapterError::FailedPrecondition("confluence sent a malformed page".into()))?;
        let body = str_at(&json, &["body", "storage", "value"]).map(text::html_to_text).unwrap_or_default();
        Ok(PageText {
            id: hit.id,
            title: hit.title,
            content: body,
            url: hit.url,
            updated_at: hit.updated_at,
            namespace: hit.namespace,
            extra: hit.extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_text_stays_inside_one_escaped_literal() {
        assert_eq!(cql_literal(r#"a "b" \c"#), r#""a \"b\" \\c""#);
        let cql = build_cql(&[r#"x" OR space = "HR\"#], &["page".into()], &[], None);
        assert_eq!(cql, r#"text ~ "x\" OR space = \"HR\\" AND type in ("page")"#);
        // the literal ends exactly once: count unescaped quotes
        let mut unescaped = 0;
        let mut prev_backslashes = 0;
        for c in cql.chars() {
            if c == '"' && prev_backslashes % 2 == 0 {
                unescaped += 1;
            }
            prev_backslashes = if c == '\\' { prev_backslashes + 1 } else { 0 };
        }
        assert_eq!(unescaped, 4, "{cql}");
        assert_eq!(cql_literal("退货\n政策"), "\"退货 政策\"");
    }

    #[test]
    fn cql_carries_spaces_types_and_time_bounds() {
        let range = TimeRange {
            from: Some(Timestamp { seconds: 1_792_509_312, nanos: 0 }),
            to: Some(Timestamp { seconds: 1_795_101_312, nanos: 0 }),
        };
        let cql =
            build_cql(&["退货 拒收"], &["page".into(), "blogpost".into()], &["OPS".into(), "HR".into()], Some(&range));
        assert_eq!(
            cql,
            r#"text ~ "退货 拒收" AND type in ("page", "blogpost") AND space in ("OPS", "HR") AND lastmodified >= "2026-10-20 15:15" AND lastmodified <= "2026-11-19 15:15""#
        );
    }

    #[test]
    fn several_texts_are_ored_in_one_clause() {
        let cql = build_cql(&["rejection fee", "退款", "a\"b"], &[], &["OPS".into()], None);
        assert_eq!(cql, r#"(text ~ "rejection fee" OR text ~ "退款" OR text ~ "a\"b") AND space in ("OPS")"#);
    }

    #[test]
    fn content_ids_are_numeric() {
        assert!(valid_content_id("123456"));
        for bad in ["", "12a", "../1", "1/2", "123456789012345678901"] {
            assert!(!valid_content_id(bad), "{bad}");
        }
    }
}
