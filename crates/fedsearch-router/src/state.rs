//! Everything a request handler needs, built once at start-up and shared.

use std::sync::Arc;

use fedsearch_core::JwtVerifier;

use crate::{config::RouterConfig, fuse::FusionRpc, registry::Registry};

#[derive(Clone)]
pub struct RouterState {
    pub config: Arc<RouterConfig>,
    pub verifier: JwtVerifier,
    pub registry: Registry,
    pub fusion: Option<FusionRpc>,
    pub admission: crate::admission::Admission,
    pub feedback: crate::feedback::FeedbackStore,
    pub audit: crate::audit::Audit,
}

impl RouterState {
    pub fn new(config: RouterConfig) -> anyhow::Result<Self> {
        let verifier = JwtVerifier::new(&config.auth).map_err(|e| anyhow::anyhow!(e))?;
        let tls = match &config.internal_tls {
            Some(t) => fedsearch_core::tls::ClientTls::from_config(t, "internal_tls").map_err(anyhow::Error::msg)?,
            None => None,
        };
        let signer = match &config.identity {
            Some(s) => Some(fedsearch_core::assertion::AssertionSigner::load(s).map_err(anyhow::Error::msg)?),
            None => None,
        };
        let registry = Registry::secured(
            &config.sources,
            &config.circuit_breaker,
            crate::analysis::Glossary::from_config(&config.glossary),
            tls.clone(),
            signer,
        )?;
        if let Some(shared) = &config.shared_cache {
            registry.use_shared_cache(crate::cache::SharedCache::new(shared)?);
        }
        let fusion = match &config.fusion.endpoint {
            Some(ep) => Some(FusionRpc::new(ep.channel(tls.as_ref(), "fusion.endpoint")?)),
            None => None,
        };
        let admission = crate::admission::Admission::new(&config.limits);
        let feedback = crate::feedback::FeedbackStore::new(config.feedback.path.clone());
        let audit = crate::audit::Audit::new(&config.audit)?;
        Ok(Self { config: Arc::new(config), verifier, registry, fusion, admission, feedback, audit })
    }
}
