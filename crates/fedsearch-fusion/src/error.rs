//! The errors of fusion, all caused by the caller's input, and their gRPC status.

/// Bad fusion input. Every message names the offending field and is safe to show.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FusionError {
    #[error("top_k must be between 1 and {max} (0 means {default}), got {0}", max = crate::MAX_TOP_K, default = crate::DEFAULT_TOP_K)]
    TopK(u32),
    #[error("options.rrf_k must be at least 1")]
    RrfK,
    #[error("the weight of source `{name}` must be finite and >= 0, got {weight}")]
    Weight { name: String, weight: f64 },
    #[error("every source in FuseStart.sources needs a name")]
    EmptySourceName,
    #[error("source `{0}` is declared twice in FuseStart.sources")]
    DuplicateSource(String),
    #[error("the stream must start with a FuseStart")]
    NoStart,
    #[error("FuseStart may only be sent once")]
    SecondStart,
    #[error("source `{0}` was not declared in FuseStart.sources")]
    UndeclaredSource(String),
    #[error("source `{0}` sent a batch after its end")]
    BatchAfterEnd(String),
    #[error("every hit of source `{0}` needs a local_id")]
    MissingLocalId(String),
    #[error("more than {0} hits in one fusion stream")]
    TooManyHits(usize),
}

impl FusionError {
    /// The gRPC code at the service edge: every fusion error is the caller's bad input.
    pub fn code(&self) -> tonic::Code {
        tonic::Code::InvalidArgument
    }
}

impl From<FusionError> for tonic::Status {
    fn from(e: FusionError) -> Self {
        tonic::Status::new(e.code(), e.to_string())
    }
}
