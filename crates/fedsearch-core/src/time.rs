//! Conversions between protobuf timestamps/durations and std/chrono types.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use prost_types::Timestamp;

pub fn to_timestamp(t: SystemTime) -> Timestamp {
    Timestamp::from(t)
}

pub fn from_chrono(t: DateTime<Utc>) -> Timestamp {
    Timestamp { seconds: t.timestamp(), nanos: t.timestamp_subsec_nanos() as i32 }
}

pub fn to_chrono(t: &Timestamp) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(t.seconds, t.nanos.max(0) as u32)
}

/// Time left until a protobuf deadline (zero if passed, `None` if unset or invalid).
pub fn remaining(deadline: Option<&Timestamp>) -> Option<Duration> {
    let deadline = SystemTime::try_from(*deadline?).ok()?;
    Some(deadline.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// Parses an RFC 3339 / ISO-8601 string into a protobuf timestamp.
pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| from_chrono(t.with_timezone(&Utc)))
}

/// Window starts before this instant (2001-09-09) count as the epoch: the router reads an
/// open-ended past ("more than a week ago", 一个多月前) as a window from 1970-01-01 in the user's
/// zone.
pub const OPEN_PAST_BEFORE_SECONDS: i64 = 1_000_000_000;

/// Whether a window starting at `from` is an open-ended past the router read from a question
/// (see [`OPEN_PAST_BEFORE_SECONDS`]); adapters list its documents as they list a bounded
/// window's.
pub fn starts_at_epoch(from: &Timestamp) -> bool {
    from.seconds < OPEN_PAST_BEFORE_SECONDS
}
