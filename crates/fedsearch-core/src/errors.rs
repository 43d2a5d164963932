//! Structured gRPC errors: every error a fedsearch service returns carries `google.rpc.Status`
//! details (the `grpc-status-details-bin` trailer) — an `ErrorInfo` with a stable
//! [`Reason`], domain `fedsearch`, and the trace id in its metadata; a `BadRequest` with
//! the offending field for INVALID_ARGUMENT; a `RetryInfo` for RESOURCE_EXHAUSTED.
//!
//! A program branches on the reason, never on the message text (which may change).

use std::{collections::HashMap, time::Duration};

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// The `ErrorInfo.domain` of every fedsearch error.
pub const DOMAIN: &str = "fedsearch";

/// Stable machine-readable reasons (`ErrorInfo.reason`). Never renamed; only added to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// No `authorization: Bearer` token.
    TokenMissing,
    /// The token's `exp` is in the past.
    TokenExpired,
    /// Bad signature, bad claims, not a JWT.
    TokenInvalid,
    /// A field of the request is invalid (see the `BadRequest` detail).
    InvalidArgument,
    /// The query is longer than `limits.max_query_chars`.
    QueryTooLong,
    /// A source that does not exist, or that the user may not use (indistinguishable).
    UnknownSource,
    /// The user may use none of the sources asked for.
    SourceNotPermitted,
    /// The source needs a credential of the user that is not there.
    NoSourceCredential,
    /// The document does not exist, or the user may not read it.
    DocumentNotFound,
    /// This user called faster than their rate, or has too many calls in flight.
    RateLimited,
    /// The service as a whole is at capacity.
    Overloaded,
    /// A source or the backend could not be reached.
    SourceUnavailable,
    /// The deadline passed.
    DeadlineExceeded,
    /// A call between the services carries no router-signed identity assertion.
    AssertionMissing,
    /// The identity assertion is not valid: signature, issuer, audience, sub-query or expiry.
    AssertionInvalid,
    /// The identity assertion was already used (replayed).
    AssertionReplayed,
    /// Anything else; the message is safe, the details are in the service's log.
    Internal,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::TokenMissing => "TOKEN_MISSING",
            Reason::TokenExpired => "TOKEN_EXPIRED",
            Reason::TokenInvalid => "TOKEN_INVALID",
            Reason::InvalidArgument => "INVALID_ARGUMENT",
            Reason::QueryTooLong => "QUERY_TOO_LONG",
            Reason::UnknownSource => "UNKNOWN_SOURCE",
            Reason::SourceNotPermitted => "SOURCE_NOT_PERMITTED",
            Reason::NoSourceCredential => "NO_SOURCE_CREDENTIAL",
            Reason::DocumentNotFound => "DOCUMENT_NOT_FOUND",
            Reason::RateLimited => "RATE_LIMITED",
            Reason::Overloaded => "OVERLOADED",
            Reason::SourceUnavailable => "SOURCE_UNAVAILABLE",
            Reason::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Reason::AssertionMissing => "ASSERTION_MISSING",
            Reason::AssertionInvalid => "ASSERTION_INVALID",
            Reason::AssertionReplayed => "ASSERTION_REPLAYED",
            Reason::Internal => "INTERNAL",
        }
    }

    /// The reason a plain status of `code` gets when nothing more specific is known.
    pub fn for_code(code: Code) -> Reason {
        match code {
            Code::InvalidArgument | Code::OutOfRange | Code::FailedPrecondition => Reason::InvalidArgument,
            Code::Unauthenticated => Reason::TokenInvalid,
            Code::PermissionDenied => Reason::SourceNotPermitted,
            Code::NotFound => Reason::DocumentNotFound,
            Code::ResourceExhausted => Reason::Overloaded,
            Code::Unavailable => Reason::SourceUnavailable,
            Code::DeadlineExceeded | Code::Cancelled => Reason::DeadlineExceeded,
            _ => Reason::Internal,
        }
    }
}

/// A status with an `ErrorInfo` of `reason` (and the current trace id in its metadata).
pub fn status(code: Code, reason: Reason, message: impl Into<String>) -> Status {
    build(code, reason, message.into(), None, None, HashMap::new())
}

/// INVALID_ARGUMENT with a `BadRequest` field violation for `field` and an `ErrorInfo`.
pub fn invalid_field(reason: Reason, field: &str, message: impl Into<String>) -> Status {
    let message = message.into();
    build(Code::InvalidArgument, reason, message.clone(), Some((field, message)), None, HashMap::new())
}

/// RESOURCE_EXHAUSTED with a `RetryInfo` of `retry_in`.
pub fn exhausted(reason: Reason, message: impl Into<String>, retry_in: Duration) -> Status {
    build(Code::ResourceExhausted, reason, message.into(), None, Some(retry_in), HashMap::new())
}

/// `status` with extra `ErrorInfo.metadata` entries (safe values only: source names, limits).
pub fn with_metadata(code: Code, reason: Reason, message: impl Into<String>, metadata: &[(&str, String)]) -> Status {
    let md = metadata.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    build(code, reason, message.into(), None, None, md)
}

fn build(
    code: Code,
    reason: Reason,
    message: String,
    violation: Option<(&str, String)>,
    retry: Option<Duration>,
    mut metadata: HashMap<String, String>,
) -> Status {
    // The details travel in a header too: a message that echoes a huge input stays short.
    let message = cut(&message, MAX_DETAIL_BYTES);
    let violation = violation.map(|(field, description)| (field, cut(&description, MAX_DETAIL_BYTES)));
    let trace_id = crate::propagation::current_trace_id();
    if !trace_id.is_empty() {
        metadata.insert("trace_id".into(), trace_id);
    }
    let mut details = ErrorDetails::with_error_info(reason.as_str(), DOMAIN, metadata);
    if let Some((field, description)) = violation {
        details.add_bad_request_violation(field, description);
    }
    if let Some(retry) = retry {
        details.set_retry_info(Some(retry));
    }
    Status::with_error_details(code, message, details)
}

/// The longest message or description put into a status with details (the details are
/// carried in the `grpc-status-details-bin` header, which must stay small).
pub const MAX_DETAIL_BYTES: usize = 512;

/// `text` cut to at most `max` bytes at a character boundary, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    format!("{}…", &text[..text.floor_char_boundary(max)])
}

/// Adds details to a status that has none (a plain `Status::invalid_argument(..)` from code
/// that predates this module): an `ErrorInfo` of [`Reason::for_code`], keeping code, message
/// and metadata. Statuses that carry details already, and OK, pass unchanged.
pub fn ensure_details(status: Status) -> Status {
    if status.code() == Code::Ok || !status.details().is_empty() {
        return status;
    }
    let reason = Reason::for_code(status.code());
    let mut with = if status.code() == Code::InvalidArgument {
        let field = field_of(status.message());
        let violation = field.map(|f| (f, status.message().to_string()));
        build(status.code(), reason, status.message().to_string(), violation, None, HashMap::new())
    } else {
        build(status.code(), reason, status.message().to_string(), None, None, HashMap::new())
    };
    for kv in status.metadata().iter() {
        if let tonic::metadata::KeyAndValueRef::Ascii(k, v) = kv {
            with.metadata_mut().insert(k.clone(), v.clone());
        }
    }
    with
}

/// Request fields (top-level names of the public API's messages) an INVALID_ARGUMENT message
/// may start with.
const FIELDS: &[&str] = &[
    "query",
    "top_k",
    "filters",
    "context",
    "timeout",
    "fusion",
    "as_of",
    "time_zone",
    "sources",
    "source_params",
    "source_credentials",
    "full_text_ref",
    "hit_id",
    "hit_ids",
    "rating",
    "label",
    "comment",
    "trace_id",
];

/// The request field an INVALID_ARGUMENT message names by convention: its first word when it
/// is a field path of the API (`filters.time_range.from is after ...`, `top_k must be ...`).
pub fn field_of(message: &str) -> Option<&str> {
    let word = message.split([' ', ':']).next()?;
    let word = word.split('[').next()?;
    let top = word.split('.').next()?;
    FIELDS.contains(&top).then_some(word)
}

/// UNAUTHENTICATED for a token that failed verification, with TOKEN_MISSING, TOKEN_EXPIRED or
/// TOKEN_INVALID.
pub fn auth(e: &crate::AuthError) -> Status {
    use crate::AuthError::*;
    let reason = match e {
        Missing => Reason::TokenMissing,
        Expired => Reason::TokenExpired,
        Malformed | BadSignature | Invalid(_) | NotYetValid | Ambiguous => Reason::TokenInvalid,
    };
    status(Code::Unauthenticated, reason, e.to_string())
}

/// The `ErrorInfo.reason` of a status, when it has one (tests, clients).
pub fn reason_of(status: &Status) -> Option<String> {
    status.get_details_error_info().map(|i| i.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_round_trip_through_the_status() {
        let s = invalid_field(Reason::QueryTooLong, "query", "query is 5000 characters; the limit is 2000");
        assert_eq!(s.code(), Code::InvalidArgument);
        assert_eq!(reason_of(&s).as_deref(), Some("QUERY_TOO_LONG"));
        let bad = s.get_details_bad_request().unwrap();
        assert_eq!(bad.field_violations[0].field, "query");
        let info = s.get_details_error_info().unwrap();
        assert_eq!(info.domain, "fedsearch");
    }

    #[test]
    fn plain_statuses_get_a_reason_and_keep_their_metadata() {
        let mut plain = Status::invalid_argument("top_k must be within 1..=50 (0 means 10)");
        plain.metadata_mut().insert("retry-after-ms", "100".parse().unwrap());
        let s = ensure_details(plain);
        assert_eq!(reason_of(&s).as_deref(), Some("INVALID_ARGUMENT"));
        assert_eq!(s.get_details_bad_request().unwrap().field_violations[0].field, "top_k");
        assert_eq!(s.metadata().get("retry-after-ms").unwrap(), "100");
        let already = status(Code::NotFound, Reason::UnknownSource, "unknown source `x`");
        assert_eq!(reason_of(&ensure_details(already)).as_deref(), Some("UNKNOWN_SOURCE"));
    }

    #[test]
    fn huge_messages_are_cut_before_they_become_details() {
        let s = invalid_field(Reason::UnknownSource, "sources", format!("unknown source `{}`", "源".repeat(5000)));
        assert!(s.message().len() <= MAX_DETAIL_BYTES + 3, "{}", s.message().len());
        assert!(s.details().len() < 2 * MAX_DETAIL_BYTES + 200, "{}", s.details().len());
    }

    #[test]
    fn field_names_come_only_from_field_like_first_words() {
        assert_eq!(field_of("filters.time_range.from is after filters.time_range.to"), Some("filters.time_range.from"));
        assert_eq!(field_of("fusion.weights[kb] must be a finite number >= 0"), Some("fusion.weights"));
        assert_eq!(field_of("the request is not a valid protobuf message"), None);
        assert_eq!(field_of("Query is empty"), None);
    }
}
