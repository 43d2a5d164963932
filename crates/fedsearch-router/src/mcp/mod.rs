//! The MCP server: `search`, `fetch_document` and `list_sources` tools over MCP's streamable
//! HTTP transport (rmcp), for agents that speak MCP rather than gRPC.
//!
//! Every HTTP request must carry the same `Authorization: Bearer <JWT>` the gRPC API takes;
//! requests without a valid token get HTTP 401 before they reach MCP. Each tool call verifies
//! the token of *its own* request again and runs with that user's identity end to end, so one
//! MCP session can never act for another user, and no shared service credential exists.

use std::{borrow::Cow, future::Future, net::SocketAddr, sync::Arc};

use axum::{http::header, middleware};
use fedsearch_core::Identity;
use fedsearch_proto::{
    api::{ContextOptions, GetDocumentRequest, SearchRequest},
    types::{Filters, TimeRange},
};
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
    },
    service::RequestContext,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::Instrument;

use tonic::Status;

use crate::{admission::Ticket, audit, documents, search, sources, state::RouterState};

mod edge;

/// Default token budget of the `search` tool's packed context.
pub const DEFAULT_TOKEN_BUDGET: u32 = 1500;

const INSTRUCTIONS: &str = "fedsearch searches many company sources at once (orders, support tickets, incident logs, \
knowledge base, wiki policies and runbooks) as the signed-in user, and returns one deduplicated, ranked, cited list. \
Call `search` once with the user's whole question instead of calling sources one by one; cite results with their \
[n] markers. When two versions of a document appear, the newer one is current and the older one is marked \
SUPERSEDED: never quote a superseded version as current. Use `fetch_document` for the full text of a cited result.";

#[derive(Clone)]
pub struct McpHandler {
    state: RouterState,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    top_k: Option<u32>,
    #[serde(default)]
    sources: Vec<String>,
    #[serde(default)]
    filters: Option<FilterArgs>,
    #[serde(default)]
    token_budget: Option<u32>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FilterArgs {
    #[serde(default)]
    time_range: Option<TimeRangeArgs>,
    #[serde(default)]
    doc_types: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    equals: std::collections::HashMap<String, String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TimeRangeArgs {
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedbackArgs {
    used: Vec<String>,
    #[serde(default)]
    rejected: Vec<String>,
    #[serde(default)]
    shown: Vec<String>,
    #[serde(default)]
    trace_id: String,
    #[serde(default)]
    query: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    full_text_ref: String,
}

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

fn tools() -> Vec<Tool> {
    let mut search_schema = sources::search_parameters_schema(&sources::ALL_FILTERS);
    search_schema["properties"]["sources"] = json!({
        "type": "array", "items": {"type": "string"},
        "description": "Optional: only these sources (names from list_sources). Leave empty to let fedsearch choose."});
    search_schema["properties"]["token_budget"] = json!({
        "type": "integer", "minimum": 100, "maximum": 32000, "default": DEFAULT_TOKEN_BUDGET,
        "description": "Maximum tokens of the packed, cited context returned."});
    let read_only = ToolAnnotations::new().read_only(true).open_world(false);
    vec![
        Tool::new(
            "search",
            "Search every company source the user may read, in one call: orders and shipments (order numbers like \
             SO20261001), support tickets, incident logs, knowledge base and wiki policies/runbooks. Returns a compact, \
             cited context (newest version of a policy first; older versions marked SUPERSEDED) plus per-source status. \
             Ask the user's whole question; include order numbers or customer ids when known.",
            object(search_schema),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "fetch_document",
            "Fetch the full text of one search result by its `ref` (the full_text_ref shown after `ref:` in search \
             results). The source checks the user's permission again.",
            object(json!({
                "type": "object",
                "properties": {"full_text_ref": {"type": "string", "minLength": 3,
                    "description": "The ref of a search result, e.g. wiki:public:return_policy"}},
                "required": ["full_text_ref"],
                "additionalProperties": false
            })),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "feedback",
            "Report which search results you used in your answer (and, optionally, which were wrong), by their \
             citation ids `<source>:<id>`. fedsearch learns per-source weights from it.",
            object(json!({
                "type": "object",
                "properties": {
                    "used": {"type": "array", "items": {"type": "string"}, "description": "Ids of results used"},
                    "rejected": {"type": "array", "items": {"type": "string"}, "description": "Ids judged wrong"},
                    "shown": {"type": "array", "items": {"type": "string"}, "description": "Every id you were shown"},
                    "trace_id": {"type": "string", "description": "The trace_id of the search"},
                    "query": {"type": "string", "description": "The question that was searched"}
                },
                "required": ["used"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "list_sources",
            "List the sources this user may search, with what each holds and when to use it.",
            object(json!({"type": "object", "properties": {}, "additionalProperties": false})),
        )
        .with_annotations(read_only),
    ]
}

fn tool_error(message: impl Into<String>) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message.into())]).into()
}

fn parse_time(s: &Option<String>, field: &str) -> Result<Option<prost_types::Timestamp>, String> {
    match s {
        None => Ok(None),
        Some(v) => fedsearch_core::time::parse_rfc3339(v)
            .map(Some)
            .ok_or_else(|| format!("filters.time_range.{field} must be an RFC 3339 date-time")),
    }
}

impl McpHandler {
    fn identity(&self, ctx: &RequestContext<RoleServer>) -> Result<Identity, McpError> {
        let parts = ctx
            .extensions
            .get::<http::request::Parts>()
            .ok_or_else(|| McpError::invalid_request("missing HTTP request context", None))?;
        let header = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| McpError::invalid_request("missing authorization", None))?;
        self.state.verifier.verify_header(header).map_err(|e| McpError::invalid_request(e.to_string(), None))
    }

    async fn search(
        &self,
        user: &Identity,
        ticket: Ticket,
        args: SearchArgs,
        record: &mut audit::Record,
    ) -> CallToolResponse {
        let filters = match args.filters {
            None => None,
            Some(f) => {
                let time_range = match f.time_range {
                    None => None,
                    Some(tr) => match (parse_time(&tr.from, "from"), parse_time(&tr.to, "to")) {
                        (Ok(from), Ok(to)) => Some(TimeRange { from, to }),
                        (Err(e), _) | (_, Err(e)) => return tool_error(e),
                    },
                };
                Some(Filters { time_range, doc_types: f.doc_types, tags: f.tags, equals: f.equals })
            }
        };
        let req = SearchRequest {
            query: args.query,
            top_k: args.top_k.unwrap_or(0),
            sources: args.sources,
            filters,
            context: Some(ContextOptions { token_budget: args.token_budget.unwrap_or(DEFAULT_TOKEN_BUDGET) }),
            ..Default::default()
        };
        match search::run_admitted(&self.state, user, ticket, req, None, None).await {
            Err(status) => {
                let status = fedsearch_core::errors::ensure_details(status);
                *record = std::mem::take(record).refused(&status);
                tool_error(format!("{}: {}", fedsearch_core::grpc::code_name(status.code()), status.message()))
            }
            Ok(resp) => {
                *record = std::mem::take(record).with_response(&resp);
                let statuses: Vec<Value> = resp
                    .sources
                    .iter()
                    .map(|s| {
                        json!({"source": s.source, "state": s.state().label(), "hits": s.hit_count,
                                    "latency_ms": s.latency_ms, "message": s.message})
                    })
                    .collect();
                let mut text = resp.context.as_ref().map(|c| c.text.clone()).unwrap_or_default();
                if text.is_empty() {
                    text = "No results the user may see matched.\n".into();
                }
                text.push_str("\nSources: ");
                text.push_str(
                    &resp
                        .sources
                        .iter()
                        .map(|s| format!("{} {}", s.source, s.state().label()))
                        .collect::<Vec<_>>()
                        .join(", "),
                );
                let hits: Vec<Value> = resp
                    .context
                    .iter()
                    .flat_map(|c| c.items.iter())
                    .map(|i| {
                        json!({"citation": i.citation, "source": i.source, "title": i.title, "url": i.url,
                                    "ref": i.full_text_ref, "superseded_by": i.superseded_by, "snippet": i.snippet})
                    })
                    .collect();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content =
                    Some(json!({"results": hits, "sources": statuses, "trace_id": resp.trace_id}));
                result.into()
            }
        }
    }
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("fedsearch", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name: Cow<'static, str> = request.name;
        let tool = known_tool(&name);
        // The tool call continues the caller's trace when the HTTP request carried `traceparent`.
        let span = tracing::info_span!(
            "mcp.tool",
            otel.name = %format!("mcp.tool {tool}"),
            otel.kind = "server",
            tool = %tool,
            user = tracing::field::Empty,
        );
        if let Some(parts) = context.extensions.get::<http::request::Parts>() {
            fedsearch_core::telemetry::set_parent(&span, fedsearch_core::propagation::extract(&parts.headers));
        }
        let method = format!("mcp.{tool}");
        let user = match span.in_scope(|| self.identity(&context)) {
            Ok(u) => u,
            Err(e) => {
                let status = Status::unauthenticated(e.message.to_string());
                span.in_scope(|| self.state.audit.write(audit::record("mcp", &method, None).refused(&status)));
                crate::metrics::mcp_tool(tool, false);
                return Err(e);
            }
        };
        span.record("user", user.subject.as_str());
        // The same admission as every gRPC call: one user's flood of tool calls is theirs alone.
        let ticket = match span.in_scope(|| self.state.admission.admit(&user.subject)) {
            Ok(ticket) => ticket,
            Err(s) => {
                span.in_scope(|| {
                    self.state.audit.write(audit::record("mcp", &method, Some(&user.subject)).refused(&s))
                });
                crate::metrics::mcp_tool(tool, false);
                return Ok(tool_error(format!("{}: {}", fedsearch_core::grpc::code_name(s.code()), s.message())));
            }
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let mut record = audit::record("mcp", &method, Some(&user.subject));
        let slot = &mut record;
        let result: Result<CallToolResponse, McpError> = async move {
            let record = slot;
            match name.as_ref() {
                "search" => match serde_json::from_value::<SearchArgs>(args) {
                    Ok(a) => {
                        record.query = self.state.audit.query(&a.query);
                        Ok(self.search(&user, ticket, a, record).await)
                    }
                    Err(e) => Ok(tool_error(format!("invalid arguments: {e}"))),
                },
                "fetch_document" => match serde_json::from_value::<FetchArgs>(args) {
                    Ok(a) => {
                        record.fetched_ids.push(a.full_text_ref.chars().take(256).collect());
                        let req = GetDocumentRequest { full_text_ref: a.full_text_ref, ..Default::default() };
                        match documents::get(&self.state, &user, req).await {
                            Err(s) => {
                                *record = std::mem::take(record).refused(&s);
                                Ok(tool_error(format!("{}: {}", fedsearch_core::grpc::code_name(s.code()), s.message())))
                            }
                            Ok(doc) => {
                                let text = format!("# {}\n{} | ref: {}\n\n{}", doc.title, doc.url, doc.id, doc.content);
                                Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
                            }
                        }
                    }
                    Err(e) => Ok(tool_error(format!("invalid arguments: {e}"))),
                },
                "feedback" => match serde_json::from_value::<FeedbackArgs>(args) {
                    Ok(a) => {
                        let req = fedsearch_proto::api::FeedbackRequest {
                            trace_id: a.trace_id,
                            query: a.query,
                            used: a.used,
                            rejected: a.rejected,
                            shown: a.shown,
                        };
                        match self.state.feedback.record(&self.state.registry, &user, &req).await {
                            Ok(r) => Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                                "recorded {} ids",
                                r.recorded
                            ))])
                            .into()),
                            Err(s) => Ok(tool_error(format!(
                                "{}: {}",
                                fedsearch_core::grpc::code_name(s.code()),
                                s.message()
                            ))),
                        }
                    }
                    Err(e) => Ok(tool_error(format!("invalid arguments: {e}"))),
                },
                "list_sources" => {
                    let listed = sources::list(&self.state.registry, &user);
                    record.sources = listed
                        .iter()
                        .map(|s| audit::SourceOutcome { source: s.name.clone(), state: "listed", hits: 0 })
                        .collect();
                    let list: Vec<Value> = listed
                        .into_iter()
                        .map(|s| {
                            json!({"name": s.name, "kind": s.kind, "description": s.description,
                                        "when_to_use": s.when_to_use, "when_not_to_use": s.when_not_to_use, "freshness": s.freshness, "cost": s.cost})
                        })
                        .collect();
                    let text = serde_json::to_string_pretty(&list).unwrap_or_default();
                    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
                }
                other => Err(McpError::invalid_params(format!("unknown tool `{other}`"), None)),
            }
        }
        .instrument(span.clone())
        .await;
        let ok = matches!(&result, Ok(r) if !is_error(r));
        if !ok && record.allowed {
            record.allowed = false;
            record.code = "INVALID_ARGUMENT".into();
        }
        crate::metrics::mcp_tool(tool, ok);
        span.in_scope(|| self.state.audit.write(record));
        result
    }
}

/// The tool's name as a bounded label (`other` for names that are not tools).
fn known_tool(name: &str) -> &'static str {
    match name {
        "search" => "search",
        "fetch_document" => "fetch_document",
        "feedback" => "feedback",
        "list_sources" => "list_sources",
        _ => "other",
    }
}

fn is_error(response: &CallToolResponse) -> bool {
    matches!(response, CallToolResponse::Complete(r) if r.is_error == Some(true))
}

/// Serves MCP at `http://<listen>/mcp` until `shutdown` resolves.
pub async fn serve(
    state: RouterState,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let config = state.config.mcp.clone().ok_or_else(|| anyhow::anyhow!("no mcp section"))?;
    let handler = McpHandler { state: state.clone() };
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = edge::keep_alive(&config);
    let sessions = Arc::new(sessions);
    let mut http = StreamableHttpServerConfig::default();
    http.allowed_hosts =
        if config.allowed_hosts.iter().any(|h| h == "*") { Vec::new() } else { config.allowed_hosts.clone() };
    http.allowed_origins = config.allowed_origins.clone();
    http.legacy_session_mode = !config.stateless;
    http.json_response = config.stateless;
    let service = StreamableHttpService::new(move || Ok(handler.clone()), sessions.clone(), http);
    let edge = Arc::new(edge::Edge::new(state, config, sessions));
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(edge.clone(), edge::guard))
        .route("/.well-known/oauth-protected-resource", axum::routing::get(edge::protected_resource))
        .route("/.well-known/oauth-protected-resource/mcp", axum::routing::get(edge::protected_resource))
        .with_state(edge);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await.map_err(|e| anyhow::anyhow!("mcp server: {e}"))
}

/// The address the MCP endpoint listens on, when enabled.
pub fn listen_addr(config: &crate::config::RouterConfig) -> Option<SocketAddr> {
    config.mcp.as_ref().map(|m| m.listen)
}
