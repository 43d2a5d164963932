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
    rank::{self, DEFAULT_RRF_K, KeyTable, Method, Plan, Scored, SourceList},
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
    /// Each source's weight as explanations write it ([`weight_label`]).
    weight_labels: Vec<String>,
    index: HashMap<String, usize>,
    /// The keys taken so far (see [`rank::KeyTable`]).
    keys: KeyTable,
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
        let weight_labels = sources.iter().map(|s| weight_label(s.weight)).collect();
        Ok(Self {
            method,
            top_k: top_k as usize,
            sources,
            weight_labels,
            index,
            keys: KeyTable::for_sources(start.sources.len()),
            hits_in: 0,
        })
    }

    /// Adds a batch of `source`'s hits. Hits of an undeclared source and hits without a
    /// `local_id` are ignored (the gRPC service rejects both before calling this).
    pub fn add_batch(&mut self, source: &str, hits: Vec<SourceHit>) {
        let Some(&i) = self.index.get(source) else {
            tracing::debug!(source, "ignoring a batch of an undeclared source");
            return;
        };
        let added = self.sources[i].append(hits);
        // A url, a title and a content key each at most.
        self.keys.reserve(3 * added.len());
        for at in added {
            if self.sources[i].hits_at(at).local_id.is_empty() {
                continue;
            }
            self.hits_in += 1;
            rank::add_hit(&mut self.sources, &mut self.keys, i, at as u32);
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
        let mut list = skeleton(self.method, &self.sources, &self.weight_labels, &plan);
        for (hit, planned) in list.hits.iter_mut().zip(&plan.hits) {
            let (rep, source) = (planned.rep, &self.sources[planned.rep.src as usize]);
            fill(hit, &source.name, rep.pos, source.hit(rep.ent).clone());
        }
        list
    }

    /// The final fused list (moves the representatives' fields instead of cloning them).
    pub fn finish(mut self) -> FusedList {
        let plan = rank::plan(self.method, &self.sources, self.top_k);
        let mut list = skeleton(self.method, &self.sources, &self.weight_labels, &plan);
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
fn skeleton(method: Method, sources: &[SourceList], weight_labels: &[String], plan: &Plan) -> FusedList {
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
                    id: prefixed(name_of(d), &hit_of(d).local_id),
                    url: hit_of(d).url.clone(),
                    rank_in_source: d.pos,
                    matched_on: kind.label().to_string(),
                })
                .collect();
            Hit {
                fused_score: p.score,
                explanation: Some(Explanation {
                    method: method.label().to_string(),
                    summary: summary(method, &p.contributions, sources, weight_labels, p.score),
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
    hit.id = prefixed(source, &rep.local_id);
    hit.source = source.to_string();
    hit.title = rep.title;
    hit.snippet = rep.snippet;
    // A snippet of at most MAX_SNIPPET_CHARS bytes has no more chars than that.
    if hit.snippet.len() > MAX_SNIPPET_CHARS
        && let Some((cut, _)) = hit.snippet.char_indices().nth(MAX_SNIPPET_CHARS)
    {
        hit.snippet.truncate(cut);
    }
    hit.url = rep.url;
    hit.updated_at = rep.updated_at;
    hit.rank_in_source = pos;
    hit.source_score = rep.score;
    hit.metadata = rep.metadata;
    hit.full_text_ref = if rep.full_text_ref.is_empty() { String::new() } else { prefixed(source, &rep.full_text_ref) };
    hit.doc_type = rep.doc_type;
}

/// `source:id`.
fn prefixed(source: &str, id: &str) -> String {
    let mut s = String::with_capacity(source.len() + 1 + id.len());
    s.push_str(source);
    s.push(':');
    s.push_str(id);
    s
}

/// `rrf k=60: tickets#1 w1.0 → 0.01639 + kb#3 w0.5 → 0.00794 = 0.02433`: each contribution in
/// summing order, with its source's weight label.
fn summary(method: Method, contributions: &[Scored], sources: &[SourceList], labels: &[String], total: f64) -> String {
    let mut s = String::with_capacity(32 + 48 * contributions.len());
    match method {
        Method::Rrf { k } => {
            s.push_str("rrf k=");
            push_int(&mut s, u64::from(k));
            s.push(':');
        }
        Method::WeightedScore => s.push_str("weighted_score:"),
    }
    for (i, c) in contributions.iter().enumerate() {
        s.push_str(if i == 0 { " " } else { " + " });
        s.push_str(&sources[c.src as usize].name);
        s.push('#');
        push_int(&mut s, u64::from(c.pos));
        s.push_str(" w");
        s.push_str(&labels[c.src as usize]);
        if let Some(n) = c.norm {
            s.push_str(" × ");
            push_fixed(&mut s, n, 3);
        }
        s.push_str(" → ");
        push_fixed(&mut s, c.value, 5);
    }
    if contributions.len() > 1 {
        s.push_str(" = ");
        push_fixed(&mut s, total, 5);
    }
    s
}

/// Appends `n` in decimal.
fn push_int(s: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    s.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// Appends `v` with `decimals` (at most 5) decimals, exactly as `format!("{v:.decimals$}")`
/// writes it: the exact value of `v` rounded half to even. Without the formatting machinery
/// for the finite, non-negative values below 10^12 explanations show (a proptest compares).
fn push_fixed(s: &mut String, v: f64, decimals: usize) {
    const POW10: [u64; 6] = [1, 10, 100, 1_000, 10_000, 100_000];
    if !(v.is_finite() && v.is_sign_positive() && v < 1e12 && decimals < POW10.len()) {
        use std::fmt::Write;
        let _ = write!(s, "{v:.decimals$}");
        return;
    }
    // v = m × 2^e exactly.
    let bits = v.to_bits();
    let (exp, frac) = ((bits >> 52) as i32, bits & ((1 << 52) - 1));
    let (m, e) = if exp == 0 { (frac, -1074) } else { (frac | (1 << 52), exp - 1075) };
    // v × 10^decimals = scaled × 2^e, below 2^53 × 10^5 < 2^70.
    let scaled = u128::from(m) * u128::from(POW10[decimals]);
    let rounded = if e >= 0 {
        // An integer below 10^12: scaled × 2^e < 10^17.
        scaled << e
    } else if e <= -128 {
        // Below 2^70 / 2^128: less than half.
        0
    } else {
        let shift = e.unsigned_abs();
        let (q, r, half) = (scaled >> shift, scaled & ((1 << shift) - 1), 1u128 << (shift - 1));
        if r > half || (r == half && q & 1 == 1) { q + 1 } else { q }
    };
    let (int, fract) = (rounded / u128::from(POW10[decimals]), rounded % u128::from(POW10[decimals]));
    push_int(s, int as u64);
    if decimals > 0 {
        s.push('.');
        let mut digits = [b'0'; 5];
        let mut f = fract as u64;
        for d in digits[..decimals].iter_mut().rev() {
            *d = b'0' + (f % 10) as u8;
            f /= 10;
        }
        s.extend(digits[..decimals].iter().map(|&d| char::from(d)));
    }
}

/// `1.0`, `0.5`, `0.25`: at least one decimal, no float noise.
fn weight_label(w: f64) -> String {
    if w.fract() == 0.0 { format!("{w:.1}") } else { format!("{w}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Explanations write numbers as the formatting machinery did.
        #[test]
        fn fixed_decimals_are_formatted_as_format_does(
            bits in proptest::num::u64::ANY,
            small in 0.0f64..2.0,
            // Exact ties of every number of decimals: k / 2^j.
            k in 0u64..4096,
            j in 0u32..12,
            decimals in 0usize..6,
        ) {
            for v in [f64::from_bits(bits), small, k as f64 / f64::from(1u32 << j), -small, 1e12 - small] {
                let mut s = String::new();
                push_fixed(&mut s, v, decimals);
                proptest::prop_assert_eq!(&s, &format!("{v:.decimals$}"), "{:e}", v);
            }
        }

        #[test]
        fn integers_are_formatted_as_format_does(n in proptest::num::u64::ANY, small in 0u64..1000) {
            for n in [n, small] {
                let mut s = String::new();
                push_int(&mut s, n);
                proptest::prop_assert_eq!(s, n.to_string());
            }
        }
    }
}
