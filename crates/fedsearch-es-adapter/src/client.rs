//! The cluster client: building the `elasticsearch` transport and running `_search` calls with
//! every failure turned into a safe [`AdapterError`].
//!
//! Connections are pooled by the HTTP client and re-established per request, so a cluster that
//! went away and came back is used again without restarting the adapter.

use std::time::Duration;

use anyhow::Context;
use elasticsearch::{
    Elasticsearch, SearchParts,
    http::{
        Url,
        transport::{MultiNodeConnectionPool, SingleNodeConnectionPool, TransportBuilder},
    },
};
use fedsearch_adapter_kit::AdapterError;
use serde_json::Value;

use crate::config::ClusterConfig;

/// Builds the client. Proxies from the environment are not used: the cluster is reached directly.
pub fn build(cluster: &ClusterConfig) -> anyhow::Result<Elasticsearch> {
    let urls = cluster
        .node_urls()
        .map_err(anyhow::Error::msg)?
        .iter()
        .enumerate()
        .map(|(i, u)| Url::parse(u).with_context(|| format!("`cluster.urls[{i}]` is not a URL")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut builder = match urls.len() {
        1 => TransportBuilder::new(SingleNodeConnectionPool::new(urls.into_iter().next().expect("one url"))),
        _ => TransportBuilder::new(MultiNodeConnectionPool::round_robin(urls, None)),
    };
    builder = builder.disable_proxy().enable_meta_header(false).timeout(cluster.request_timeout);
    if let Some(credentials) = cluster.credentials().map_err(anyhow::Error::msg)? {
        builder = builder.auth(credentials);
    }
    Ok(Elasticsearch::new(builder.build().context("cannot build the search cluster client")?))
}

/// Runs `_search` on `index` with `body`, giving up client-side after `timeout`.
#[tracing::instrument(name = "es.search", skip_all, fields(otel.kind = "client", db.system = "elasticsearch", index = %index))]
pub async fn search(
    es: &Elasticsearch,
    source: &str,
    index: &str,
    body: Value,
    timeout: Duration,
) -> Result<Value, AdapterError> {
    let indices = [index];
    let response = es
        .search(SearchParts::Index(&indices))
        .body(body)
        .request_timeout(timeout)
        .send()
        .await
        .map_err(|e| transport_error(source, &e))?;
    let status = response.status_code().as_u16();
    if (200..300).contains(&status) {
        return response.json::<Value>().await.map_err(|e| transport_error(source, &e));
    }
    // The error body is read only to learn its type; its reason text is never passed on.
    let error_type = match response.json::<Value>().await {
        Ok(v) => v.pointer("/error/type").and_then(Value::as_str).map(str::to_string),
        Err(_) => None,
    };
    let err = status_error(source, status, error_type.as_deref());
    tracing::warn!(source, status, error_type = error_type.as_deref().unwrap_or("-"), code = ?err.code(), "search cluster refused a request");
    Err(err)
}

/// A failure before any HTTP answer (connection refused, reset, timeout, unreadable body).
fn transport_error(source: &str, e: &elasticsearch::Error) -> AdapterError {
    if e.is_timeout() {
        tracing::warn!(source, "search cluster did not answer in time");
        return AdapterError::DeadlineExceeded;
    }
    tracing::warn!(source, error = %SafeError(e), "search cluster unreachable");
    AdapterError::Unavailable("search cluster unreachable".into())
}

/// Displays an error chain without URLs (they may carry hosts or user-info).
struct SafeError<'a>(&'a (dyn std::error::Error + 'static));

impl std::fmt::Display for SafeError<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(self.0);
        let mut first = true;
        while let Some(e) = cur {
            let text = e.to_string();
            // reqwest prints "... for url (http://host:port/...)": keep the part before it.
            let text = text.split(" for url (").next().unwrap_or_default();
            if !first {
                f.write_str(": ")?;
            }
            f.write_str(text)?;
            first = false;
            cur = e.source();
        }
        Ok(())
    }
}

/// Maps an HTTP error status (and Elasticsearch's `error.type`) to a safe adapter error.
pub fn status_error(source: &str, status: u16, error_type: Option<&str>) -> AdapterError {
    match (status, error_type) {
        (404, Some("index_not_found_exception")) | (404, None) => {
            AdapterError::FailedPrecondition(format!("the index of source `{source}` does not exist"))
        }
        (400, ty) => AdapterError::FailedPrecondition(format!(
            "the search cluster rejected the query for source `{source}` ({})",
            ty.unwrap_or("bad request")
        )),
        (401 | 403, _) => {
            AdapterError::FailedPrecondition("the search cluster refused the adapter's own credentials".into())
        }
        (408 | 504, _) => AdapterError::DeadlineExceeded,
        (429, _) => AdapterError::ResourceExhausted("the search cluster is overloaded".into()),
        (500..=599, _) => AdapterError::Unavailable("the search cluster is unavailable".into()),
        (_, ty) => AdapterError::FailedPrecondition(format!(
            "the search cluster answered HTTP {status} for source `{source}` ({})",
            ty.unwrap_or("unexpected answer")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_safe_errors() {
        let e = status_error("tickets", 404, Some("index_not_found_exception"));
        assert_eq!(e, AdapterError::FailedPrecondition("the index of source `tickets` does not exist".into()));
        let e = status_error("kb", 400, Some("search_phase_execution_exception"));
        assert!(matches!(e, AdapterError::FailedPrecondition(ref m) if m.contains("search_phase_execution_exception")));
        assert!(matches!(status_error("kb", 503, None), AdapterError::Unavailable(_)));
        assert!(matches!(status_error("kb", 429, None), AdapterError::ResourceExhausted(_)));
        assert_eq!(status_error("kb", 504, None), AdapterError::DeadlineExceeded);
        assert!(matches!(status_error("kb", 401, None), AdapterError::FailedPrecondition(_)));
    }

    #[test]
    fn error_chains_are_shown_without_urls() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("error sending request for url (http://user:pw@db.internal:9200/tickets/_search)")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = Outer(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused"));
        let shown = SafeError(&e).to_string();
        assert_eq!(shown, "error sending request: connection refused");
    }
}
