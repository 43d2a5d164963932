//! The source registry: every configured source, its long-lived adapter channel, its routing
//! rules and its circuit breaker. Built once at start-up; shared by all queries.

use std::{
    collections::{BTreeSet, HashMap},
    sync::Arc,
};

use fedsearch_core::{Identity, propagation::TraceInjector};
use fedsearch_proto::adapter::source_adapter_client::SourceAdapterClient;
use regex::Regex;
use tonic::{service::interceptor::InterceptedService, transport::Channel};

use crate::{
    analysis::{self, Glossary},
    breaker::CircuitBreaker,
    config::{CircuitBreakerConfig, SourceConfig},
};

/// A client to one adapter that injects the current trace context into every call.
pub type AdapterClient = SourceAdapterClient<InterceptedService<Channel, TraceInjector>>;

/// One source, ready to query.
#[derive(Debug)]
pub struct Source {
    pub config: SourceConfig,
    /// The adapter-side logical source name.
    pub target: String,
    pub keywords: Vec<String>,
    pub patterns: Vec<Regex>,
    pub client: AdapterClient,
    pub breaker: CircuitBreaker,
    /// The channel to the adapter (its health is asked while the circuit is open, [`crate::health`]).
    pub channel: Channel,
    /// The long-lived sub-query streams to the adapter, shared by the sources on its address
    /// ([`crate::mux`]); `None` (`streams: 0`) opens one stream per sub-query.
    pub streams: Option<Arc<crate::mux::StreamPool>>,
    /// Answers reused for `cache_ttl` (see [`crate::cache`]); `None` when caching is off.
    pub cache: Option<crate::cache::AnswerCache>,
    /// What the source says about itself, as matching tokens (with glossary expansions): its
    /// description, when to use it, tags, doc types and keywords. See [`crate::routing`].
    pub profile: BTreeSet<String>,
    /// Tokens of `when_not_to_use` that are not in the profile.
    pub negative: BTreeSet<String>,
    /// Signs the user of every call to the adapter ([`fedsearch_core::assertion`]).
    pub signer: Option<Arc<fedsearch_core::assertion::AssertionSigner>>,
    /// What the adapter's `Describe` says the source holds, merged into the profile for
    /// scoring only (empty until it answers; see [`crate::describe`]).
    pub vocabulary: crate::describe::Slot,
}

/// The tokens of a text and of its glossary expansions.
fn profile_tokens(text: &str, glossary: &Glossary) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = analysis::tokens(text).into_iter().collect();
    for t in glossary.expand(text) {
        out.extend(analysis::tokens(&t));
    }
    out
}

fn profile_of(c: &SourceConfig, glossary: &Glossary) -> (BTreeSet<String>, BTreeSet<String>) {
    let about = [
        c.name.replace(['_', '-'], " "),
        c.description.clone(),
        c.when_to_use.clone(),
        c.tags.join(" ").replace(['_', '-'], " "),
        c.routing.doc_types.join(" "),
        c.routing.keywords.join(" "),
    ]
    .join(" \n ");
    let profile = profile_tokens(&about, glossary);
    let negative = profile_tokens(&c.when_not_to_use, glossary).difference(&profile).cloned().collect();
    (profile, negative)
}

/// The stream pool of `c`'s adapter address: `c.streams` streams to every serving replica,
/// each on a connection of its own.
fn stream_pool(
    c: &SourceConfig,
    replicas: &tokio::sync::watch::Receiver<fedsearch_core::endpoints::Replicas>,
) -> Option<Arc<crate::mux::StreamPool>> {
    (c.streams > 0).then(|| Arc::new(crate::mux::StreamPool::new(c.streams, replicas.clone())))
}

impl Source {
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Whether `user` may use this source at all.
    pub fn permits(&self, user: &Identity) -> bool {
        user.in_any_group(&self.config.required_groups)
    }

    /// What the source holds as the router may use it: its `Describe` vocabulary, or an empty
    /// one when `routing.vocabulary: false` switches it off (scoring and name spellings alike).
    pub fn vocabulary_in_use(&self) -> Arc<crate::describe::Vocabulary> {
        if self.config.uses_vocabulary() { self.vocabulary.get() } else { Default::default() }
    }
}

#[derive(Debug, Clone)]
pub struct Registry {
    sources: Arc<Vec<Source>>,
    by_name: Arc<HashMap<String, usize>>,
    glossary: Arc<Glossary>,
    shared_cache: crate::cache::SharedHandle,
}

impl Registry {
    /// Builds the registry; adapter channels connect lazily and are shared per address.
    pub fn new(configs: &[SourceConfig], breaker: &CircuitBreakerConfig, glossary: Glossary) -> anyhow::Result<Self> {
        Self::secured(configs, breaker, glossary, None, None)
    }

    /// [`Registry::new`] with channels over mutual TLS (`tls`) and sub-queries carrying
    /// identity assertions signed by `signer`.
    pub fn secured(
        configs: &[SourceConfig],
        breaker: &CircuitBreakerConfig,
        glossary: Glossary,
        tls: Option<Arc<fedsearch_core::tls::ClientTls>>,
        signer: Option<Arc<fedsearch_core::assertion::AssertionSigner>>,
    ) -> anyhow::Result<Self> {
        // One channel and one stream pool per adapter address, shared by its sources (the pool
        // sized by the first source's `streams`).
        type Shared = (fedsearch_core::endpoints::Replicated, Option<Arc<crate::mux::StreamPool>>);
        let mut adapters: HashMap<String, Shared> = HashMap::new();
        let mut sources = Vec::with_capacity(configs.len());
        let shared_cache = crate::cache::SharedHandle::default();
        for c in configs {
            let (replicated, streams) = match adapters.get(&c.adapter.url) {
                Some(shared) => shared.clone(),
                None => {
                    // Every replica behind the address (a list, or a name re-resolved every 10 s).
                    let r = c.adapter.replicated(tls.as_ref(), "sources.adapter")?;
                    let pool = stream_pool(c, &r.replicas);
                    adapters.insert(c.adapter.url.clone(), (r.clone(), pool.clone()));
                    (r, pool)
                }
            };
            let channel = replicated.channel;
            let patterns = c
                .routing
                .patterns
                .iter()
                .map(|p| Regex::new(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| anyhow::anyhow!("source {}: bad routing pattern: {e}", c.name))?;
            let (profile, negative) = profile_of(c, &glossary);
            sources.push(Source {
                profile,
                negative,
                target: c.target.clone().unwrap_or_else(|| c.name.clone()),
                keywords: c.routing.keywords.iter().map(|k| k.to_lowercase()).collect(),
                patterns,
                client: SourceAdapterClient::with_interceptor(channel.clone(), TraceInjector),
                breaker: CircuitBreaker::new(breaker),
                channel,
                streams,
                cache: c.cache_ttl.map(|ttl| crate::cache::new(ttl, 10_000, shared_cache.clone())),
                signer: signer.clone(),
                vocabulary: crate::describe::Slot::default(),
                config: c.clone(),
            });
        }
        let by_name = sources.iter().enumerate().map(|(i, s)| (s.config.name.clone(), i)).collect();
        Ok(Self { sources: Arc::new(sources), by_name: Arc::new(by_name), glossary: Arc::new(glossary), shared_cache })
    }

    /// Gives every source's answer cache the shared tier (once, at start-up).
    pub fn use_shared_cache(&self, shared: crate::cache::SharedCache) {
        let _ = self.shared_cache.set(shared);
    }

    /// The glossary questions are expanded with.
    pub fn glossary(&self) -> &Glossary {
        &self.glossary
    }

    pub fn get(&self, name: &str) -> Option<&Source> {
        self.by_name.get(name).map(|&i| &self.sources[i])
    }

    pub fn all(&self) -> impl Iterator<Item = &Source> {
        self.sources.iter()
    }

    /// The sources `user` may use, in registry order.
    pub fn permitted<'a>(&'a self, user: &'a Identity) -> impl Iterator<Item = &'a Source> + 'a {
        self.sources.iter().filter(move |s| s.permits(user))
    }
}
