//! One search, start to finish: validate → route → fan out → forward to fusion → answer with
//! hits, one status per selected source, the routing decision and the trace id.

use std::{collections::HashMap, time::Duration};

use fedsearch_core::Identity;
use fedsearch_proto::{
    api::{FusedSnapshot, FusionReport, SearchEvent, SearchRequest, SearchResponse, search_event},
    fusion::{FuseStart, SourceSpec},
    types::{FusionMethod, SourceState, SourceStatus},
};
use tokio::{sync::mpsc, time::Instant};
use tonic::Status;
use tracing::Instrument;

use crate::{
    fanout::{self, Dispatch, SourceEvent},
    fuse::{FusedBy, FusionSession},
    routing::{self, RouteError},
    state::RouterState,
};

/// Checks a request against the limits; the message names the bad field.
pub fn validate(state: &RouterState, req: &SearchRequest) -> Result<(), Status> {
    let limits = &state.config.limits;
    let query = req.query.trim();
    if query.is_empty() {
        return Err(Status::invalid_argument("query must not be empty"));
    }
    let chars = req.query.chars().count();
    if chars > limits.max_query_chars {
        return Err(fedsearch_core::errors::invalid_field(
            fedsearch_core::errors::Reason::QueryTooLong,
            "query",
            format!("query is {chars} characters; the limit is {}", limits.max_query_chars),
        ));
    }
    if let Some(c) = fedsearch_core::text::first_forbidden_char(&req.query) {
        return Err(Status::invalid_argument(format!(
            "query must not contain control characters or noncharacters (found {c})"
        )));
    }
    if req.top_k > limits.max_top_k {
        return Err(Status::invalid_argument(format!(
            "top_k must be within 1..={} (0 means {})",
            limits.max_top_k, limits.default_top_k
        )));
    }
    if let Some(f) = &req.filters {
        if let Some(tr) = &f.time_range {
            for (name, t) in [("from", &tr.from), ("to", &tr.to)] {
                if let Some(t) = t
                    && !(0..1_000_000_000).contains(&t.nanos)
                {
                    return Err(Status::invalid_argument(format!("filters.time_range.{name} has invalid nanos")));
                }
            }
            if let (Some(from), Some(to)) = (&tr.from, &tr.to)
                && (from.seconds, from.nanos) > (to.seconds, to.nanos)
            {
                return Err(Status::invalid_argument("filters.time_range.from is after filters.time_range.to"));
            }
        }
        for (field, values) in [("doc_types", &f.doc_types), ("tags", &f.tags)] {
            if values.len() > 32 || values.iter().any(|v| v.trim().is_empty() || v.len() > 128) {
                return Err(Status::invalid_argument(format!(
                    "filters.{field}: at most 32 non-empty values of at most 128 bytes"
                )));
            }
        }
        if f.equals.len() > 32 || f.equals.iter().any(|(k, v)| k.trim().is_empty() || k.len() > 64 || v.len() > 256) {
            return Err(Status::invalid_argument(
                "filters.equals: at most 32 pairs; keys 1..=64 bytes, values at most 256 bytes",
            ));
        }
    }
    if req.context.as_ref().is_some_and(|c| c.token_budget > 32_000) {
        return Err(Status::invalid_argument("context.token_budget must be at most 32000"));
    }
    if let Some(t) = &req.timeout
        && (t.seconds < 0 || t.nanos < 0 || (t.seconds == 0 && t.nanos == 0))
    {
        return Err(Status::invalid_argument("timeout must be positive"));
    }
    if let Some(opts) = &req.fusion {
        if FusionMethod::try_from(opts.method).is_err() {
            return Err(Status::invalid_argument("fusion.method is not a known method"));
        }
        if opts.rrf_k == Some(0) {
            return Err(Status::invalid_argument("fusion.rrf_k must be at least 1"));
        }
        for (name, w) in &opts.weights {
            if state.registry.get(name).is_none() {
                return Err(Status::invalid_argument(format!("fusion.weights names unknown source `{name}`")));
            }
            if !w.is_finite() || *w < 0.0 {
                return Err(Status::invalid_argument(format!("fusion.weights[{name}] must be a finite number >= 0")));
            }
        }
    }
    Ok(())
}

/// When and where the question is asked: the request's `as_of` (else now) and zone (else the
/// token's `tz` attribute, else `time.default_time_zone`).
pub fn clock(state: &RouterState, user: &Identity, req: &SearchRequest) -> Result<crate::rewrite::Clock, Status> {
    let as_of = match &req.as_of {
        Some(t) => chrono::DateTime::from_timestamp(t.seconds, 0)
            .filter(|_| (0..1_000_000_000).contains(&t.nanos))
            .ok_or_else(|| Status::invalid_argument("as_of is not a valid time"))?,
        None => chrono::Utc::now(),
    };
    let (name, field) = if !req.time_zone.trim().is_empty() {
        (req.time_zone.as_str(), "time_zone")
    } else if let Some(tz) = user.attributes.get("tz").filter(|t| !t.trim().is_empty()) {
        (tz.as_str(), "the token's tz attribute")
    } else {
        (state.config.time.default_time_zone.as_str(), "time.default_time_zone")
    };
    let zone = fedsearch_timeexpr::parse_tz(name).map_err(|e| Status::invalid_argument(format!("{field}: {e}")))?;
    Ok(crate::rewrite::Clock { as_of, zone })
}

/// The second round's questions ([`crate::referenced`]), from the selected sources that
/// answered: the ids the first hits name that a records source (`kind: sql`) recognises by its
/// routing patterns or its Describe patterns, and the ids of the rows among the first hits, to
/// ask the document sources (every other kind) for the documents about them.
fn second_round(
    state: &RouterState,
    routing: &fedsearch_proto::api::RoutingDecision,
    statuses: &HashMap<String, SourceStatus>,
    hits: &[fedsearch_proto::types::Hit],
    asked: &[String],
) -> (Vec<crate::referenced::Reference>, Vec<crate::referenced::Reference>) {
    let answered = |name: &str| statuses.get(name).is_some_and(|s| s.state() == SourceState::Ok);
    let (records, documents): (Vec<&crate::registry::Source>, Vec<&crate::registry::Source>) = routing
        .selected
        .iter()
        .filter_map(|r| state.registry.get(&r.source))
        .filter(|s| answered(s.name()))
        .partition(|s| s.config.kind == "sql");
    let vocabularies: Vec<std::sync::Arc<crate::describe::Vocabulary>> =
        records.iter().map(|s| s.vocabulary_in_use()).collect();
    let patterns: Vec<Vec<regex::Regex>> = records
        .iter()
        .zip(&vocabularies)
        .map(|(s, v)| s.patterns.iter().chain(&v.patterns).cloned().collect())
        .collect();
    let named: Vec<crate::referenced::Records<'_>> = records
        .iter()
        .zip(&patterns)
        .map(|(s, p)| crate::referenced::Records { source: s.name(), patterns: p })
        .collect();
    let document_names: Vec<&str> = documents.iter().map(|s| s.name()).collect();
    (crate::referenced::wanted(hits, &named, asked), crate::referenced::about(hits, &named, &document_names, asked))
}

/// Whether the question asks "which" of something a selected records source holds — its
/// vocabulary (template words, titles, field values) has the word: "哪些除颤仪装的还是 B2606
/// 电池，需要再换？" asks for devices, however its "需要" reads as a rule cue; "哪些情况需要审批"
/// asks for the cases of a rule.
fn asks_which_records(
    registry: &crate::registry::Registry,
    record_sources: &foldhash::HashSet<String>,
    question: &str,
) -> bool {
    let head = crate::intent::which_head(question);
    !head.is_empty()
        && record_sources.iter().filter_map(|name| registry.get(name)).any(|s| {
            let vocabulary = s.vocabulary_in_use();
            head.iter().any(|t| vocabulary.tokens.contains(t))
        })
}

/// How many of the first fused hits a why-question's record is looked for in.
const WHY_SCAN: usize = 3;

/// The state of the record a why-question asks about: the `status` of the first records row
/// among the first [`WHY_SCAN`] hits, in its spellings (`credit_hold`, `credit hold`). The rule
/// that explains the record names that state ("逾期 60 天：客户状态改为 credit_hold"), so it counts
/// as a name the question names. None when the value is a single plain word ("open", "paid"):
/// too common to point at one rule.
fn why_state(hits: &[fedsearch_proto::types::Hit], is_records: impl Fn(&str) -> bool) -> Option<Vec<String>> {
    let row = hits.iter().take(WHY_SCAN).find(|h| is_records(&h.source))?;
    let status = row.metadata.get("status")?.trim().to_lowercase();
    let spaced = status.replace(['_', '-'], " ");
    (spaced != status).then(|| vec![status, spaced])
}

/// The names and ids the question names, each in every spelling known (lowercased): the ids
/// routing found and the two-script names of the sources' vocabularies.
fn named(entities: &[String], two_script: &[(String, String)]) -> Vec<Vec<String>> {
    let ids = entities.iter().map(|e| vec![e.to_lowercase()]);
    ids.chain(two_script.iter().map(|(asked, other)| vec![asked.clone(), other.clone()])).collect()
}

/// A question with a time phrase of at most [`EVENT_WINDOW_DAYS`] asks about events: sources that
/// hold reference material (no `time_phrases`) weigh `selection.undated_weight` of their weight
/// then. A quarter, half year or year (Q2, 2026年) as often names a document ("the Q2 vendor
/// scorecard", "2026 holidays") as a period of events, so it leaves the weights alone.
fn undated_factor(selection: &crate::config::SelectionSection, dated_question: bool, dated_source: bool) -> f64 {
    if dated_question && !dated_source { selection.undated_weight } else { 1.0 }
}

/// The longest time window that makes a question one about events (see [`undated_factor`]): two
/// months ("last month", "June and July", "the past 60 days"), not a quarter.
const EVENT_WINDOW_DAYS: i64 = 62;

/// Settles whether the window read from the question ranks at `source` rather than filters, and
/// returns it (seconds, both ends included) when re-scoring should weigh its hits by it.
/// - Where every document of the window is one of the items asked for (`one_set`: "which
///   notices did we publish last month"), the window is the set: it filters.
/// - A SQL template filters on a column of its own choosing, not necessarily the hit's date, so
///   its hits are not weighed by the window.
fn question_window(
    source: &crate::registry::Source,
    rewritten: &mut crate::rewrite::Rewritten,
    one_set: bool,
) -> Option<(i64, i64)> {
    rewritten.time_range_from_question &= !one_set;
    if !rewritten.time_range_from_question || source.config.kind == "sql" {
        return None;
    }
    let range = rewritten.filters.as_ref()?.time_range.as_ref()?;
    let span = (range.from.as_ref()?.seconds, range.to.as_ref()?.seconds);
    if source.config.kind == "search" {
        rewritten.how.push_str(", ranked first (what shows the words may follow)");
    }
    Some(span)
}

/// A window of at most [`EVENT_WINDOW_DAYS`], or an open-ended past ("more than a week ago",
/// which `fedsearch_timeexpr` starts in 1970): what went wrong back then. A period that goes on
/// after today counts whole (Q3 asked in July is a quarter, though its window stops at today).
fn is_event_window(window: &fedsearch_timeexpr::Window) -> bool {
    use chrono::Datelike;
    let to = window.period_to.unwrap_or(window.to);
    to - window.from <= chrono::TimeDelta::days(EVENT_WINDOW_DAYS) || window.from.year() <= 1970
}

/// How a source's relevance to the question scales its fusion weight (explicit sources keep
/// their weight).
fn relevance_factor(boost: f64, strategy: &str, relevance: f64) -> f64 {
    if strategy == "explicit" { 1.0 } else { 1.0 - boost / 2.0 + boost * relevance.clamp(0.0, 1.0) }
}

/// One search's time, all from the same budget: min(request timeout, gRPC deadline,
/// configured maximum), measured from when the router took the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// When the answer must be sent: the whole budget, less a little for the answer to travel
    /// back (a twentieth, 2–50 ms) when the caller set a time — a gRPC deadline or the
    /// request's `timeout` field alike, so both arrive within the time asked for.
    pub answer: Duration,
    /// When sources stop being waited for: the answer time less the reserve for fusing and
    /// packing (a tenth, 20–250 ms), so a busy machine still answers in time.
    pub sources: Duration,
}

pub fn budget(limits: &crate::config::Limits, req: &SearchRequest, grpc_timeout: Option<Duration>) -> Budget {
    let asked = req.timeout.as_ref().and_then(|t| Duration::try_from(*t).ok());
    let total = match (asked, grpc_timeout) {
        (Some(a), Some(g)) => a.min(g),
        (Some(a), None) => a,
        (None, Some(g)) => g,
        (None, None) => limits.default_timeout,
    }
    .min(limits.max_timeout);
    let travel = |t: Duration| (t / 20).clamp(Duration::from_millis(2), Duration::from_millis(50));
    let answer = if asked.is_some() || grpc_timeout.is_some() { total.saturating_sub(travel(total)) } else { total };
    let reserve = (answer / 10).clamp(Duration::from_millis(20), Duration::from_millis(250));
    Budget { answer, sources: answer.saturating_sub(reserve).max(Duration::from_millis(1)) }
}

/// Runs one search. `events` receives routing, per-source statuses and snapshots as they
/// happen (SearchStream); the final response is returned.
pub async fn run(
    state: &RouterState,
    user: &Identity,
    req: SearchRequest,
    grpc_timeout: Option<Duration>,
    events: Option<mpsc::Sender<SearchEvent>>,
) -> Result<SearchResponse, Status> {
    validate(state, &req)?;
    let taken = Instant::now();
    let budget = budget(&state.config.limits, &req, grpc_timeout);
    let deadline = taken + budget.sources;
    let answer_by = taken + budget.answer;
    let top_k = if req.top_k == 0 { state.config.limits.default_top_k } else { req.top_k };

    // The glossary expansion and the question's tokens, once: selection, the adapters' terms
    // and result merging all use them.
    let mut expansions = state.registry.glossary().expand(&req.query);
    let vocabularies: Vec<_> = state.registry.permitted(user).map(|s| s.vocabulary_in_use()).collect();
    let two_script = crate::aliases::two_script_names(&req.query, vocabularies.iter().map(|v| v.as_ref()));
    for (_, other) in &two_script {
        if !expansions.contains(other) {
            expansions.push(other.clone());
        }
    }
    let question = crate::analysis::question_tokens(&req.query, &expansions);
    let routing = {
        let _route = tracing::info_span!("router.route").entered();
        routing::route(
            &state.registry,
            user,
            &req.query,
            &question,
            req.filters.as_ref(),
            &req.sources,
            &state.config.selection,
        )
        .map_err(|e| match e {
            RouteError::UnknownSource(_) => fedsearch_core::errors::invalid_field(
                fedsearch_core::errors::Reason::UnknownSource,
                "sources",
                e.to_string(),
            ),
            RouteError::NoSources => Status::permission_denied(e.to_string()),
        })?
    };
    let mut options = req.fusion.clone().unwrap_or_default();
    if options.method == FusionMethod::Unspecified as i32 {
        options.method = match state.config.fusion.method {
            crate::config::DefaultFusion::WeightedScore => FusionMethod::WeightedScore,
            crate::config::DefaultFusion::Rrf => FusionMethod::Rrf,
        } as i32;
    }
    let clock = clock(state, user, &req)?;
    let terms = crate::rewrite::extract(&state.registry, &req.query, clock, expansions);
    let dated_question = terms.window.as_ref().is_some_and(is_event_window);
    let list_question = crate::analysis::asks_for_list(&req.query);
    // Only a list question asks which kinds it names (`rewrite::one_set`).
    let asked_tokens =
        if list_question { crate::rerank::naming_tokens(&question, &terms.expansions) } else { Default::default() };
    // Reference material a list question names takes its window when it asks what changed.
    let change_asked = crate::intent::asks_what_changed(&req.query);
    let window_named = |s: &crate::registry::Source| change_asked && crate::rewrite::names_source(s, &asked_tokens);
    let start = FuseStart {
        options: Some(options.clone()),
        top_k: top_k.max(state.config.rerank.candidates).min(50),
        sources: routing
            .selected
            .iter()
            .map(|r| {
                let source = state.registry.get(&r.source);
                SourceSpec {
                    source: r.source.clone(),
                    weight: source.map_or(1.0, |s| {
                        let dated = crate::rewrite::takes_window(s, window_named(s));
                        s.config.weight * undated_factor(&state.config.selection, dated_question, dated)
                    }) * relevance_factor(state.config.selection.weight_boost, &routing.strategy, r.relevance),
                    one_set: list_question
                        && source.is_some_and(|s| crate::rewrite::one_set(s, &terms, &asked_tokens, change_asked)),
                }
            })
            .collect(),
        snapshots: events.is_some(),
    };
    fedsearch_fusion::Fuser::new(&start).map_err(|e| Status::invalid_argument(e.to_string()))?;

    let per_source_limit = (top_k * 2).clamp(10, 100);
    let as_of = Some(prost_types::Timestamp { seconds: clock.as_of.timestamp(), nanos: 0 });
    let mut routing = routing;
    let mut dispatches: Vec<Dispatch> = Vec::with_capacity(routing.selected.len());
    let mut windows = foldhash::HashMap::default();
    for r in routing.selected.iter_mut() {
        let Some(source) = state.registry.get(&r.source) else { continue };
        let mut rewritten =
            crate::rewrite::for_source(source, &req.query, req.filters.as_ref(), &terms, window_named(source));
        let one_set = start.sources.iter().any(|s| s.source == r.source && s.one_set);
        if let Some(span) = question_window(source, &mut rewritten, one_set) {
            windows.insert(r.source.clone(), span);
        }
        r.query = rewritten.text.clone();
        r.rewrite = rewritten.how;
        let explicit = req.source_params.get(&r.source);
        dispatches.push(Dispatch {
            source: r.source.clone(),
            text: rewritten.text,
            filters: rewritten.filters,
            time_range_from_question: rewritten.time_range_from_question,
            limit: per_source_limit,
            template: explicit.map(|p| p.template.clone()).unwrap_or_default(),
            params: explicit.map(|p| p.params.clone()).unwrap_or_default(),
            credential: req.source_credentials.get(&r.source).cloned(),
            original_text: req.query.clone(),
            terms: terms.for_adapter(source.config.split_words()),
            entities: terms.entities.clone(),
            as_of,
            explicit_as_of: req.as_of.is_some(),
            time_zone: clock.zone.name().to_string(),
        });
    }
    emit(&events, search_event::Event::Routing(routing.clone()), deadline).await;

    let (tx, mut rx) = mpsc::channel::<SourceEvent>(256);
    let expected = dispatches.len();
    // Sub-queries go out first; the fusion stream opens while they run (their events wait in
    // the channel), so fusion adds no round trip before the sources.
    // Owned here: if the caller goes away, this future is dropped and so are the sub-queries.
    let mut tasks = fanout::start(&state.registry, user, dispatches, deadline, tx);
    let fuse_span = tracing::info_span!("router.fuse");
    let fusion_timeout = state.config.fusion.timeout;
    let mut session =
        FusionSession::open(state.fusion.as_ref(), start, fusion_timeout, deadline).instrument(fuse_span.clone()).await;
    let mut statuses: HashMap<String, SourceStatus> = HashMap::new();
    // One timer for the whole wait, not one per event.
    let sources_deadline = tokio::time::sleep_until(deadline);
    tokio::pin!(sources_deadline);
    while statuses.len() < expected {
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(SourceEvent::Batch { source, hits }) => session.add_batch(&source, hits).instrument(fuse_span.clone()).await,
                Some(SourceEvent::Done(status)) => {
                    let st = status.state();
                    session.end_source(&status.source, st).instrument(fuse_span.clone()).await;
                    emit(&events, search_event::Event::SourceStatus(status.clone()), deadline).await;
                    statuses.insert(status.source.clone(), status);
                    if events.is_some() {
                        let snap = session.try_snapshot().or_else(|| session.local_snapshot());
                        if let Some(s) = snap {
                            let mut hits = s.hits;
                            hits.truncate(top_k as usize);
                            let snapshot = FusedSnapshot { hits, sources_done: s.sources_done };
                            emit(&events, search_event::Event::Snapshot(snapshot), deadline).await;
                        }
                    }
                }
                None => break,
            },
            _ = &mut sources_deadline => break,
        }
    }
    tasks.abort_all();
    for r in &routing.selected {
        if !statuses.contains_key(&r.source) {
            let status = SourceStatus {
                source: r.source.clone(),
                state: SourceState::Timeout as i32,
                hit_count: 0,
                latency_ms: budget.sources.as_millis() as u64,
                message: "no answer before the search deadline".into(),
                code: "DEADLINE_EXCEEDED".into(),
            };
            session.end_source(&r.source, SourceState::Timeout).await;
            emit(&events, search_event::Event::SourceStatus(status.clone()), answer_by).await;
            statuses.insert(r.source.clone(), status);
        }
    }

    // The fusion service may use half of what is left of the reserve; the other half is for
    // fusing in-process should it not answer, re-ranking and packing.
    let fusion_by = deadline.max(Instant::now()) + answer_by.saturating_duration_since(deadline) / 2;
    let (mut fused, by) = session.finish(fusion_by.min(answer_by)).instrument(fuse_span).await;
    // The selected sources of one kind: reference material (no `time_phrases`), records (`sql`).
    let selected_where = |keep: &dyn Fn(&crate::registry::Source) -> bool| {
        routing
            .selected
            .iter()
            .filter(|r| state.registry.get(&r.source).is_some_and(keep))
            .map(|r| r.source.clone())
            .collect()
    };
    let record_sources: foldhash::HashSet<String> = selected_where(&|s| s.config.kind == "sql");
    let mut names = named(&terms.entities, &two_script);
    let asks_why = crate::intent::asks_why(&req.query);
    if asks_why {
        names.extend(why_state(&fused.hits, |s| record_sources.contains(s)));
    }
    let mut asked = crate::rerank::Asked::new(&req.query, &question, &names);
    // Read only by a rule question (it asks for records instead) and a list (its rows go first).
    let rule_cued = crate::intent::asks_for_rule(&req.query);
    asked.which_records =
        (rule_cued || list_question) && asks_which_records(&state.registry, &record_sources, &req.query);
    asked.asks_for_rule = rule_cued && !asked.which_records;
    asked.state = crate::intent::asks_for_state(&req.query);
    asked.state_values = &state.config.rerank.state_values;
    asked.list = list_question;
    asked.why = asks_why;
    asked.definition = crate::intent::asks_for_definition(&req.query);
    asked.ids = &terms.entities;
    asked.expansions = &terms.expansions;
    asked.concepts = &terms.concepts;
    asked.windows = windows;
    asked.named_days = crate::rerank::NamedDays::of(&req.query, terms.window.as_ref(), clock.zone);
    // Reference material: no `time_phrases`, unless the list question names it in a window.
    asked.reference_sources = selected_where(&|s| !crate::rewrite::takes_window(s, window_named(s)));
    asked.record_sources = record_sources;
    let weights = state.config.rerank.weights();
    crate::rerank::rerank(&mut fused.hits, &asked, &weights);
    let round = crate::referenced::Round {
        filters: req.filters.clone(),
        credentials: &req.source_credentials,
        as_of,
        explicit_as_of: req.as_of.is_some(),
        time_zone: clock.zone.name().to_string(),
    };
    let (wanted, about) = if state.config.rerank.follow_references {
        second_round(state, &routing, &statuses, &fused.hits, &terms.entities)
    } else {
        (Vec::new(), Vec::new())
    };
    let (rows, docs) = tokio::join!(
        crate::referenced::ask(&state.registry, user, &wanted, &round, answer_by),
        crate::referenced::ask(&state.registry, user, &about, &round, answer_by),
    );
    let mut rows = crate::referenced::found(&fused.hits, &wanted, rows);
    let (docs, about_ids) = crate::referenced::found_about(&mut fused.hits, &about, docs);
    asked.about_records = about_ids.into_iter().collect();
    asked.about_records.extend(crate::referenced::cited(&mut fused.hits, asks_why));
    rows.extend(docs);
    if !rows.is_empty() || !asked.about_records.is_empty() {
        fused.hits.extend(rows);
        crate::rerank::rerank(&mut fused.hits, &asked, &weights);
    }
    fused.hits.truncate(top_k as usize);
    crate::current::complete(state, user, &req.source_credentials, &mut fused.hits, top_k as usize, answer_by).await;

    let method = match FusionMethod::try_from(options.method).unwrap_or_default() {
        FusionMethod::WeightedScore => "weighted_score",
        _ => "rrf",
    };
    let fusion = FusionReport {
        method: method.into(),
        rrf_k: options.rrf_k.unwrap_or(60),
        in_process_fallback: matches!(by, FusedBy::InProcess(_)) && state.fusion.is_some(),
        duplicates_merged: fused.duplicates_merged,
        message: match &by {
            FusedBy::Service => "fused by the fusion service".into(),
            FusedBy::InProcess(reason) => format!("fused in-process: {reason}"),
        },
    };
    let sources = routing.selected.iter().filter_map(|r| statuses.remove(&r.source)).collect();
    let context = match req.context.as_ref().map(|c| c.token_budget).filter(|b| *b > 0) {
        Some(budget) => {
            let _span = tracing::info_span!("router.pack_context", budget).entered();
            Some(crate::context::pack(&fused.hits, budget))
        }
        None => None,
    };
    Ok(SearchResponse {
        hits: fused.hits,
        sources,
        routing: Some(routing),
        trace_id: fedsearch_core::propagation::current_trace_id(),
        fusion: Some(fusion),
        context,
    })
}

/// Runs one search and tells admission whether its answer was on time.
pub async fn run_admitted(
    state: &RouterState,
    user: &Identity,
    ticket: crate::admission::Ticket,
    req: SearchRequest,
    timeout: Option<Duration>,
    events: Option<mpsc::Sender<SearchEvent>>,
) -> Result<SearchResponse, Status> {
    let started = std::time::Instant::now();
    let budget = budget(&state.config.limits, &req, timeout);
    let result = run(state, user, req, timeout, events).await;
    ticket.finish(started.elapsed() > budget.answer);
    result
}

/// Sends a SearchStream event, waiting for a slow reader at most until `until`: a caller that
/// does not read never holds the search past its deadline.
async fn emit(events: &Option<mpsc::Sender<SearchEvent>>, event: search_event::Event, until: Instant) {
    if let Some(tx) = events {
        let _ = tokio::time::timeout_at(until, tx.send(SearchEvent { event: Some(event) })).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_which_question_asks_for_records_when_a_records_source_holds_its_word() {
        let configs: Vec<crate::config::SourceConfig> = figment::Figment::new()
            .merge(<figment::providers::Yaml as figment::providers::Format>::string(
                "sources:\n  - {name: records, adapter: 'http://127.0.0.1:1', kind: sql, description: devices}\n",
            ))
            .extract_inner("sources")
            .unwrap();
        let registry =
            crate::registry::Registry::new(&configs, &Default::default(), crate::analysis::Glossary::new(false, &[]))
                .unwrap();
        let term = |text: &str| fedsearch_proto::adapter::VocabularyTerm {
            text: text.into(),
            kind: fedsearch_proto::adapter::VocabularyKind::Term as i32,
            ..Default::default()
        };
        let description = fedsearch_proto::adapter::SourceDescription {
            name: "records".into(),
            vocabulary_state: fedsearch_proto::adapter::VocabularyState::Ready as i32,
            vocabulary: vec![term("除颤仪"), term("installed devices")],
            ..Default::default()
        };
        let vocabulary = crate::describe::Vocabulary::from_description(&description).unwrap();
        registry.get("records").unwrap().vocabulary.set(vocabulary);
        let records: foldhash::HashSet<String> = ["records".to_string()].into_iter().collect();
        assert!(asks_which_records(&registry, &records, "哪些除颤仪装的还是 B2606 电池，需要再换？"));
        assert!(asks_which_records(&registry, &records, "Which devices need the upgrade?"));
        assert!(!asks_which_records(&registry, &records, "哪些情况需要审批？"), "the records hold no 情况");
        assert!(!asks_which_records(&registry, &records, "除颤仪需要多久换一次电池？"), "no which");
        assert!(
            !asks_which_records(&registry, &Default::default(), "哪些除颤仪需要再换？"),
            "no records source selected"
        );
    }

    #[test]
    fn a_why_question_names_the_state_of_the_first_record_among_the_first_hits() {
        let hit = |id: &str, status: &str| fedsearch_proto::types::Hit {
            id: id.into(),
            source: id.split(':').next().unwrap().into(),
            metadata: [("status".to_string(), status.to_string())].into_iter().collect(),
            ..Default::default()
        };
        let records = |s: &str| s == "shipments";
        let hits =
            [hit("wiki:a", "current"), hit("shipments:CU-1012", "credit_hold"), hit("shipments:CU-1", "on_hold")];
        assert_eq!(why_state(&hits, records), Some(vec!["credit_hold".to_string(), "credit hold".to_string()]));
        assert_eq!(why_state(&[hit("shipments:FI-1", "paid")], records), None, "one plain word points at no rule");
        let late = [hit("wiki:a", ""), hit("wiki:b", ""), hit("wiki:c", ""), hit("shipments:CU-1012", "credit_hold")];
        assert_eq!(why_state(&late, records), None, "only the first hits");
    }

    #[test]
    fn fusing_and_answering_come_out_of_the_callers_budget() {
        let limits = crate::config::Limits::default();
        let ms = Duration::from_millis;
        for grpc in [ms(50), ms(400), ms(2_000), ms(60_000)] {
            let b = budget(&limits, &SearchRequest::default(), Some(grpc));
            assert!(b.answer < grpc, "{grpc:?}: the answer leaves before the caller gives up");
            assert!(b.sources < b.answer, "{grpc:?}: fusing has its own share");
            assert!(b.answer <= limits.max_timeout);
        }
        let b = budget(&limits, &SearchRequest::default(), Some(ms(400)));
        assert_eq!((b.answer, b.sources), (ms(380), ms(342)));
        let asked =
            SearchRequest { timeout: Some(prost_types::Duration { seconds: 1, nanos: 0 }), ..Default::default() };
        let b = budget(&limits, &asked, None);
        assert_eq!(
            (b.answer, b.sources),
            (ms(950), ms(855)),
            "a request timeout keeps the same travel reserve as a gRPC deadline"
        );
        let by_deadline = budget(&limits, &SearchRequest::default(), Some(ms(1_000)));
        assert_eq!(b, by_deadline, "the request field and the gRPC deadline give one budget");
        let both = budget(&limits, &asked, Some(ms(400)));
        assert_eq!(both, budget(&limits, &SearchRequest::default(), Some(ms(400))), "the shorter of the two counts");
        assert_eq!(
            budget(&limits, &SearchRequest::default(), None).answer,
            limits.default_timeout.min(limits.max_timeout)
        );
        let tiny =
            SearchRequest { timeout: Some(prost_types::Duration { seconds: 0, nanos: 1 }), ..Default::default() };
        assert_eq!(budget(&limits, &tiny, None).sources, ms(1));
    }

    #[test]
    fn reference_sources_weigh_less_only_when_the_question_has_a_time_phrase() {
        let selection = crate::config::SelectionSection { undated_weight: 0.5, ..Default::default() };
        assert_eq!(undated_factor(&selection, true, false), 0.5, "昨天的工单: the wiki weighs half");
        assert_eq!(undated_factor(&selection, true, true), 1.0, "the tickets keep their weight");
        assert_eq!(undated_factor(&selection, false, false), 1.0, "no time phrase: nothing changes");
        let tz = fedsearch_timeexpr::parse_tz("Asia/Shanghai").unwrap();
        let as_of = chrono::DateTime::parse_from_rfc3339("2026-07-20T10:00:00+08:00").unwrap().to_utc();
        let window = |q: &str| fedsearch_timeexpr::resolve(q, as_of, tz).unwrap();
        assert!(is_event_window(&window("上个月的工单")) && is_event_window(&window("tickets in June and July")));
        assert!(!is_event_window(&window("the Q2 vendor scorecard")), "a quarter often names a document");
        assert!(!is_event_window(&window("Q3 contract rates")), "also the quarter that holds today");
        assert!(!is_event_window(&window("2025年的假期")));
        assert!(is_event_window(&window("what failed more than a week ago")), "an open-ended past");
    }
}
