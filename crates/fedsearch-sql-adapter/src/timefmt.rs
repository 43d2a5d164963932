//! The database's clock: its time zone and how it writes timestamps (`database.time_zone`,
//! `database.timestamp_format`), used both ways — to bind time parameters and to read values.
//!
//! - `timestamp_format: native` binds typed values: PostgreSQL a `timestamptz` (the session
//!   `TimeZone` is the configured zone, so `timestamp` columns compare in it), MySQL/MariaDB a
//!   `DATETIME` wall time in the zone (the session `time_zone` is the zone by name when the
//!   server has its time zone tables, else its offset at the statement's start), SQLite the
//!   text `YYYY-MM-DD HH:MM:SS` in the zone (SQLite has no time type).
//! - Every value is converted on its own with the zone's rules (chrono-tz), so values on both
//!   sides of a DST change each get their own offset — bound and read.
//! - Any other value is a strftime pattern: time parameters are bound as that text in the zone,
//!   and text values are read with it. The default, `%Y-%m-%dT%H:%M:%SZ` in UTC, is the sample
//!   schemas' fixed-width ISO text.
//!
//! Dates are bound as `YYYY-MM-DD` text (typed `DATE` with `native`). Read values keep their
//! instant for the hit date: a zone-less `TIMESTAMP`/`DATETIME` is read in the zone, a `DATE` is
//! midnight in the zone.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Offset, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;

/// The sample schemas' timestamp text: ISO-8601 UTC with a literal `Z`.
pub const DEFAULT_FORMAT: &str = "%Y-%m-%dT%H:%M:%SZ";
/// The value of `timestamp_format` that binds typed values.
pub const NATIVE: &str = "native";

/// How a source's database keeps time.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSettings {
    /// `None`: not configured (read as UTC; `doctor` warns when templates use time).
    pub zone: Option<Tz>,
    /// `None`: native typed values; otherwise a strftime pattern.
    pub format: Option<String>,
}

impl Default for TimeSettings {
    fn default() -> Self {
        Self { zone: None, format: Some(DEFAULT_FORMAT.to_string()) }
    }
}

impl TimeSettings {
    /// From the config keys; the error names the key.
    pub fn new(zone: Option<&str>, format: Option<&str>) -> Result<Self, String> {
        let zone = zone
            .map(|z| {
                z.parse::<Tz>().map_err(|_| {
                    format!("`database.time_zone`: unknown time zone `{z}` (an IANA name such as Asia/Shanghai or UTC)")
                })
            })
            .transpose()?;
        let format = match format.map(str::trim) {
            None => Some(DEFAULT_FORMAT.to_string()),
            Some(NATIVE) => None,
            Some(f) => {
                let items: Vec<_> = chrono::format::StrftimeItems::new(f).collect();
                if f.is_empty() || items.iter().any(|i| matches!(i, chrono::format::Item::Error)) {
                    return Err(format!("`database.timestamp_format`: `{f}` is not a strftime pattern (or `native`)"));
                }
                if !f.contains("%S") && !f.contains("%T") && !f.contains("%s") {
                    return Err(format!("`database.timestamp_format`: `{f}` must keep the seconds (%S, %T or %s)"));
                }
                Some(f.to_string())
            }
        };
        Ok(Self { zone, format })
    }

    pub fn tz(&self) -> Tz {
        self.zone.unwrap_or(Tz::UTC)
    }

    pub fn is_native(&self) -> bool {
        self.format.is_none()
    }

    /// An instant as the database's text (`format` in the zone).
    pub fn text_of(&self, t: DateTime<Utc>) -> String {
        let local = t.with_timezone(&self.tz());
        match &self.format {
            Some(f) => local.format(f).to_string(),
            None => local.format("%Y-%m-%d %H:%M:%S").to_string(),
        }
    }

    /// The wall time of an instant in the zone.
    pub fn wall_time(&self, t: DateTime<Utc>) -> NaiveDateTime {
        t.with_timezone(&self.tz()).naive_local()
    }

    /// A zone-less database time read in the zone (the earlier one in a DST fold).
    pub fn instant_of_wall_time(&self, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
        self.tz().from_local_datetime(&wall).earliest().map(|t| t.with_timezone(&Utc))
    }

    /// Midnight of a date in the zone.
    pub fn instant_of_date(&self, d: NaiveDate) -> Option<DateTime<Utc>> {
        self.instant_of_wall_time(d.and_hms_opt(0, 0, 0)?)
    }

    /// How an instant is shown in hits: RFC 3339 in the zone (`Z` for UTC).
    pub fn show(&self, t: DateTime<Utc>) -> String {
        t.with_timezone(&self.tz()).to_rfc3339_opts(SecondsFormat::Secs, true)
    }

    /// Whether the zone's offset changes within the year of `t` (daylight saving time).
    pub fn has_dst(&self, t: DateTime<Utc>) -> bool {
        let offset = |month| {
            let at = NaiveDate::from_ymd_opt(t.year(), month, 1).and_then(|d| d.and_hms_opt(0, 0, 0));
            at.map(|at| self.tz().offset_from_utc_datetime(&at).fix())
        };
        offset(1) != offset(7)
    }

    /// The zone's UTC offset at `t`, as MySQL's `time_zone` takes it (`+08:00`).
    pub fn offset_at(&self, t: DateTime<Utc>) -> String {
        let secs = t.with_timezone(&self.tz()).offset().fix().local_minus_utc();
        let sign = if secs < 0 { '-' } else { '+' };
        let secs = secs.abs();
        format!("{sign}{:02}:{:02}", secs / 3600, (secs % 3600) / 60)
    }

    /// A text value as an instant: RFC 3339, the configured format in the zone, then the common
    /// `YYYY-MM-DD HH:MM:SS`, `YYYY-MM-DDTHH:MM:SS` and `YYYY-MM-DD` in the zone.
    pub fn parse_text(&self, raw: &str) -> Option<DateTime<Utc>> {
        let s = raw.trim();
        if let Ok(t) = DateTime::parse_from_rfc3339(s) {
            return Some(t.with_timezone(&Utc));
        }
        if let Some(f) = &self.format {
            if let Ok(t) = DateTime::parse_from_str(s, f) {
                return Some(t.with_timezone(&Utc));
            }
            if let Ok(wall) = NaiveDateTime::parse_from_str(s, f) {
                // A format ending in a literal Z names UTC whatever the zone says.
                return if f.ends_with('Z') { Some(wall.and_utc()) } else { self.instant_of_wall_time(wall) };
            }
        }
        for f in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
            if let Ok(wall) = NaiveDateTime::parse_from_str(s, f) {
                return self.instant_of_wall_time(wall);
            }
        }
        NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().and_then(|d| self.instant_of_date(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn the_default_is_the_sample_schemas_iso_utc_text() {
        let t = TimeSettings::default();
        assert_eq!(t.text_of(at("2026-11-28T17:15:00+08:00")), "2026-11-28T09:15:00Z");
        assert_eq!(t.parse_text("2026-11-28T09:15:00Z"), Some(at("2026-11-28T09:15:00Z")));
    }

    #[test]
    fn a_local_text_format_binds_and_reads_in_the_zone() {
        let t = TimeSettings::new(Some("Asia/Shanghai"), Some("%Y-%m-%d %H:%M:%S")).unwrap();
        assert_eq!(t.text_of(at("2026-11-28T09:15:00Z")), "2026-11-28 17:15:00");
        assert_eq!(t.parse_text("2026-11-28 17:15:00"), Some(at("2026-11-28T09:15:00Z")));
        assert_eq!(t.parse_text("2026-11-28"), Some(at("2026-11-27T16:00:00Z")));
        assert_eq!(t.show(at("2026-11-28T09:15:00Z")), "2026-11-28T17:15:00+08:00");
        assert_eq!(t.offset_at(at("2026-11-28T09:15:00Z")), "+08:00");
        assert_eq!(
            TimeSettings::new(Some("America/New_York"), None).unwrap().offset_at(at("2026-07-01T00:00:00Z")),
            "-04:00"
        );
        let berlin = TimeSettings::new(Some("Europe/Berlin"), None).unwrap();
        assert_eq!(berlin.offset_at(at("2026-03-28T11:00:00Z")), "+01:00");
        assert_eq!(berlin.offset_at(at("2026-03-30T10:00:00Z")), "+02:00");
        assert!(berlin.has_dst(at("2026-12-01T00:00:00Z")));
        assert!(!t.has_dst(at("2026-12-01T00:00:00Z")), "Asia/Shanghai keeps +08:00");
    }

    #[test]
    fn bad_settings_name_the_key() {
        assert!(TimeSettings::new(Some("Mars/Olympus"), None).unwrap_err().contains("database.time_zone"));
        assert!(TimeSettings::new(None, Some("%Y-%m-%d")).unwrap_err().contains("database.timestamp_format"));
        assert!(TimeSettings::new(None, Some("%Q")).unwrap_err().contains("database.timestamp_format"));
        assert!(TimeSettings::new(None, Some("native")).unwrap().is_native());
    }
}
