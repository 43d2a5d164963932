//! [`Fuser`]: the incremental fusion of one search, used by the gRPC service and in-process by
//! the router (its fallback when the fusion service is unreachable).
//!
//! Feed it the [`FuseStart`], then each source's batches and ends in any interleaving; ask for a
//! [`Fuser::snapshot`] at any time and for the final list with [`Fuser::finish`]. The ranking
//! itself is documented in [`crate::rank`].

use std::collections::HashMap;

use fedsearch_proto::{
    fusion::{FuseStart, FusedList},
    types::{DuplicateRef, Explanation, FusionMethod, Hit, ScoreContribution, SourceHit},
};

use crate::{
    FusionError,
    rank::{self, DEFAULT_RRF_K, Method, Plan, Prefixes, Scored, SourceList},
};

/// `top_k` used when `FuseStart.top_k` is 0.
pub const DEFAULT_TOP_K: u32 = 10;
/// The largest `top_k` accepted.
pub const MAX_TOP_K: u32 = 50;
/// Snippets are cut to this many chars (at a char boundary) should a source send longer ones.
pub const MAX_SNIPPET_CHARS: usize = 300;

/// The fusion state of one search.
#[derive(Debug)]
pub struct Fuser {
    method: Method,
    top_k: usize,
    sources: Vec<SourceList>,
    index: HashMap<String, usize>,
    /// The title and snippet prefix keys taken so far (see [`rank::Prefixes`]).
    prefixes: Prefixes,
    hits_in: usize,
}

impl Fuser {
    /// Validates `start`: `top_k` in 1..=50 (0 means 10), `rrf_k >= 1`, every weight finite and
    /// `>= 0`, source names non-empty and unique. See [`crate::rank`] for how weights resolve;
    /// `options.weights` entries for sources not in `start.sources` are checked, then unused.
    pub fn new(start: &FuseStart) -> Result<Self, FusionError> {
        let top_k = match start.top_k {
            0 => DEFAULT_TOP_K,
            k if k > MAX_TOP_K => return Err(FusionError::TopK(k)),
            k => k,
        };
        let options = start.options.clone().unwrap_or_default();
        let method = match options.method() {
            FusionMethod::Unspecified | FusionMethod::Rrf => match options.rrf_k {
                None => Method::Rrf { k: DEFAULT_RRF_K },
                Some(0) => return Err(FusionError::RrfK),
                Some(k) => Method::Rrf { k },
            },
            FusionMethod::WeightedScore => Method::WeightedScore,
        };
        for (source, &weight) in &options.weights {
            check_weight(source, weight)?;
        }
        let mut sources = Vec::with_capacity(start.sources.len());
        let mut index = HashMap::with_capacity(start.sources.len());
        for spec in &start.sources {
            if spec.source.is_empty() {
                return Err(FusionError::EmptySourceName);
            }
            check_weight(&spec.source, spec.weight)?;
            let weight = match options.weights.get(&spec.source) {
                Some(&w) => w,
                None if spec.weight != 0.0 => spec.weight,
                None => 1.0,
            };
            if index.insert(spec.source.clone(), sources.len()).is_some() {
                return Err(FusionError::DuplicateSource(spec.source.clone()));
            }
            sources.push(SourceList::new(spec.source.clone(), weight, spec.one_set));
        }
        Ok(Self { method, top_k: top_k as usize, sources, index, prefixes: Prefixes::default(), hits_in: 0 })
    }

    /// Adds a batch of `source`'s hits. Hits of an undeclared source and hits without a
    /// `local_id` are ignored (the gRPC service rejects both before calling this).
    pub fn add_batch(&mut self, source: &str, hits: Vec<SourceHit>) {
        let Some(&i) = self.index.get(source) else {
            tracing::debug!(source, "ignoring a batch of an undeclared source");
            return;
        };
        for at in self.sources[i].append(hits) {
            if self.sources[i].hits_at(at).local_id.is_empty() {
                continue;
            }
            self.hits_in += 1;
            rank::add_hit(&mut self.sources, &mut self.prefixes, i, at as u32);
        }
    }

    /// Marks `source`'s list as complete (idempotent; unknown sources are ignored).
    pub fn end_source(&mut self, source: &str) {
        if let Some(&i) = self.index.get(source) {
            self.sources[i].ended = true;
        }
    }

    /// The fused list over everything that arrived so far.
    pub fn snapshot(&self) -> FusedList {
        let plan = rank::plan(self.method, &self.sources, self.top_k);
        let mut list = skeleton(self.method, &self.sources, &plan);
        for (hit, planned) in list.hits.iter_mut().zip(&plan.hits) {
            let (rep, source) = (planned.rep, &self.sources[planned.rep.src as usize]);
            fill(hit, &source.name, rep.pos, source.hit(rep.ent).clone());
        }
        list
    }

    /// The final fused list (moves the representatives' fields instead of cloning them).
    pub fn finish(mut self) -> FusedList {
        let plan = rank::plan(self.method, &self.sources, self.top_k);
        let mut list = skeleton(self.method, &self.sources, &plan);
        for (hit, planned) in list.hits.iter_mut().zip(&plan.hits) {
            let (rep, source) = (planned.rep, &mut self.sources[planned.rep.src as usize]);
            let taken = std::mem::take(source.hit_mut(rep.ent));
            fill(hit, &source.name, rep.pos, taken);
        }
        list
    }

    /// Whether `source` was declared in the `FuseStart`.
    pub fn is_declared(&self, source: &str) -> bool {
        self.index.contains_key(source)
    }

    /// Whether `source` has ended.
    pub fn is_ended(&self, source: &str) -> bool {
        self.index.get(source).is_some_and(|&i| self.sources[i].ended)
    }

    pub fn method(&self) -> Method {
        self.method
    }

    /// Hits received so far (repeats included).
    pub fn hits_in(&self) -> usize {
        self.hits_in
    }
}

/// Everything but the representative's own fields: score, explanation, duplicates.
fn skeleton(method: Method, sources: &[SourceList], plan: &Plan) -> FusedList {
    let hit_of = |s: &Scored| sources[s.src as usize].hit(s.ent);
    let name_of = |s: &Scored| sources[s.src as usize].name.as_str();
    let hits = plan
        .hits
        .iter()
        .map(|p| {
            let contributions: Vec<ScoreContribution> = p
                .contributions
                .iter()
                .map(|c| ScoreContribution {
                    source: name_of(c).to_string(),
                    rank_in_source: c.pos,
                    weight: sources[c.src as usize].weight,
                    value: c.value,
                    raw_score: hit_of(c).score,
                    normalised_score: c.norm,
                })
                .collect();
            let duplicates = p
                .duplicates
                .iter()
                .map(|(d, kind)| DuplicateRef {
                    source: name_of(d).to_string(),
                    id: format!("{}:{}", name_of(d), hit_of(d).local_id),
                    url: hit_of(d).url.clone(),
                    rank_in_source: d.pos,
                    matched_on: kind.label().to_string(),
                })
                .collect();
            Hit {
                fused_score: p.score,
                explanation: Some(Explanation {
                    method: method.label().to_string(),
                    summary: summary(method, &contributions, p.score),
                    contributions,
                    rerank: None,
                }),
                duplicates,
                version: p.version.clone(),
                ..Default::default()
            }
        })
        .collect();
    let mut sources_done: Vec<String> = sources.iter().filter(|s| s.ended).map(|s| s.name.clone()).collect();
    sources_done.sort();
    FusedList { hits, sources_done, duplicates_merged: plan.duplicates_merged }
}

fn check_weight(source: &str, weight: f64) -> Result<(), FusionError> {
    if weight.is_finite() && weight >= 0.0 {
        Ok(())
    } else {
        Err(FusionError::Weight { name: source.to_string(), weight })
    }
}

/// Copies the representative's own fields into `hit`.
fn fill(hit: &mut Hit, source: &str, pos: u32, rep: SourceHit) {
    hit.id = format!("{source}:{}", rep.local_id);
    hit.source = source.to_string();
    hit.title = rep.title;
    hit.snippet = rep.snippet;
    if let Some((cut, _)) = hit.snippet.char_indices().nth(MAX_SNIPPET_CHARS) {
        hit.snippet.truncate(cut);
    }
    hit.url = rep.url;
    hit.updated_at = rep.updated_at;
    hit.rank_in_source = pos;
    hit.source_score = rep.score;
    hit.metadata = rep.metadata;
    hit.full_text_ref =
        if rep.full_text_ref.is_empty() { String::new() } else { format!("{source}:{}", rep.full_text_ref) };
    hit.doc_type = rep.doc_type;
}

/// `rrf k=60: tickets#1 w1.0 → 0.01639 + kb#3 w0.5 → 0.00794 = 0.02433`
fn summary(method: Method, contributions: &[ScoreContribution], total: f64) -> String {
    use std::fmt::Write;
    let mut s = match method {
        Method::Rrf { k } => format!("rrf k={k}:"),
        Method::WeightedScore => "weighted_score:".to_string(),
    };
    for (i, c) in contributions.iter().enumerate() {
        let sep = if i == 0 { " " } else { " + " };
        let _ = write!(s, "{sep}{}#{} w{}", c.source, c.rank_in_source, weight_label(c.weight));
        if let Some(n) = c.normalised_score {
            let _ = write!(s, " × {n:.3}");
        }
        let _ = write!(s, " → {:.5}", c.value);
    }
    if contributions.len() > 1 {
        let _ = write!(s, " = {total:.5}");
    }
    s
}

/// `1.0`, `0.5`, `0.25`: at least one decimal, no float noise.
fn weight_label(w: f64) -> String {
    if w.fract() == 0.0 { format!("{w:.1}") } else { format!("{w}") }
}
