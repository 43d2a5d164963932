//! The MCP endpoint's HTTP edge, before rmcp sees a request: the bearer token (401 with an
//! RFC 9728 `resource_metadata` challenge when configured), the session caps (global and per
//! user; a new session beyond them gets 503 or 429 with Retry-After), 204 for a DELETE that
//! closed a session, and the protected-resource metadata document.

use std::{sync::Arc, time::Duration};

use axum::{
    Json,
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;

use crate::{
    config::{McpSection, ProtectedResource},
    state::RouterState,
};

const SESSION_HEADER: &str = "mcp-session-id";

/// What the edge middleware shares.
pub struct Edge {
    pub state: RouterState,
    pub config: McpSection,
    pub sessions: Arc<LocalSessionManager>,
    /// Open sessions and their users, forgotten after the same idle time rmcp closes them at.
    book: moka::sync::Cache<String, String>,
}

impl Edge {
    pub fn new(state: RouterState, config: McpSection, sessions: Arc<LocalSessionManager>) -> Self {
        let book = moka::sync::Cache::builder()
            .time_to_idle(config.session_idle_timeout)
            .max_capacity(config.max_sessions as u64 * 2)
            .build();
        Self { state, config, sessions, book }
    }

    fn sessions_of(&self, subject: &str) -> usize {
        self.book.run_pending_tasks();
        self.book.iter().filter(|(_, owner)| owner.as_str() == subject).count()
    }

    /// Whether a new session may open now; the refusal otherwise.
    async fn may_open_session(&self, subject: &str) -> Result<(), Response> {
        if self.sessions.sessions.read().await.len() >= self.config.max_sessions {
            return Err(retry_later(StatusCode::SERVICE_UNAVAILABLE, "the MCP endpoint holds its maximum of sessions"));
        }
        if self.sessions_of(subject) >= self.config.max_sessions_per_user {
            let message = format!(
                "this user holds {} MCP sessions, the most allowed; close one (HTTP DELETE) or reuse it",
                self.config.max_sessions_per_user
            );
            return Err(retry_later(StatusCode::TOO_MANY_REQUESTS, &message));
        }
        Ok(())
    }

    fn unauthorized(&self, message: &str, token_sent: bool) -> Response {
        // RFC 6750 §3: `Bearer` and its comma-separated auth-params.
        let mut params = Vec::new();
        if let Some(pr) = &self.config.protected_resource {
            params.push(format!("resource_metadata=\"{}\"", metadata_url(&pr.resource)));
        }
        if token_sent {
            params.push("error=\"invalid_token\"".to_string());
        }
        let challenge = if params.is_empty() { "Bearer".to_string() } else { format!("Bearer {}", params.join(", ")) };
        let value = HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static("Bearer"));
        (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, value)], message.to_string()).into_response()
    }
}

fn retry_later(status: StatusCode, message: &str) -> Response {
    (status, [(header::RETRY_AFTER, HeaderValue::from_static("5"))], message.to_string()).into_response()
}

/// Where the metadata of `resource` lives (RFC 9728 §3.1): the well-known path inserted
/// between the host and the resource's path.
pub fn metadata_url(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("https", resource));
    let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        format!("{scheme}://{host}/.well-known/oauth-protected-resource")
    } else {
        format!("{scheme}://{host}/.well-known/oauth-protected-resource/{path}")
    }
}

/// The protected-resource metadata document (RFC 9728 §2).
pub fn metadata_document(pr: &ProtectedResource) -> serde_json::Value {
    let mut doc = json!({
        "resource": pr.resource,
        "authorization_servers": pr.authorization_servers,
        "bearer_methods_supported": ["header"],
        "resource_name": "fedsearch",
    });
    if !pr.scopes_supported.is_empty() {
        doc["scopes_supported"] = json!(pr.scopes_supported);
    }
    doc
}

pub async fn protected_resource(State(edge): State<Arc<Edge>>) -> Response {
    match &edge.config.protected_resource {
        Some(pr) => Json(metadata_document(pr)).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The middleware in front of `/mcp`.
pub async fn guard(State(edge): State<Arc<Edge>>, request: Request, next: Next) -> Response {
    let authorization = request.headers().get_all(header::AUTHORIZATION).iter().collect::<Vec<_>>();
    let user = match authorization.as_slice() {
        [] => return edge.unauthorized("missing authorization header: send `Authorization: Bearer <token>`", false),
        [one] => match one
            .to_str()
            .map_err(|e| e.to_string())
            .and_then(|h| edge.state.verifier.verify_header(h).map_err(|e| e.to_string()))
        {
            Ok(user) => user,
            Err(e) => return edge.unauthorized(&e, true),
        },
        _ => return edge.unauthorized("send exactly one authorization header", true),
    };
    let session = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let method = request.method().clone();
    if !edge.config.stateless
        && method == Method::POST
        && session.is_none()
        && let Err(refusal) = edge.may_open_session(&user.subject).await
    {
        return refusal;
    }
    if let Some(id) = &session {
        edge.book.get(id); // a use keeps the entry as alive as rmcp keeps the session
    }
    let mut response = next.run(request).await;
    if session.is_none()
        && let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())
    {
        edge.book.insert(id.to_string(), user.subject.clone());
    }
    if method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
        if let Some(id) = &session {
            edge.book.invalidate(id);
        }
        // The session is closed: nothing more will happen (MCP clients expect 200 or 204).
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// How long rmcp keeps an idle session (the same as the book's idle time).
pub fn keep_alive(config: &McpSection) -> Option<Duration> {
    Some(config.session_idle_timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_inserts_the_well_known_path_before_the_resource_path() {
        assert_eq!(
            metadata_url("https://search.example.com/mcp"),
            "https://search.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("https://search.example.com/"),
            "https://search.example.com/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn the_document_names_the_resource_and_its_authorization_servers() {
        let pr = ProtectedResource {
            resource: "https://s.example.com/mcp".into(),
            authorization_servers: vec!["https://login.example.com".into()],
            scopes_supported: vec![],
        };
        let doc = metadata_document(&pr);
        assert_eq!(doc["resource"], "https://s.example.com/mcp");
        assert_eq!(doc["authorization_servers"][0], "https://login.example.com");
        assert!(doc.get("scopes_supported").is_none());
    }
}
