//! The gRPC contracts of fedsearch: public API, adapter contract, fusion contract.
//!
//! Generated from the top-level `proto/` folder by `build.rs` (protox, no protoc needed).
//! [`FILE_DESCRIPTOR_SET`] feeds gRPC reflection on every service.

#![allow(clippy::large_enum_variant, clippy::doc_lazy_continuation)]

// The generated module tree mirrors the proto packages (`fedsearch::types::v1`, ...).
include!(concat!(env!("OUT_DIR"), "/_includes.rs"));

/// The adapter contract (`fedsearch.adapter.v1.SourceAdapter`).
pub use fedsearch::adapter::v1 as adapter;
/// The fusion contract (`fedsearch.fusion.v1.Fusion`).
pub use fedsearch::fusion::v1 as fusion;
/// Types shared by every contract (`fedsearch.types.v1`).
pub use fedsearch::types::v1 as types;
/// The public API (`fedsearch.v1.FederatedSearch`).
pub use fedsearch::v1 as api;

impl std::fmt::Debug for types::Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl types::SourceState {
    /// The short, lower-case name used in logs, metrics and the CLI.
    pub fn label(self) -> &'static str {
        use types::SourceState;
        match self {
            SourceState::Unspecified => "unspecified",
            SourceState::Ok => "ok",
            SourceState::Timeout => "timeout",
            SourceState::Error => "error",
            SourceState::CircuitOpen => "circuit_open",
            SourceState::Skipped => "skipped",
            SourceState::Denied => "denied",
            SourceState::Unavailable => "unavailable",
        }
    }
}

/// Encoded `FileDescriptorSet` of every contract, for tonic-reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fedsearch_descriptor.bin"));

#[cfg(test)]
mod tests {
    use super::types::{Secret, UserContext};

    #[test]
    fn secrets_are_redacted_in_debug_output() {
        let user = UserContext {
            subject: "alice".into(),
            delegated_credential: Some(Secret { value: "hunter2".into() }),
            ..Default::default()
        };
        let shown = format!("{user:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
