//! The wiki adapter of fedsearch: DokuWiki and Confluence searched as the end user
//!
//! Policies, runbooks and internal docs live in wikis. This adapter serves one or more logical
//! wiki sources over the shared `SourceAdapter` contract. Every backend call carries the END
//! USER's own wiki credential — delegated by the caller or mapped from the verified subject via
//! a secrets file — so the wiki applies its own ACL at the source; there is no service account
//! and no fallback to one. A user without a credential gets state DENIED.
//!
//! Code map: [`config`] (the config file), [`identity`] (whose credential), [`source`] (one
//! logical source: filters, limits, hits), [`dokuwiki`] + [`xmlrpc`] (DokuWiki over XML-RPC),
//! [`confluence`] (CQL over REST; verified against documented shapes only), [`terms`] (a
//! sub-query → several OR-ed searches), [`merge`] (their answers → one ranked list),
//! [`passages`] (what a snippet does not show of a page's matches), [`version`] (version lines
//! in page text, `_<year>` ids), [`text`] (clean, bounded snippets), [`http`] (shared HTTP error
//! mapping), [`diagnose`] (the self-check of `fedsearch doctor`).

pub mod config;
pub mod confluence;
pub mod diagnose;
pub mod dokuwiki;
pub mod http;
pub mod identity;
pub mod merge;
pub mod passages;
pub mod source;
pub mod terms;
pub mod text;
pub mod version;
pub mod xmlrpc;

use std::{collections::HashMap, path::Path, sync::Arc, time::Duration};

use fedsearch_adapter_kit::{Adapter, AdapterError, DescribeResponse, FetchRequest, FetchResponse, HitSink, SubQuery};

pub use crate::config::WikiAdapterConfig;
use crate::{
    config::resolve,
    confluence::Confluence,
    dokuwiki::DokuWiki,
    identity::{CredentialKind, Identity},
    source::{Connector, Source, Versions},
    version::Parser,
};

/// The adapter's name in `DescribeResponse`.
pub const ADAPTER_NAME: &str = "wiki-adapter";

/// The wiki adapter: its configured sources by name.
#[derive(Debug, Clone)]
pub struct WikiAdapter {
    sources: Arc<HashMap<String, Source>>,
    order: Arc<Vec<String>>,
    default_timeout: Duration,
}

impl WikiAdapter {
    /// Builds every source: resolves `*_env` settings and reads secrets files. The error is one
    /// line naming the source and the problem (never a secret).
    pub fn build(config: &WikiAdapterConfig) -> Result<Self, String> {
        let http = http::client()?;
        let mut sources = HashMap::new();
        let mut order = Vec::new();
        for (i, sc) in config.sources.iter().enumerate() {
            let at = format!("sources[{i}]");
            let (connector, kind) = match (&sc.dokuwiki, &sc.confluence) {
                (Some(d), _) => {
                    let url = resolve(&d.url, &d.url_env, &format!("{at}.dokuwiki.url"))?;
                    (Connector::DokuWiki(DokuWiki::new(&url, http.clone())), CredentialKind::Basic)
                }
                (None, Some(c)) => {
                    let url = resolve(&c.url, &c.url_env, &format!("{at}.confluence.url"))?;
                    let kind = match c.flavor {
                        config::ConfluenceFlavor::Cloud => CredentialKind::Basic,
                        config::ConfluenceFlavor::DataCenter => CredentialKind::Bearer,
                    };
                    (Connector::Confluence(Confluence::new(&url, c, sc.namespaces.clone(), http.clone())), kind)
                }
                (None, None) => return Err(format!("`{at}` needs a connector")),
            };
            let secrets = match sc.identity.mode {
                config::IdentityMode::Mapped => Some(resolve(
                    &sc.identity.secrets_file,
                    &sc.identity.secrets_file_env,
                    &format!("{at}.identity.secrets_file"),
                )?),
                config::IdentityMode::Delegated => None,
            };
            let identity = Identity::load(sc.identity.mode, kind, secrets.as_deref().map(Path::new))
                .map_err(|e| format!("`{at}.identity`: {e}"))?;
            let versions = if sc.versions.enabled && sc.versions.lookups > 0 {
                let parser = match &sc.versions.patterns {
                    Some(p) => {
                        Parser::new(p, sc.versions.scan_lines).map_err(|e| format!("`{at}.versions.patterns`: {e}"))?
                    }
                    None => Parser::with_defaults(sc.versions.scan_lines),
                };
                Some(Versions::new(parser, sc.versions.lookups, sc.versions.cache_entries))
            } else {
                None
            };
            order.push(sc.name.clone());
            sources.insert(
                sc.name.clone(),
                Source {
                    name: sc.name.clone(),
                    description: sc.description.clone(),
                    when_to_use: sc.when_to_use.clone(),
                    connector,
                    identity: Arc::new(identity),
                    doc_types: sc.doc_types.clone(),
                    default_doc_type: sc.default_doc_type.clone(),
                    namespaces: sc.namespaces.clone(),
                    request_timeout: sc.request_timeout,
                    search: sc.search.clone(),
                    versions,
                },
            );
        }
        Ok(Self { sources: Arc::new(sources), order: Arc::new(order), default_timeout: config.server.default_timeout })
    }

    fn source(&self, name: &str) -> Result<&Source, AdapterError> {
        self.sources.get(name).ok_or_else(|| AdapterError::NotFound(format!("unknown source `{name}`")))
    }
}

impl Adapter for WikiAdapter {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: ADAPTER_NAME.into(),
            sources: self.order.iter().filter_map(|n| self.sources.get(n)).map(Source::describe).collect(),
        }
    }

    async fn search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        let source = self.source(&query.source)?;
        let budget = fedsearch_adapter_kit::remaining(&query, self.default_timeout);
        let answer = source.search(&query, budget).await?;
        tracing::debug!(source = %source.name, hits = answer.hits.len(), "wiki search done");
        for note in answer.notes.into_iter().chain(source.ignored_filters(query.filters.as_ref())) {
            sink.note(note);
        }
        sink.send(answer.hits).await;
        Ok(())
    }

    async fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, AdapterError> {
        let source = self.source(&request.source)?;
        source.fetch(&request.reference, request.user.as_ref(), self.default_timeout).await
    }

    async fn diagnose(&self, sources: Vec<String>) -> Option<Vec<fedsearch_adapter_kit::diagnostics::Diagnostic>> {
        let mut out = Vec::new();
        for name in self.order.iter().filter(|n| fedsearch_adapter_kit::diagnostics::wanted(&sources, n)) {
            if let Some(source) = self.sources.get(name) {
                out.extend(diagnose::diagnose_source(source).await);
            }
        }
        Some(out)
    }
}
