//! The HTTP side both connectors share: one reqwest client, bounded body reads, and the mapping
//! of transport failures and HTTP statuses to [`AdapterError`]s with messages safe to show (no
//! hosts, no credentials, no query text).

use std::time::Duration;

use fedsearch_adapter_kit::AdapterError;

/// Bodies larger than this are refused (a wiki answer is a few KB to a few MB).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The client every source of one adapter shares (connection pool, rustls).
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(3))
        .tcp_nodelay(true)
        .user_agent(concat!("fedsearch-wiki-adapter/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the http client: {e}"))
}

/// A failed send (no HTTP answer at all).
pub fn send_error(e: reqwest::Error, wiki: &str) -> AdapterError {
    let e = e.without_url();
    tracing::warn!(wiki, error = %e, "wiki request failed");
    if e.is_timeout() {
        AdapterError::DeadlineExceeded
    } else {
        AdapterError::Unavailable(format!("the {wiki} is not reachable"))
    }
}

/// Reads the body up to [`MAX_BODY_BYTES`].
pub async fn read_body(mut response: reqwest::Response, wiki: &str) -> Result<String, AdapterError> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(AdapterError::ResourceExhausted(format!("the {wiki} answer is too large")));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => return Err(send_error(e, wiki)),
        }
    }
    String::from_utf8(body).map_err(|_| AdapterError::FailedPrecondition(format!("the {wiki} answer is not UTF-8")))
}

/// The error for a non-success HTTP status, shared by both connectors.
pub fn status_error(status: u16, wiki: &str) -> AdapterError {
    match status {
        401 => AdapterError::Unauthenticated(format!("the {wiki} did not accept this user's credential")),
        403 => AdapterError::PermissionDenied(format!("the {wiki} denies this user access")),
        404 => AdapterError::NotFound(format!("the {wiki} has no such page, or this user may not see it")),
        400 => AdapterError::InvalidArgument(format!("the {wiki} rejected the query")),
        429 => AdapterError::ResourceExhausted(format!("the {wiki} is rate limiting this user; retry later")),
        502..=504 => AdapterError::Unavailable(format!("the {wiki} is unavailable (HTTP {status})")),
        s if s >= 500 => AdapterError::Unavailable(format!("the {wiki} failed (HTTP {status})")),
        s => AdapterError::FailedPrecondition(format!("the {wiki} answered with HTTP {s}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_the_documented_states() {
        use fedsearch_proto::types::SourceState;
        let state = |s| status_error(s, "wiki").state();
        assert_eq!(state(401), SourceState::Denied);
        assert_eq!(state(403), SourceState::Denied);
        assert_eq!(state(503), SourceState::Unavailable);
        assert_eq!(state(500), SourceState::Unavailable);
        assert_eq!(status_error(429, "wiki").code(), tonic::Code::ResourceExhausted);
        assert_eq!(status_error(400, "wiki").code(), tonic::Code::InvalidArgument);
        assert_eq!(status_error(404, "wiki").code(), tonic::Code::NotFound);
        assert_eq!(status_error(302, "wiki").code(), tonic::Code::FailedPrecondition);
    }
}
