//! [`SqlAdapter`]: the kit's `Adapter` over the template catalog and the database pool.
//!
//! Search plans the templates for a sub-query, runs them concurrently (each bounded by the
//! sub-query deadline and its row limit) and sends one batch per template, in config order,
//! with ranks continuing across batches. Fetch resolves `<entity>:<id>` to the entity's fetch
//! template, which re-applies the permission predicate for the user at that moment.

use std::{collections::BTreeMap, time::Duration};

use fedsearch_adapter_kit::{
    Adapter, AdapterError, DescribeResponse, FetchRequest, FetchResponse, HitSink, SourceDescription, SubQuery,
    UserContext,
};
use tokio::time::Instant;

use std::sync::Arc;

use crate::{
    config::{LookupConfig, SourceConfig, SqlAdapterConfig},
    db::{Database, Record},
    lookup::{Lookup, Lookups, Reload},
    mapping,
    select::{self, Run},
    template::{Catalog, ID_PARAM, LIMIT_PARAM, Template, Value},
};

/// The adapter name reported by `Describe`.
pub const ADAPTER_NAME: &str = "sql-adapter";

/// The longest id part of a fetch reference.
const MAX_REFERENCE_ID: usize = 256;

/// What one search did, beyond its hits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub hits: u32,
    /// Safe notes for the caller (no template matched, a filter not applied); empty when none.
    pub message: String,
}

/// The SQL adapter.
#[derive(Debug)]
pub struct SqlAdapter {
    catalog: Catalog,
    db: Database,
    source: SourceConfig,
    default_timeout: Duration,
    lookup_configs: Vec<LookupConfig>,
    /// The loaded lookups and when to load them again.
    lookups: tokio::sync::RwLock<Reload>,
    /// What the database holds, read in the background ([`crate::describe`]).
    vocabulary: fedsearch_adapter_kit::vocabulary::VocabularyStore,
}

impl SqlAdapter {
    /// Compiles the templates and builds the (lazily connecting) pool.
    pub fn new(config: &SqlAdapterConfig) -> Result<Self, String> {
        let engine = config.database.engine()?;
        let catalog = Catalog::compile(config, engine)?;
        let db = Database::connect_lazy(&config.database)?;
        tracing::info!(
            engine = %engine,
            templates = catalog.templates.len(),
            fetch_entities = catalog.fetch.len(),
            "sql adapter ready"
        );
        let vocabulary = config.describe.store([config.source.name.as_str()]);
        if config.describe.reads(&config.source.name) {
            // A pool of its own, so the background read never takes a search's connection.
            let names = Arc::new(Database::connect_lazy(&config.database)?);
            let lookups = Arc::new(config.lookups.clone());
            let templates = Arc::new(crate::describe::template_terms(&catalog.templates));
            let budget = config.server.default_timeout;
            vocabulary.spawn_refresh(config.describe.refresh, move |_| {
                let (names, lookups, templates) = (names.clone(), lookups.clone(), templates.clone());
                async move { crate::describe::read(&names, &lookups, &templates, budget).await }
            });
        }
        Ok(Self {
            catalog,
            db,
            source: config.source.clone(),
            default_timeout: config.server.default_timeout,
            lookup_configs: config.lookups.clone(),
            lookups: tokio::sync::RwLock::new(Reload::default()),
            vocabulary,
        })
    }

    /// The lookup tables, reloaded when older than the shortest `refresh`. A failed load keeps
    /// the previous tables (names are an aid, not an answer), is logged, and is not tried again
    /// before its back-off ([`Reload`]).
    async fn lookups(&self, budget: Duration) -> Arc<Lookups> {
        if self.lookup_configs.is_empty() {
            return Arc::default();
        }
        let refresh = self.lookup_configs.iter().map(|l| l.refresh).min().unwrap_or_default();
        // Searches share the loaded tables; only a reload takes the lock alone (once: others wait
        // for it and then find the tables fresh, or the reload backing off).
        {
            let state = self.lookups.read().await;
            if !state.due(std::time::Instant::now(), refresh) {
                return state.tables.clone();
            }
        }
        let mut guard = self.lookups.write().await;
        if !guard.due(std::time::Instant::now(), refresh) {
            return guard.tables.clone();
        }
        let mut tables = Vec::new();
        for l in &self.lookup_configs {
            match self.db.query(l.sql.clone(), Vec::new(), l.max_rows, budget).await {
                Ok(rows) => {
                    let pairs = rows
                        .iter()
                        .filter_map(|r| Some((mapping::cell_text(r, "value")?, mapping::cell_text(r, "label")?)));
                    tables.push(Lookup::new(&l.param, pairs).with_max_values(l.max_values));
                }
                Err(e) => {
                    let retry_in = guard.failed(std::time::Instant::now());
                    tracing::warn!(lookup = %l.name, error = %e, retry_in_s = retry_in.as_secs(), "lookup could not be loaded");
                    return guard.tables.clone();
                }
            }
        }
        guard.loaded(std::time::Instant::now(), Lookups { tables });
        guard.tables.clone()
    }

    /// The self-check `fedsearch doctor` reads ([`crate::diagnose`]): (severity, check,
    /// message, fix) per finding.
    pub async fn self_check(&self) -> Vec<fedsearch_adapter_kit::diagnostics::Diagnostic> {
        let lookups: Vec<(String, String)> =
            self.lookup_configs.iter().map(|l| (l.name.clone(), l.sql.clone())).collect();
        crate::diagnose::diagnose(&self.source.name, &self.catalog, &self.db, &lookups).await
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn check_source(&self, source: &str) -> Result<(), AdapterError> {
        if source.is_empty() || source == self.source.name {
            Ok(())
        } else {
            Err(AdapterError::NotFound(format!("unknown source {}", select::shown(source))))
        }
    }

    async fn run_template(
        &self,
        run: &Run<'_>,
        user: &UserContext,
        budget: Duration,
    ) -> Result<Vec<Record>, AdapterError> {
        let (sql, binds) = run.template.bind(&self.catalog, &run.values, user)?;
        let limit = match run.values.get(LIMIT_PARAM) {
            Some(Value::Int(n)) => usize::try_from(*n).unwrap_or(1),
            _ => run.template.max_rows as usize,
        };
        self.db.query(sql, binds, limit, budget).await
    }

    /// Runs one sub-query, sending hits to `sink`; returns the hit count and any notes.
    pub async fn run_search(&self, query: SubQuery, sink: HitSink) -> Result<Outcome, AdapterError> {
        let started = Instant::now();
        self.check_source(&query.source)?;
        let user = query.user.clone().unwrap_or_default();
        let budget = fedsearch_adapter_kit::remaining(&query, self.default_timeout);
        let asked = if query.original_text.is_empty() { &query.text } else { &query.original_text };
        let linked = self.lookups(budget).await.link(asked);
        let plan = select::plan(&self.catalog, &query, &linked)?;
        // One deadline for the first lookups and every follow-up step, short of the kit's own by
        // the time to rank and send what was found: a step cut at it still delivers the rest.
        let reserve = answer_reserve(budget);
        let deadline = started + budget.saturating_sub(reserve);
        let first_budget = budget.saturating_sub(reserve);
        let results =
            futures::future::join_all(plan.runs.iter().map(|run| self.run_template(run, &user, first_budget))).await;
        let total_limit = if query.limit == 0 { u32::MAX } else { query.limit } as usize;
        let mut first_error = None;
        let mut hits = Vec::new();
        let mut seen_hits = std::collections::HashSet::new();
        // Every first lookup's rows: for the keyed follow-ups, then the configured ones.
        let mut firsts: Vec<(&Template, Vec<Record>)> = Vec::new();
        for (run, result) in plan.runs.iter().zip(results) {
            let rows = match result {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::warn!(template = %run.template.name, error = %e, "template failed");
                    first_error.get_or_insert(e);
                    continue;
                }
            };
            tracing::debug!(template = %run.template.name, rows = rows.len(), "template answered");
            let matched = run.keywords.join(", ");
            for record in &rows {
                if let Some(mut hit) = mapping::to_hit(run.template, record, 0, &self.catalog.time)
                    && seen_hits.insert(hit.local_id.clone())
                {
                    if !matched.is_empty() {
                        hit.metadata.insert("matched_keywords".into(), matched.clone());
                    }
                    hits.push(hit);
                }
            }
            firsts.push((run.template, rows));
        }
        let now = query.as_of.as_ref().and_then(fedsearch_core::time::to_chrono).unwrap_or_else(chrono::Utc::now);
        let limits = &self.catalog.follow_up_limits;
        let mut seen = std::collections::HashSet::new();
        let ran: std::collections::HashSet<&str> = plan.runs.iter().map(|r| r.template.name.as_str()).collect();
        let mut keyed = crate::followup::keyed(&self.catalog, &query, &firsts, &ran, now, &mut seen);
        // (template, rows, chain) of the last step, for its follow-ups.
        let mut frontier: Vec<(&Template, Vec<Record>, String)> = firsts
            .into_iter()
            .filter(|(t, _)| !t.follow_ups.is_empty())
            .map(|(t, rows)| (t, rows, t.name.clone()))
            .collect();
        let mut runs_left = limits.max_runs as usize;
        // Follow-ups cut by the deadline: (parent hit id, template).
        let mut timed_out: Vec<(String, String)> = Vec::new();
        for _depth in 0..limits.max_depth {
            if (frontier.is_empty() && keyed.is_empty()) || runs_left == 0 {
                break;
            }
            let mut next = std::mem::take(&mut keyed);
            for (template, rows, via) in &frontier {
                next.extend(crate::followup::next(&self.catalog, template, rows, via, query.limit, now, &mut seen));
            }
            next.truncate(runs_left);
            runs_left -= next.len();
            let remaining = deadline.saturating_duration_since(Instant::now());
            if next.is_empty() {
                break;
            }
            if remaining.is_zero() {
                timed_out.extend(next.iter().map(|n| (parent_hit_id(&n.via, &n.parent), n.template.name.clone())));
                first_error.get_or_insert(AdapterError::DeadlineExceeded);
                break;
            }
            let user = &user;
            let results = futures::future::join_all(next.iter().map(|n| {
                let run = Run { template: n.template, values: n.values.clone(), keywords: Vec::new() };
                async move { self.run_template(&run, user, remaining).await }
            }))
            .await;
            frontier = Vec::new();
            for (n, result) in next.iter().zip(results) {
                let rows = match result {
                    Ok(rows) => rows,
                    Err(e) => {
                        tracing::warn!(template = %n.template.name, via = %n.via, error = %e, "follow-up failed");
                        if e == AdapterError::DeadlineExceeded {
                            timed_out.push((parent_hit_id(&n.via, &n.parent), n.template.name.clone()));
                        }
                        first_error.get_or_insert(e);
                        continue;
                    }
                };
                for record in &rows {
                    if let Some(mut hit) = mapping::to_hit(n.template, record, 0, &self.catalog.time)
                        && seen_hits.insert(hit.local_id.clone())
                    {
                        hit.metadata.insert("via".into(), n.via.clone());
                        hit.metadata.insert("via_row".into(), n.parent.clone());
                        hits.push(hit);
                    }
                }
                if !n.template.follow_ups.is_empty() {
                    frontier.push((n.template, rows, n.via.clone()));
                }
            }
        }
        if !timed_out.is_empty() {
            mark_timed_out(&mut hits, &timed_out);
            let mut steps: Vec<&str> = timed_out.iter().map(|(_, t)| t.as_str()).collect();
            steps.sort_unstable();
            steps.dedup();
            sink.note(format!(
                "follow-up {} timed out: the hits found before it are delivered, its own are missing",
                steps.join(", ")
            ));
        }
        let asked = if query.original_text.is_empty() { &query.text } else { &query.original_text };
        crate::ranking::by_question(&mut hits, asked, &query.terms);
        hits.truncate(total_limit);
        let rank = hits.len() as u32;
        if !hits.is_empty() {
            sink.send(hits).await;
        }
        let templates: Vec<&str> = plan.runs.iter().map(|r| r.template.name.as_str()).collect();
        tracing::info!(
            templates = ?templates,
            hits = rank,
            latency_ms = started.elapsed().as_millis() as u64,
            "sql sub-query done"
        );
        if let Some(e) = first_error {
            return Err(e);
        }
        Ok(Outcome { hits: rank, message: plan.notes.join("; ") })
    }

    /// The fetch template and id a reference names.
    fn resolve_reference<'a>(&'a self, reference: &'a str) -> Result<(&'a Template, &'a str), AdapterError> {
        let not_found = || AdapterError::NotFound("no such record".into());
        let (entity, id) = reference.split_once(':').ok_or_else(not_found)?;
        let template = self.catalog.fetch.get(entity).ok_or_else(not_found)?;
        if id.is_empty() || id.chars().count() > MAX_REFERENCE_ID || id.contains('\0') {
            return Err(AdapterError::InvalidArgument("the reference id is not valid".into()));
        }
        Ok((template, id))
    }

    /// Fetches one full record, re-checking the permission predicate for `request.user`.
    pub async fn run_fetch(&self, request: FetchRequest) -> Result<FetchResponse, AdapterError> {
        self.check_source(&request.source)?;
        let user = request.user.clone().unwrap_or_default();
        let (template, id) = self.resolve_reference(&request.reference)?;
        let mut values = BTreeMap::new();
        values.insert(ID_PARAM.to_string(), Value::Text(id.to_string()));
        values.insert(LIMIT_PARAM.to_string(), Value::Int(1));
        for (name, param) in &template.params {
            if let Some(default) = &param.spec.default {
                values.insert(name.clone(), param.parse(name, default).map_err(AdapterError::InvalidArgument)?);
            }
        }
        let (sql, binds) = template.bind(&self.catalog, &values, &user)?;
        let rows = self.db.query(sql, binds, 1, self.default_timeout).await?;
        rows.first()
            .and_then(|record| mapping::to_fetch(template, record, &self.catalog.time))
            .ok_or_else(|| AdapterError::NotFound("no such record".into()))
    }
}

/// Time kept back from the statements for ranking and sending the hits: a tenth of the budget,
/// between 50 and 250 ms.
fn answer_reserve(budget: Duration) -> Duration {
    (budget / 10).clamp(Duration::from_millis(50), Duration::from_millis(250))
}

/// The local id of the hit whose row started a follow-up reached by `via` (`a > b` → `a:<row>`).
fn parent_hit_id(via: &str, parent_row: &str) -> String {
    let mut chain = via.rsplit(" > ");
    chain.next();
    format!("{}:{parent_row}", chain.next().unwrap_or_default())
}

/// `metadata.follow_ups_timed_out` on each hit whose follow-ups the deadline cut (template names).
fn mark_timed_out(hits: &mut [fedsearch_adapter_kit::SourceHit], timed_out: &[(String, String)]) {
    for hit in hits {
        let mut cut: Vec<&str> =
            timed_out.iter().filter(|(parent, _)| *parent == hit.local_id).map(|(_, t)| t.as_str()).collect();
        if cut.is_empty() {
            continue;
        }
        cut.sort_unstable();
        cut.dedup();
        hit.metadata.insert("follow_ups_timed_out".into(), cut.join(","));
    }
}

impl Adapter for SqlAdapter {
    fn describe(&self) -> DescribeResponse {
        let mut when = self.source.when_to_use.clone();
        if !when.is_empty() {
            when.push('\n');
        }
        when.push_str("Templates (pass `template` + `params`, or let the query text select them):");
        let mut doc_types = Vec::new();
        for t in &self.catalog.templates {
            let params: Vec<String> =
                t.params.iter().map(|(n, p)| format!("{n}{}", if p.spec.required { "" } else { "?" })).collect();
            when.push_str(&format!("\n- {}({}): {}", t.name, params.join(", "), t.when_to_use));
            if !doc_types.contains(&t.hit.doc_type) {
                doc_types.push(t.hit.doc_type.clone());
            }
        }
        let mut source = SourceDescription {
            name: self.source.name.clone(),
            kind: "sql".into(),
            description: self.source.description.clone(),
            when_to_use: when,
            supported_filters: vec!["time_range".into(), "doc_types".into(), "equals".into()],
            doc_types,
            entity_patterns: crate::describe::entity_patterns(&self.catalog),
            ..Default::default()
        };
        self.vocabulary.fill(&mut source);
        DescribeResponse { adapter: ADAPTER_NAME.into(), sources: vec![source] }
    }

    async fn search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        let notes = sink.clone();
        let outcome = self.run_search(query, sink).await?;
        if !outcome.message.is_empty() {
            notes.note(outcome.message);
        }
        Ok(())
    }

    async fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, AdapterError> {
        self.run_fetch(request).await
    }

    async fn diagnose(&self, sources: Vec<String>) -> Option<Vec<fedsearch_adapter_kit::diagnostics::Diagnostic>> {
        if !fedsearch_adapter_kit::diagnostics::wanted(&sources, &self.source.name) {
            return Some(Vec::new());
        }
        Some(self.self_check().await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_follow_up_names_its_parent_hit_and_the_reserve_is_bounded() {
        assert_eq!(parent_hit_id("contact_by_phone > customer_orders", "C1"), "contact_by_phone:C1");
        assert_eq!(parent_hit_id("a > b > c", "O1"), "b:O1");
        let mut hits = vec![
            fedsearch_adapter_kit::SourceHit { local_id: "b:O1".into(), ..Default::default() },
            fedsearch_adapter_kit::SourceHit { local_id: "b:O2".into(), ..Default::default() },
        ];
        mark_timed_out(&mut hits, &[("b:O1".into(), "slow".into()), ("b:O1".into(), "c".into())]);
        assert_eq!(hits[0].metadata["follow_ups_timed_out"], "c,slow");
        assert!(hits[1].metadata.is_empty());
        assert_eq!(answer_reserve(Duration::from_secs(5)), Duration::from_millis(250));
        assert_eq!(answer_reserve(Duration::from_millis(100)), Duration::from_millis(50));
        assert_eq!(answer_reserve(Duration::from_secs(1)), Duration::from_millis(100));
    }
}
