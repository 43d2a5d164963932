//! How per-source lists become one ranked list: positions, scores, duplicate groups, order.
//!
//! Every step below is deterministic: the same hits give the same list, byte for byte, whatever
//! the order in which sources, batches or hits arrived (given the same `rank` fields).
//!
//! # 1. Positions within a source
//!
//! A source's hits are ordered by their `rank` field (1-based, as the adapter ranked them), hits
//! without a rank (`rank == 0`) after all ranked ones, ties by order of arrival. A hit's
//! **position** `p` is its 1-based place in that order. The same `local_id` repeated in one
//! source's list is ONE hit, kept at its best rank: repeating a hit never adds score (the
//! LangChain/LlamaIndex "ensemble" inflation bug). Positions count distinct hits.
//!
//! # 2. Weights
//!
//! The weight `w_s` of source `s` is `options.weights[s]` when present, else
//! `FuseStart.sources[s].weight` when non-zero, else `1.0`. (A proto3 `double` cannot tell 0
//! from unset, so a `SourceSpec.weight` of 0 means "unset"; to switch a source off, send
//! `options.weights[s] = 0`.) Weights must be finite and `>= 0`.
//!
//! **Weight 0** switches a source's contribution off: its hits still take part in duplicate
//! detection (so its copy of a document merges with the others' and shows in `duplicates`), but
//! contribute 0. A document found only by weight-0 sources scores 0 and sorts after every
//! document that has any contribution from a source with a positive weight.
//!
//! # 3. Contribution of one hit
//!
//! - **RRF** (reciprocal rank fusion, the default): `value = w_s / (k + p)`, `k = 60` unless
//!   `options.rrf_k` says otherwise (`k >= 1`). A hit at position 1 with weight 1 contributes
//!   `1/61 ≈ 0.016393`. Scores order nothing. Every hit of a source whose `SourceSpec.one_set`
//!   is set counts as if at `p = 1` (see the weighted score); its position (`rank_in_source`)
//!   and the tie-breaks of section 6 stay its own.
//! - **Weighted score**: `value = w_s × n`, where `n` is the hit's score normalised within its
//!   source over the hits that have arrived: `n = (score − floor) / (max − floor)`, the floor
//!   being 0 when no score of the source is negative (shares of the question, BM25 scores: a
//!   score is measured from zero, so a source's weakest hit keeps what it earned instead of 0),
//!   else the lowest score (min-max). The source's best hit gets 1. Non-finite scores count as
//!   missing; a hit without a score in a source whose other hits have scores gets `n = 0`. Every
//!   hit of a source whose `SourceSpec.one_set` is set gets `n = 1`: the router sets it for the
//!   rows of a structured source when the question asks for a list ("which claims are still
//!   open", "the invoices that are overdue"), and for a search source's documents of the list's
//!   time window when the question names its kind: each is one of the answers, not worth less
//!   by its place in an order (or by the words it happens to show). When a
//!   source has otherwise fewer than two distinct scores (no scores at all, one hit, scores on
//!   some hits only) the scores cannot order its hits and `n = 1 / p` instead, which keeps the
//!   source's own order (1, 0.5, 0.333, ...).
//!
//! # 4. Duplicate groups
//!
//! Hits are merged with union-find over three keys ([`crate::keys`]): canonical URL, normalised
//! title (≥ 8 chars) and content (supplied fingerprint, else normalised snippet ≥ 40 chars).
//! Hits sharing a key are in one group, transitively: A~B by URL and B~C by title puts A, B and
//! C in one group — with one limit: **a group holds at most one document per source.**
//!
//! 1. Within one source, hits sharing a strong key — canonical URL or supplied fingerprint —
//!    are ONE document under two ids, and always merge. Distinct ids of one source are
//!    otherwise distinct documents: title and snippet keys never merge hits of the same source.
//! 2. Across sources, keys are applied strongest first (URL, then content, then title); within
//!    a key, its buckets in the order of their best hit and each bucket's hits best first (by
//!    the order of section 6: best contribution, then its tie-breaks). Each hit joins the first
//!    group already formed on that key whose union with its own group would not hold two
//!    different documents of one source; if none, it starts one. So when tickets:A and
//!    tickets:B are both titled like kb:C, kb:C joins the better-ranked of A and B and the
//!    other stays on its own; a stronger key wins over a weaker one.
//!
//! The order of these steps depends only on the hits, not on their arrival.
//!
//! # 5. Score of a group
//!
//! `fused_score = Σ over the DISTINCT sources in the group of that source's best contribution`.
//! A document found by two sources gets two contributions; two copies in one source count once.
//! Hence for RRF no fused score exceeds `Σ_s w_s / (k + 1)`, and for weighted score `Σ_s w_s`.
//! Contributions are summed in the order they are listed in the explanation (value descending,
//! then source name), so the floating-point sum does not depend on arrival order.
//!
//! # 6. Representative and order
//!
//! The group's **representative** — whose id, title, snippet, url, metadata... the fused hit
//! shows — is the member with the best single contribution; ties go to the newer `updated_at`,
//! then the smaller source name, then the better position, then the smaller `local_id`. Every
//! other member is listed in `duplicates` with the key it matched on (`url`, `title` or
//! `content`: the first key it shares with the representative, else the first key that linked it
//! into the group).
//!
//! Groups are sorted by fused score (descending), then groups with a positive-weight
//! contribution first, then by the representative's `updated_at` (newer first), source name and
//! `local_id`; then superseded versions move (section 7); the first `top_k` are returned.
//!
//! # 7. Versions
//!
//! Versions are compared only within one source ([`crate::versions`] says how families are
//! found — the source's `version.family`, else titles and ids with year and version markers
//! removed, never joining titles that differ in another number — and which version of a family
//! is current: explicit status, then `supersedes`/`superseded_by` links, then the newer
//! `effective_at`, then the newer `updated_at`, then the larger label). Each source's versions
//! are resolved over every hit that arrived from it, whether or not it makes the list (a source
//! none of whose hits can tell anything of versions — no explicit version, id marker or title
//! with a year, date, version label or edition or status word — is skipped, and its hits'
//! version facts are never computed: `versions::may_tell`).
//!
//! - A fused hit's `version` is its representative's: the source's `version` when set, with
//!   `family`, `label` and `status` filled in from the inference where the source left them
//!   empty; nothing when nothing is known (no explicit version, no family of two or more, no
//!   title saying it is superseded).
//! - **The current version ranks above every superseded version of its family, at the best
//!   place of the family.** The group holding the current version takes the best position of
//!   any group it supersedes (transitively) — the source ranked the family there — and every
//!   group whose representative is superseded comes directly after its current version (several
//!   keep their relative order; a moved group takes the groups moved below it along); an old
//!   version already below its current one stays where it is. Should two groups each hold the other's newer version (a cycle, through
//!   copies in other sources), the better-ranked one stays in place. Nothing else moves, so the
//!   list is sorted by fused score except for these moved hits. This happens before `top_k` is
//!   applied.
//! - A superseded hit says `status: "superseded"` and `superseded_by`: the id of the fused hit
//!   that holds the current version when it is in the list (the representative's
//!   `<source>:<local_id>`, which is the current version itself unless another source's copy of
//!   it represents the group), else the current version's local id; when no current version
//!   arrived, the source's own `superseded_by` (a local id, possibly empty). A superseded hit
//!   is always kept.
//! - A group that holds both an old and the current version (one document by a strong key)
//!   carries the current one's version.

use std::{
    cmp::{Ordering, Reverse},
    collections::BinaryHeap,
    hash::BuildHasher,
};

use hashbrown::HashTable;

use fedsearch_proto::types::{SourceHit, VersionInfo};
use prost_types::Timestamp;

use crate::{
    keys::{KeyKind, Keys},
    versions::{self, Newer, Resolved, Status, VersionFacts},
};

/// The RRF rank constant used when `options.rrf_k` is unset.
pub const DEFAULT_RRF_K: u32 = 60;

/// A fusion method with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Reciprocal rank fusion with rank constant `k`.
    Rrf { k: u32 },
    /// Source scores normalised by the source's best (min-max when a score is negative) times the source weight.
    WeightedScore,
}

impl Method {
    /// The label used in explanations, logs and spans.
    pub fn label(self) -> &'static str {
        match self {
            Method::Rrf { .. } => "rrf",
            Method::WeightedScore => "weighted_score",
        }
    }
}

/// One distinct hit of one source, with its keys computed on arrival.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The hit: its index in the source's [`SourceList::hits`].
    pub hit: u32,
    /// The hit's `rank` field.
    rank: u32,
    pub keys: Keys,
    /// The kinds (bits) of this entry's keys that another entry has taken too (see
    /// [`KeyTable`]).
    pub shared: u8,
    /// The hit's version facts, computed only once a hit of the source may tell something of
    /// versions ([`SourceList::versioned`]).
    pub versions: Option<Box<VersionFacts>>,
    /// Order of first arrival within the source.
    pub arrival: u32,
}

impl Entry {
    fn order_key(&self) -> (u32, u32) {
        (if self.rank == 0 { u32::MAX } else { self.rank }, self.arrival)
    }
}

/// Everything that arrived from one source.
#[derive(Debug)]
pub(crate) struct SourceList {
    pub name: String,
    pub weight: f64,
    /// `SourceSpec.one_set`: its hits are equal answers to a list question (section 3).
    pub one_set: bool,
    /// Every hit that arrived, in the vectors they came in (the first batch kept as it is,
    /// later ones appended): a hit is never moved on its own. Hits without an id and worse
    /// repeats stay here unused.
    hits: Vec<SourceHit>,
    pub entries: Vec<Entry>,
    /// Index of each `local_id`'s entry, hashed on the id it points to (no copy of the id).
    by_id: HashTable<u32>,
    /// A hit of this source may tell something of versions ([`versions::may_tell`]): every
    /// entry has its version facts, and plan resolves the source's versions.
    versioned: bool,
    pub ended: bool,
}

fn id_hash(id: &str) -> u64 {
    foldhash::fast::FixedState::default().hash_one(id)
}

impl SourceList {
    pub fn new(name: String, weight: f64, one_set: bool) -> Self {
        Self {
            name,
            weight,
            one_set,
            hits: Vec::new(),
            entries: Vec::new(),
            by_id: HashTable::new(),
            versioned: false,
            ended: false,
        }
    }

    /// The hit at index `at` of `hits` (see [`Self::append`]).
    pub fn hits_at(&self, at: usize) -> &SourceHit {
        &self.hits[at]
    }

    /// The hit of entry `ent`.
    pub fn hit(&self, ent: u32) -> &SourceHit {
        &self.hits[self.entries[ent as usize].hit as usize]
    }

    pub fn hit_mut(&mut self, ent: u32) -> &mut SourceHit {
        &mut self.hits[self.entries[ent as usize].hit as usize]
    }

    /// The index of the entry whose local id is `id`.
    fn find(&self, id: &str) -> Option<u32> {
        self.by_id.find(id_hash(id), |&i| self.hit(i).local_id == id).copied()
    }

    /// Stores a batch; returns the range of its hits' indices in `hits`.
    pub fn append(&mut self, mut batch: Vec<SourceHit>) -> std::ops::Range<usize> {
        let start = self.hits.len();
        if self.hits.is_empty() {
            self.hits = batch;
        } else {
            self.hits.append(&mut batch);
        }
        let added = self.hits.len() - start;
        self.entries.reserve(added);
        let (entries, hits) = (&self.entries, &self.hits);
        self.by_id.reserve(added, |&i| id_hash(&hits[entries[i as usize].hit as usize].local_id));
        start..self.hits.len()
    }

    /// Adds the hit at index `at` of `hits`; a repeated `local_id` keeps the copy with the
    /// better rank. Returns the entry (new or replaced) with the kinds of its keys that are
    /// prefix keys ([`Keys::lazy`]), for [`KeyTable::take_keys`]; `None` when the hit was a worse
    /// repeat.
    fn push(&mut self, at: u32) -> Option<(u32, u8)> {
        let (entries, hits) = (&self.entries, &self.hits);
        let hit = &hits[at as usize];
        let hash = id_hash(&hit.local_id);
        let id_of = |i: u32| hits[entries[i as usize].hit as usize].local_id.as_str();
        if let Some(&i) = self.by_id.find(hash, |&i| id_of(i) == hit.local_id) {
            let old = &mut self.entries[i as usize];
            let rank = if hit.rank == 0 { u32::MAX } else { hit.rank };
            if (rank, old.arrival) >= old.order_key() {
                return None;
            }
            let (keys, partial) = lazy_keys(hit);
            *old = Entry { hit: at, rank: hit.rank, keys, shared: 0, versions: None, arrival: old.arrival };
            self.note_versions(i);
            return Some((i, partial));
        }
        let arrival = self.entries.len() as u32;
        self.by_id.insert_unique(hash, arrival, |&i| id_hash(id_of(i)));
        let (keys, partial) = lazy_keys(hit);
        self.entries.push(Entry { hit: at, rank: hit.rank, keys, shared: 0, versions: None, arrival });
        self.note_versions(arrival);
        Some((arrival, partial))
    }

    /// Gives entry `ent` (new or replaced) its version facts when the source is versioned,
    /// or when its hit makes it so (then every earlier entry gets its facts too).
    fn note_versions(&mut self, ent: u32) {
        if !self.versioned {
            if !may_tell(self.hit(ent)) {
                return;
            }
            self.versioned = true;
            for e in 0..self.entries.len() {
                let facts = VersionFacts::of(&self.hits[self.entries[e].hit as usize]);
                self.entries[e].versions = Some(Box::new(facts));
            }
            return;
        }
        let facts = VersionFacts::of(self.hit(ent));
        self.entries[ent as usize].versions = Some(Box::new(facts));
    }

    /// The version facts of every entry, when the source is versioned.
    fn version_facts(&self) -> Option<Vec<(&SourceHit, &VersionFacts)>> {
        if !self.versioned {
            return None;
        }
        let facts = self.entries.iter().map(|e| Some((&self.hits[e.hit as usize], e.versions.as_deref()?)));
        facts.collect()
    }
}

#[cfg(not(test))]
fn lazy_keys(hit: &SourceHit) -> (Keys, u8) {
    Keys::lazy(hit)
}

#[cfg(not(test))]
fn may_tell(hit: &SourceHit) -> bool {
    versions::may_tell(hit)
}

#[cfg(test)]
thread_local! {
    /// Tests compare fusion that skips the sources no hit of which may tell anything of
    /// versions with fusion that resolves every source.
    static ALL_VERSIONED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn may_tell(hit: &SourceHit) -> bool {
    ALL_VERSIONED.get() || versions::may_tell(hit)
}

#[cfg(test)]
thread_local! {
    /// Tests compare fusion over [`Keys::lazy`] and shared keys with fusion over every full key
    /// ([`Keys::of`]).
    static FULL_KEYS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn lazy_keys(hit: &SourceHit) -> (Keys, u8) {
    if FULL_KEYS.get() { (Keys::of(hit), 0) } else { Keys::lazy(hit) }
}

/// Whether [`group`] looks at every key, not only the shared ones: as it did before keys were
/// marked shared, which tests compare with (with [`FULL_KEYS`]).
#[cfg(test)]
fn all_keys_shared() -> bool {
    FULL_KEYS.get()
}

#[cfg(not(test))]
fn all_keys_shared() -> bool {
    false
}

/// Adds the hit at index `at` of `sources[src].hits` (see [`SourceList::append`]) and takes
/// its keys ([`KeyTable::take_keys`]).
pub(crate) fn add_hit(sources: &mut [SourceList], table: &mut KeyTable, src: usize, at: u32) {
    if let Some((ent, partial)) = sources[src].push(at) {
        table.take_keys(sources, src as u32, ent, partial);
    }
}

/// Every key taken so far, of every kind, each with the first entry that took it; title and
/// snippet prefix keys ([`Keys::lazy`]) in a space of their own.
///
/// - A prefix key is held only by the first and only entry to have taken it; once a second
///   entry takes it, both get their full keys, and so does every later one. Hence two entries
///   hold equal keys exactly when their full keys are equal, whatever the order of arrival.
/// - An entry whose key (not a prefix key) another entry has also taken has that kind's bit in
///   [`Entry::shared`]: when two entries hold one key, both have the bit. (An entry may have it
///   spuriously, when the other was replaced since by a hit with other keys.) [`group`] looks
///   only at the keys with the bit: a key no other entry holds links nothing.
///
/// Open addressing with linear probing, at most three quarters full: keys are hashes, so a
/// key's low bits are its place. Arrays of plain integers (zeroed memory when they grow): the
/// keys, per slot its entry, tag and state ([`Slot`]; an empty slot's is 0), and its source.
#[derive(Debug, Default)]
pub(crate) struct KeyTable {
    keys: Vec<u64>,
    slots: Vec<u64>,
    srcs: Vec<u32>,
    len: usize,
}

/// One taken key's entry and state, packed in a `u64`: the entry (high 32 bits), then the
/// kind's bit plus [`PREFIX_TAG`] for a prefix key and [`SHARED`] once a second entry took it
/// (low 8 bits, never 0).
#[derive(Debug, Clone, Copy)]
struct Slot(u64);

const PREFIX_TAG: u8 = 0x80;
const SHARED: u8 = 0x40;

impl Slot {
    fn new(ent: u32, tag: u8) -> Self {
        Slot((u64::from(ent) << 32) | u64::from(tag))
    }

    fn tag(self) -> u8 {
        self.0 as u8 & !SHARED
    }

    fn shared(self) -> bool {
        self.0 as u8 & SHARED != 0
    }

    fn entry(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// What taking a key found.
enum Taken {
    /// No other entry has taken it.
    Alone,
    /// Another entry took it first, and it had been alone: that entry (source, entry).
    SharedNow(u32, u32),
    /// Two entries had taken it already.
    Shared,
}

impl KeyTable {
    /// Hits a source usually sends (fewer leave room unused, more grow the table).
    const USUAL_HITS: usize = 60;

    /// A table with room for the keys of `sources` sources' usual number of hits (three keys
    /// each), so that a usual fusion never grows it.
    pub fn for_sources(sources: usize) -> Self {
        let mut table = Self::default();
        table.reserve(3 * Self::USUAL_HITS * sources.min(64));
        table
    }

    /// Room for `additional` more keys (at most three quarters full).
    pub fn reserve(&mut self, additional: usize) {
        let want = (self.len + additional) * 4 / 3 + 1;
        if want <= self.keys.len() {
            return;
        }
        let capacity = want.next_power_of_two().max(64);
        let keys = std::mem::replace(&mut self.keys, vec![0; capacity]);
        let slots = std::mem::replace(&mut self.slots, vec![0; capacity]);
        let srcs = std::mem::replace(&mut self.srcs, vec![0; capacity]);
        for ((key, slot), src) in keys.into_iter().zip(slots).zip(srcs).filter(|&((_, slot), _)| slot != 0) {
            let mut i = key as usize & (capacity - 1);
            while self.slots[i] != 0 {
                i = (i + 1) & (capacity - 1);
            }
            (self.keys[i], self.slots[i], self.srcs[i]) = (key, slot, src);
        }
    }

    /// Takes the keys of `sources[src].entries[ent]`, just computed by [`Keys::lazy`] (the
    /// kinds `partial` of which are prefix keys): keeps a prefix key no other entry has taken,
    /// else computes full keys; marks the keys other entries have taken too.
    fn take_keys(&mut self, sources: &mut [SourceList], src: u32, ent: u32, partial: u8) {
        for kind in KeyKind::ALL {
            let Some(key) = sources[src as usize].entries[ent as usize].keys.get(kind) else { continue };
            if partial & kind.bit() == 0 {
                self.take_full(sources, kind, key, src, ent);
                continue;
            }
            match self.take(key, kind.bit() | PREFIX_TAG, src, ent) {
                Taken::Alone => continue,
                Taken::SharedNow(first_src, first_ent) => {
                    // The first entry, unless it was replaced since by a hit with other keys.
                    let first = &mut sources[first_src as usize];
                    if first.entries[first_ent as usize].keys.get(kind) == Some(key) {
                        let full = Keys::full(first.hit(first_ent), kind);
                        first.entries[first_ent as usize].keys.set(kind, full);
                        if let Some(full) = full {
                            self.take_full(sources, kind, full, first_src, first_ent);
                        }
                    }
                }
                Taken::Shared => {}
            }
            let source = &mut sources[src as usize];
            let full = Keys::full(source.hit(ent), kind);
            source.entries[ent as usize].keys.set(kind, full);
            if let Some(full) = full {
                self.take_full(sources, kind, full, src, ent);
            }
        }
    }

    /// Takes a key that is not a prefix key; marks it shared ([`Entry::shared`]) in this entry
    /// and the first one when another entry has taken it too.
    fn take_full(&mut self, sources: &mut [SourceList], kind: KeyKind, key: u64, src: u32, ent: u32) {
        let bit = kind.bit();
        match self.take(key, bit, src, ent) {
            Taken::Alone => return,
            Taken::SharedNow(first_src, first_ent) => {
                sources[first_src as usize].entries[first_ent as usize].shared |= bit;
            }
            Taken::Shared => {}
        }
        sources[src as usize].entries[ent as usize].shared |= bit;
    }

    fn take(&mut self, key: u64, tag: u8, src: u32, ent: u32) -> Taken {
        if (self.len + 1) * 4 / 3 + 1 > self.keys.len() {
            self.reserve(1);
        }
        let mask = self.keys.len() - 1;
        let mut i = key as usize & mask;
        loop {
            let slot = Slot(self.slots[i]);
            if slot.0 == 0 {
                (self.keys[i], self.slots[i], self.srcs[i]) = (key, Slot::new(ent, tag).0, src);
                self.len += 1;
                return Taken::Alone;
            }
            if self.keys[i] == key && slot.tag() == tag {
                let first = (self.srcs[i], slot.entry());
                return match slot {
                    // A replaced hit of the same entry with the same key: still the only one.
                    _ if !slot.shared() && first == (src, ent) => Taken::Alone,
                    _ if !slot.shared() => {
                        self.slots[i] |= u64::from(SHARED);
                        Taken::SharedNow(first.0, first.1)
                    }
                    _ => Taken::Shared,
                };
            }
            i = (i + 1) & mask;
        }
    }
}

/// One hit's place and contribution.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scored {
    pub src: u32,
    pub ent: u32,
    /// 1-based position in its source.
    pub pos: u32,
    pub value: f64,
    /// The normalised score (weighted score only).
    pub norm: Option<f64>,
}

/// A fused hit before its fields are filled in.
#[derive(Debug)]
pub(crate) struct PlannedHit {
    pub score: f64,
    pub rep: Scored,
    /// The best contribution of each distinct source, in summing order.
    pub contributions: Vec<Scored>,
    /// Every other member, sorted by source name then position, with the key it matched on.
    pub duplicates: Vec<(Scored, KeyKind)>,
    /// The representative's version (see the module doc, section 7).
    pub version: Option<VersionInfo>,
}

/// The fused list before materialisation.
#[derive(Debug)]
pub(crate) struct Plan {
    pub hits: Vec<PlannedHit>,
    pub duplicates_merged: u32,
}

struct Group {
    start: usize,
    len: usize,
    score: f64,
    rep: Scored,
    positive: bool,
}

/// Fuses `sources` (see the module doc) and keeps the first `top_k` groups.
pub(crate) fn plan(method: Method, sources: &[SourceList], top_k: usize) -> Plan {
    let scored = score_all(method, sources);
    let n = scored.len();
    let (roots, bits) = group(&scored, sources);
    // The hits by root, each group's in hit order: a counting sort by root.
    let mut next = vec![0u32; n + 1];
    for &r in &roots {
        next[r as usize + 1] += 1;
    }
    for r in 1..=n {
        next[r] += next[r - 1];
    }
    let mut order = vec![0u32; n];
    for (g, &r) in roots.iter().enumerate() {
        order[next[r as usize] as usize] = g as u32;
        next[r as usize] += 1;
    }
    let mut groups = Vec::with_capacity(n);
    let mut start = 0;
    while start < n {
        let root = roots[order[start] as usize];
        let len = order[start..].iter().take_while(|&&g| roots[g as usize] == root).count();
        groups.push(summarise(&order[start..start + len], start, &scored, sources));
        start += len;
    }
    let duplicates_merged = (n - groups.len()) as u32;
    // Each source's versions; `None` when nothing can be known of any of its hits.
    let resolved: Vec<Option<Vec<Resolved>>> = sources
        .iter()
        .map(|s| {
            let hits = s.version_facts()?;
            let by_id = |id: &str| s.find(id).map(|i| i as usize);
            Some(versions::resolve_with(&hits, &by_id))
        })
        .collect();
    // Unstable: two groups' representatives are distinct hits, never tied (`cmp_tie`).
    let by_order = |a: &Group, b: &Group| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.positive.cmp(&a.positive))
            .then_with(|| cmp_tie(&a.rep, &b.rep, sources))
    };
    if groups.len() > top_k && resolved.iter().all(Option::is_none) {
        // No version moves (section 7): the first `top_k` groups are the list.
        if let Some(last) = top_k.checked_sub(1) {
            groups.select_nth_unstable_by(last, by_order);
        }
        groups.truncate(top_k);
    }
    groups.sort_unstable_by(by_order);
    // Where each hit (by source and entry) ended up: the index of its group in sorted order.
    let offsets: Vec<usize> = sources
        .iter()
        .scan(0, |acc, s| {
            let at = *acc;
            *acc += s.entries.len();
            Some(at)
        })
        .collect();
    let mut group_of = vec![0u32; n];
    for (gi, g) in groups.iter().enumerate() {
        for &m in &order[g.start..g.start + g.len] {
            let s = scored[m as usize];
            group_of[offsets[s.src as usize] + s.ent as usize] = gi as u32;
        }
    }
    let group_of_entry = |src: u32, ent: usize| group_of[offsets[src as usize] + ent] as usize;
    let successor = |g: &Group| match resolved[g.rep.src as usize].as_ref()?[g.rep.ent as usize] {
        Resolved { status: Status::Superseded, newer: Newer::Present(e), .. } => Some(e),
        _ => None,
    };
    let placed = demote_superseded(&groups, |gi, g| {
        successor(g).map(|e| group_of_entry(g.rep.src, e)).filter(|&target| target != gi)
    });
    let mut position = vec![usize::MAX; groups.len()];
    for (p, &gi) in placed.iter().take(top_k).enumerate() {
        position[gi] = p;
    }
    let fused_id = |s: &Scored| format!("{}:{}", name(s, sources), hit_of(s, sources).local_id);
    let version_of = |gi: usize, g: &Group| {
        let (src, rep) = (g.rep.src as usize, g.rep.ent as usize);
        let hit = sources[src].hit(g.rep.ent);
        let resolved = resolved[src].as_ref()?;
        let mine = &resolved[rep];
        match &mine.newer {
            Newer::Present(e) if mine.status == Status::Superseded => {
                let target = group_of_entry(g.rep.src, *e);
                let newer = sources[src].hit(*e as u32);
                if target == gi {
                    // The group holds the newer version too (one document by a strong key).
                    resolved[*e].version_info(newer, String::new())
                } else if position[target] != usize::MAX {
                    mine.version_info(hit, fused_id(&groups[target].rep))
                } else {
                    mine.version_info(hit, newer.local_id.clone())
                }
            }
            Newer::Absent(id) => mine.version_info(hit, id.clone()),
            _ => mine.version_info(hit, String::new()),
        }
    };
    let hits = placed
        .iter()
        .take(top_k)
        .map(|&gi| {
            let g = &groups[gi];
            let members = &order[g.start..g.start + g.len];
            let rep_keys = keys_of(&g.rep, sources);
            let mut duplicates: Vec<(Scored, KeyKind)> = members
                .iter()
                .map(|&m| (scored[m as usize], bits[m as usize]))
                .filter(|(m, _)| (m.src, m.ent) != (g.rep.src, g.rep.ent))
                .map(|(m, linked)| (m, matched_on(keys_of(&m, sources), rep_keys, linked)))
                .collect();
            duplicates
                .sort_unstable_by(|(a, _), (b, _)| name(a, sources).cmp(name(b, sources)).then(a.pos.cmp(&b.pos)));
            PlannedHit {
                score: g.score,
                rep: g.rep,
                contributions: best_per_source(members, &scored, sources),
                duplicates,
                version: version_of(gi, g),
            }
        })
        .collect();
    Plan { hits, duplicates_merged }
}

/// The order of `groups` (already sorted) in which every group whose `target(index, group)` is
/// `Some(t)` comes after group `t`, moving as little as it must: a group above its target moves
/// directly below it; several groups moved below one keep their order, and a moved group takes
/// the groups moved below it along. In a cycle (two groups each holding
/// the other's newer version) the best-ranked group of the cycle stays where it is.
fn demote_superseded(groups: &[Group], target: impl Fn(usize, &Group) -> Option<usize>) -> Vec<usize> {
    let mut targets: Vec<Option<usize>> = groups.iter().enumerate().map(|(i, g)| target(i, g)).collect();
    if targets.iter().all(Option::is_none) {
        return (0..groups.len()).collect();
    }
    // Break cycles: each group has at most one target, so each walk ends in a root or a cycle.
    const NEW: u8 = 0;
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; groups.len()];
    let mut path = Vec::new();
    for start in 0..groups.len() {
        path.clear();
        let mut at = Some(start);
        while let Some(i) = at {
            match state[i] {
                DONE => break,
                ON_PATH => {
                    let cycle = &path[path.iter().position(|&p| p == i).unwrap_or(0)..];
                    if let Some(&best) = cycle.iter().min() {
                        targets[best] = None;
                    }
                    break;
                }
                _ => {
                    state[i] = ON_PATH;
                    path.push(i);
                    at = targets[i];
                }
            }
        }
        for &p in &path {
            state[p] = DONE;
        }
    }
    // The stable order that puts each group after its target: always the best-ranked group
    // whose target is already placed.
    let mut below: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
    for (i, t) in targets.iter().enumerate() {
        if let Some(t) = *t {
            below[t].push(i);
        }
    }
    // A current version takes the best place of the versions it supersedes (transitively): the
    // source ranked the family there, and the answer should be the current text.
    let mut best = (0..groups.len()).collect::<Vec<_>>();
    for i in 0..groups.len() {
        let mut at = targets[i];
        let mut steps = 0;
        while let Some(t) = at {
            best[t] = best[t].min(i);
            at = targets[t];
            steps += 1;
            if steps > groups.len() {
                break;
            }
        }
    }
    let mut ready = BinaryHeap::new();
    for (i, t) in targets.iter().enumerate() {
        if t.is_none() {
            ready.push(Reverse((best[i], i)));
        }
    }
    let mut placed = Vec::with_capacity(groups.len());
    while let Some(Reverse((_, i))) = ready.pop() {
        placed.push(i);
        ready.extend(below[i].iter().map(|&b| Reverse((best[b], b))));
    }
    placed
}

fn entry<'a>(s: &Scored, sources: &'a [SourceList]) -> &'a Entry {
    &sources[s.src as usize].entries[s.ent as usize]
}

fn hit_of<'a>(s: &Scored, sources: &'a [SourceList]) -> &'a SourceHit {
    sources[s.src as usize].hit(s.ent)
}

fn keys_of<'a>(s: &Scored, sources: &'a [SourceList]) -> &'a Keys {
    &entry(s, sources).keys
}

fn name<'a>(s: &Scored, sources: &'a [SourceList]) -> &'a str {
    &sources[s.src as usize].name
}

fn updated(s: &Scored, sources: &[SourceList]) -> (i64, i32) {
    hit_of(s, sources).updated_at.as_ref().map(|t: &Timestamp| (t.seconds, t.nanos)).unwrap_or((i64::MIN, 0))
}

/// Tie-break between two hits of equal value: newer `updated_at`, source name, position,
/// `local_id`. `Less` means `a` wins.
fn cmp_tie(a: &Scored, b: &Scored, sources: &[SourceList]) -> Ordering {
    updated(b, sources)
        .cmp(&updated(a, sources))
        .then_with(|| name(a, sources).cmp(name(b, sources)))
        .then(a.pos.cmp(&b.pos))
        .then_with(|| hit_of(a, sources).local_id.cmp(&hit_of(b, sources).local_id))
}

/// Best contribution first. `Less` means `a` is the better hit.
fn cmp_best(a: &Scored, b: &Scored, sources: &[SourceList]) -> Ordering {
    b.value.total_cmp(&a.value).then_with(|| cmp_tie(a, b, sources))
}

/// Positions and contributions of every hit, source by source, in position order.
fn score_all(method: Method, sources: &[SourceList]) -> Vec<Scored> {
    let total = sources.iter().map(|s| s.entries.len()).sum();
    let mut scored = Vec::with_capacity(total);
    let mut order: Vec<u32> = Vec::new();
    for (si, source) in sources.iter().enumerate() {
        order.clear();
        order.extend(0..source.entries.len() as u32);
        order.sort_unstable_by_key(|&e| source.entries[e as usize].order_key());
        let w = source.weight;
        let range = match method {
            Method::Rrf { .. } => None,
            Method::WeightedScore => score_range(source),
        };
        for (i, &ent) in order.iter().enumerate() {
            let pos = i as u32 + 1;
            let (value, norm) = match method {
                Method::Rrf { k } => {
                    let p = if source.one_set { 1 } else { pos };
                    (w / (f64::from(k) + f64::from(p)), None)
                }
                Method::WeightedScore => {
                    let n = match range {
                        _ if source.one_set => 1.0,
                        Some((floor, max)) => {
                            finite_score(source.hit(ent)).map_or(0.0, |s| (s - floor) / (max - floor))
                        }
                        None => 1.0 / f64::from(pos),
                    };
                    (w * n, Some(n))
                }
            };
            scored.push(Scored { src: si as u32, ent, pos, value, norm });
        }
    }
    scored
}

fn finite_score(hit: &SourceHit) -> Option<f64> {
    hit.score.filter(|s| s.is_finite())
}

/// `(floor, max)` of a source's finite scores: the floor is 0 when no score is negative (scores
/// are measured from zero: a share of the question, a BM25 score), else the lowest score. `None`
/// when there are fewer than two distinct scores.
fn score_range(source: &SourceList) -> Option<(f64, f64)> {
    let mut range: Option<(f64, f64)> = None;
    for s in source.entries.iter().filter_map(|e| finite_score(&source.hits[e.hit as usize])) {
        range = Some(match range {
            None => (s, s),
            Some((min, max)) => (min.min(s), max.max(s)),
        });
    }
    range.filter(|(min, max)| max > min).map(|(min, max)| (if min >= 0.0 { 0.0 } else { min }, max))
}

/// Union-find over the keys (see the module doc, section 4); returns each hit's root and the
/// keys that linked it to another hit.
fn group(scored: &[Scored], sources: &[SourceList]) -> (Vec<u32>, Vec<u8>) {
    let n = scored.len();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    let mut linked = vec![0u8; n];
    // Each hit's key of one kind with its index, sorted: equal keys are runs, each in hit order.
    // A key no other hit holds is a run of one, which links nothing: only the shared ones.
    let sorted_keys = |kind: KeyKind, keyed: &mut Vec<(u64, u32)>, within_source: bool| {
        keyed.clear();
        for (g, s) in scored.iter().enumerate() {
            let entry = entry(s, sources);
            if entry.shared & kind.bit() == 0 && !all_keys_shared() {
                continue;
            }
            let keys = &entry.keys;
            if let Some(key) = keys.get(kind).filter(|_| !within_source || kind.merges_within_source(keys)) {
                keyed.push((key, g as u32));
            }
        }
        keyed.sort_unstable();
    };
    // Every URL merges within a source too: steps 1 and 2 share one sorted list of URL keys.
    let mut url_keyed: Vec<(u64, u32)> = Vec::with_capacity(n);
    sorted_keys(KeyKind::Url, &mut url_keyed, true);
    let mut keyed: Vec<(u64, u32)> = Vec::with_capacity(n);
    // 1. One document of one source: hits of that source sharing a strong key.
    for kind in [KeyKind::Url, KeyKind::Content] {
        if kind != KeyKind::Url {
            sorted_keys(kind, &mut keyed, true);
        }
        let keyed = if kind == KeyKind::Url { &url_keyed } else { &keyed };
        for run in keyed.chunk_by(|a, b| a.0 == b.0).filter(|run| run.len() > 1) {
            // The first hit of each source in the run; the others join it.
            for (i, &(_, g)) in run.iter().enumerate() {
                let src = scored[g as usize].src;
                let Some(&(_, f)) = run[..i].iter().find(|(_, f)| scored[*f as usize].src == src) else { continue };
                union(&mut parent, g as usize, f as usize);
                linked[g as usize] |= kind.bit();
                linked[f as usize] |= kind.bit();
            }
        }
    }
    let mut groups = SourceSets::new(scored, &mut parent);
    // 2. Across sources: strongest key first, each key's buckets and members best hit first.
    let by_best = |a: &u32, b: &u32| cmp_best(&scored[*a as usize], &scored[*b as usize], sources);
    let mut members: Vec<u32> = Vec::with_capacity(n);
    let mut buckets: Vec<(usize, usize)> = Vec::new();
    let mut heads: Vec<u32> = Vec::new();
    for kind in KeyKind::MERGE_ORDER {
        if kind != KeyKind::Url {
            sorted_keys(kind, &mut keyed, false);
        }
        let keyed = if kind == KeyKind::Url { &url_keyed } else { &keyed };
        members.clear();
        buckets.clear();
        for run in keyed.chunk_by(|a, b| a.0 == b.0) {
            let src0 = scored[run[0].1 as usize].src;
            if run.iter().any(|&(_, g)| scored[g as usize].src != src0) {
                let start = members.len();
                members.extend(run.iter().map(|&(_, g)| g));
                // Unstable sorts here and below: distinct hits never compare equal.
                members[start..].sort_unstable_by(by_best);
                buckets.push((start, run.len()));
            }
        }
        buckets.sort_unstable_by(|a, b| by_best(&members[a.0], &members[b.0]));
        for &(start, len) in &buckets {
            // Each member joins the first (best) compatible group already formed on this key.
            heads.clear();
            for &m in &members[start..start + len] {
                let joined = heads.iter().find(|&&h| groups.try_union(m, h)).copied();
                match joined {
                    Some(h) => {
                        linked[m as usize] |= kind.bit();
                        linked[h as usize] |= kind.bit();
                    }
                    None => heads.push(m),
                }
            }
        }
    }
    let parent = groups.parent;
    let roots = (0..n).map(|g| find(parent, g)).collect();
    (roots, linked)
}

/// Union-find whose groups know which document of each source they hold, so that a merge
/// putting two documents of one source in one group can be refused.
struct SourceSets<'a> {
    parent: &'a mut [u32],
    /// Each hit's source and document (the root after step 1).
    doc: Vec<(u32, u32)>,
    /// A root's `(source, document)` pairs, sorted; empty means just its own `doc`.
    sets: Vec<Vec<(u32, u32)>>,
}

impl<'a> SourceSets<'a> {
    fn new(scored: &[Scored], parent: &'a mut [u32]) -> Self {
        let doc = (0..scored.len()).map(|g| (scored[g].src, find(parent, g))).collect();
        Self { parent, doc, sets: vec![Vec::new(); scored.len()] }
    }

    fn set(&self, root: u32) -> &[(u32, u32)] {
        match self.sets[root as usize].as_slice() {
            [] => std::slice::from_ref(&self.doc[root as usize]),
            set => set,
        }
    }

    /// Merges the groups of `a` and `b` unless that would hold two documents of one source;
    /// `true` when they are (now) one group.
    fn try_union(&mut self, a: u32, b: u32) -> bool {
        let (ra, rb) = (find(self.parent, a as usize), find(self.parent, b as usize));
        if ra == rb {
            return true;
        }
        let (sa, sb) = (self.set(ra), self.set(rb));
        let mut merged = Vec::with_capacity(sa.len() + sb.len());
        let (mut i, mut j) = (0, 0);
        while i < sa.len() || j < sb.len() {
            let next = match (sa.get(i), sb.get(j)) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    if x.1 != y.1 {
                        return false;
                    }
                    j += 1;
                    i += 1;
                    *x
                }
                (Some(x), Some(y)) if x.0 < y.0 => {
                    i += 1;
                    *x
                }
                (Some(x), None) => {
                    i += 1;
                    *x
                }
                (_, Some(y)) => {
                    j += 1;
                    *y
                }
                (None, None) => unreachable!("loop condition"),
            };
            merged.push(next);
        }
        let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
        self.parent[hi as usize] = lo;
        self.sets[hi as usize] = Vec::new();
        self.sets[lo as usize] = merged;
        true
    }
}

fn find(parent: &mut [u32], mut x: usize) -> u32 {
    while parent[x] as usize != x {
        let grand = parent[parent[x] as usize];
        parent[x] = grand;
        x = grand as usize;
    }
    x as u32
}

fn union(parent: &mut [u32], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
        parent[hi as usize] = lo;
    }
}

/// The key a duplicate is reported under: the first it shares with the representative, else
/// the first that linked it into the group.
fn matched_on(keys: &Keys, rep: &Keys, linked: u8) -> KeyKind {
    KeyKind::ALL
        .into_iter()
        .find(|&k| keys.get(k).is_some() && keys.get(k) == rep.get(k))
        .or_else(|| KeyKind::ALL.into_iter().find(|k| linked & k.bit() != 0))
        .unwrap_or(KeyKind::Url)
}

/// Score and representative of one group (no allocation for the common single-hit group).
fn summarise(members: &[u32], start: usize, scored: &[Scored], sources: &[SourceList]) -> Group {
    let positive_weight = |s: &Scored| sources[s.src as usize].weight > 0.0;
    if let [only] = members {
        let rep = scored[*only as usize];
        return Group { start, len: 1, score: rep.value, rep, positive: positive_weight(&rep) };
    }
    let best = best_per_source(members, scored, sources);
    let score = best.iter().map(|b| b.value).sum();
    let rep = best.iter().copied().min_by(|a, b| cmp_best(a, b, sources)).unwrap_or(scored[members[0] as usize]);
    Group { start, len: members.len(), score, rep, positive: best.iter().any(positive_weight) }
}

/// The best contribution of each distinct source in a group, in summing order (value
/// descending, then source name).
fn best_per_source(members: &[u32], scored: &[Scored], sources: &[SourceList]) -> Vec<Scored> {
    let mut best: Vec<Scored> = Vec::with_capacity(members.len().min(sources.len()));
    for &m in members {
        let m = scored[m as usize];
        match best.iter_mut().find(|b| b.src == m.src) {
            Some(b) => {
                if cmp_best(&m, b, sources) == Ordering::Less {
                    *b = m;
                }
            }
            None => best.push(m),
        }
    }
    // One per source: never equal.
    best.sort_unstable_by(|a, b| b.value.total_cmp(&a.value).then_with(|| name(a, sources).cmp(name(b, sources))));
    best
}

#[cfg(test)]
mod tests;
