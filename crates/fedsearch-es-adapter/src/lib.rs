//! The es-adapter: full-text search over Elasticsearch/OpenSearch indices, with the end user's permissions applied inside the query.
//!
//! Each configured logical source (tickets, incident logs, KB articles, ...) is an index or
//! index pattern with a field mapping. A sub-query becomes one `_search` whose `bool.filter`
//! holds the user's permission filter (`public` OR one of the user's groups in
//! `allowed_groups` OR the user in `allowed_users`), so documents the user may not see never
//! leave the cluster. Fetch re-runs the same permission filter on the one document. Scoring is
//! a `bool.should` of the question as asked, the router's key terms (any of them) and exact
//! entity matches on id fields, so no query is all-terms-or-nothing; hits carry version
//! metadata when the source names its version fields.
//!
//! - [`config`]: the config file (cluster, credentials, sources) and its validation.
//! - [`query`]: the only place that writes query DSL.
//! - [`client`]: the HTTP client and the mapping of cluster failures to adapter errors.
//! - [`hits`]: responses into hits, snippets and fetched documents.
//! - [`adapter`]: the [`fedsearch_adapter_kit::Adapter`] implementation.
//! - [`describe`]: what each index holds (keyword values, titles) for `Describe`.
//! - [`diagnose`]: the self-check of `fedsearch doctor` (mappings against the config).

pub mod adapter;
pub mod client;
pub mod config;
pub mod describe;
pub mod diagnose;
pub mod hits;
pub mod query;

pub use adapter::{ADAPTER_NAME, EsAdapter};
pub use config::EsAdapterConfig;
