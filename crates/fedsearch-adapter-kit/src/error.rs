//! The errors an adapter reports, and how each maps to a per-source state and a gRPC code.

use fedsearch_proto::types::SourceState;

/// An adapter failure. Messages must be safe to show to the caller: no credentials, hosts,
/// SQL text or backend stack traces.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum AdapterError {
    /// A bad parameter or filter; names it.
    #[error("{0}")]
    InvalidArgument(String),
    /// The user has no credential for this source.
    #[error("{0}")]
    Unauthenticated(String),
    /// The source refused this user.
    #[error("{0}")]
    PermissionDenied(String),
    #[error("{0}")]
    NotFound(String),
    /// The backend could not be reached.
    #[error("{0}")]
    Unavailable(String),
    /// The backend is reachable but not in a usable state (index missing, mapping error).
    #[error("{0}")]
    FailedPrecondition(String),
    #[error("deadline exceeded")]
    DeadlineExceeded,
    /// Too much work queued.
    #[error("{0}")]
    ResourceExhausted(String),
    /// Anything else; the message is generic.
    #[error("{0}")]
    Internal(String),
}

impl AdapterError {
    /// The per-source state this error produces in a search.
    pub fn state(&self) -> SourceState {
        match self {
            Self::Unauthenticated(_) | Self::PermissionDenied(_) => SourceState::Denied,
            Self::Unavailable(_) => SourceState::Unavailable,
            Self::DeadlineExceeded => SourceState::Timeout,
            Self::InvalidArgument(_)
            | Self::NotFound(_)
            | Self::FailedPrecondition(_)
            | Self::ResourceExhausted(_)
            | Self::Internal(_) => SourceState::Error,
        }
    }

    pub fn code(&self) -> tonic::Code {
        match self {
            Self::InvalidArgument(_) => tonic::Code::InvalidArgument,
            Self::Unauthenticated(_) => tonic::Code::Unauthenticated,
            Self::PermissionDenied(_) => tonic::Code::PermissionDenied,
            Self::NotFound(_) => tonic::Code::NotFound,
            Self::Unavailable(_) => tonic::Code::Unavailable,
            Self::FailedPrecondition(_) => tonic::Code::FailedPrecondition,
            Self::DeadlineExceeded => tonic::Code::DeadlineExceeded,
            Self::ResourceExhausted(_) => tonic::Code::ResourceExhausted,
            Self::Internal(_) => tonic::Code::Internal,
        }
    }
}

pub use fedsearch_core::grpc::code_name;

impl AdapterError {
    /// The stable `ErrorInfo.reason` of this error.
    pub fn reason(&self) -> fedsearch_core::errors::Reason {
        use fedsearch_core::errors::Reason;
        match self {
            Self::InvalidArgument(_) | Self::FailedPrecondition(_) => Reason::InvalidArgument,
            Self::Unauthenticated(_) => Reason::NoSourceCredential,
            Self::PermissionDenied(_) => Reason::SourceNotPermitted,
            Self::NotFound(_) => Reason::DocumentNotFound,
            Self::Unavailable(_) => Reason::SourceUnavailable,
            Self::DeadlineExceeded => Reason::DeadlineExceeded,
            Self::ResourceExhausted(_) => Reason::Overloaded,
            Self::Internal(_) => Reason::Internal,
        }
    }
}

/// An adapter error as a gRPC status with `google.rpc` details (see
/// [`fedsearch_core::errors`]).
impl From<AdapterError> for tonic::Status {
    fn from(e: AdapterError) -> Self {
        fedsearch_core::errors::status(e.code(), e.reason(), e.to_string())
    }
}
