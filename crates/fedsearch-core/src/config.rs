//! Loading typed service configuration from a YAML file plus environment overrides.
//!
//! Every service reads `--config FILE` and then environment variables named
//! `FEDSEARCH_<SECTION>__<KEY>`, where `__` separates nesting levels (e.g.
//! `FEDSEARCH_SERVER__LISTEN`, `FEDSEARCH_TELEMETRY__OTLP_ENDPOINT`). Variables without `__`
//! are not config keys. Config structs use `deny_unknown_fields`, so a typo is
//! a start-up error naming the key.

use std::path::Path;

use figment::{
    Figment,
    providers::{Env, Format, Yaml},
};
use serde::{Deserialize, de::DeserializeOwned};

/// The one environment prefix for every service.
pub const ENV_PREFIX: &str = "FEDSEARCH_";

/// Ends a `--check` run (every binary's: validate the config as start-up does, then exit): prints
/// that the config is valid and exits 0, or prints the problem and exits 2.
pub fn exit_after_check<E: std::fmt::Display>(service: &str, result: Result<(), E>) -> ! {
    match result {
        Ok(()) => {
            println!("{service}: the config is valid");
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!("{service}: invalid config: {e:#}");
            std::process::exit(2)
        }
    }
}

/// Loads `T` from `path` (if given) and `FEDSEARCH_*` environment variables, then validates it.
/// The error is one line naming the offending key.
pub fn load<T: DeserializeOwned + Validate>(path: Option<&Path>) -> Result<T, String> {
    let mut figment = Figment::new();
    if let Some(path) = path {
        if !path.exists() {
            return Err(format!("config file {} does not exist", path.display()));
        }
        figment = figment.merge(Yaml::file(path));
    }
    // Only `FEDSEARCH_<SECTION>__<KEY>` variables are config keys: every top-level key is a
    // section, so other `FEDSEARCH_*` variables (FEDSEARCH_CONFIG, the scripts' FEDSEARCH_RUN_DIR,
    // the CLI's FEDSEARCH_TOKEN) are never mistaken for one.
    figment = figment.merge(Env::prefixed(ENV_PREFIX).filter(|key| key.as_str().contains("__")).split("__"));
    let config: T = figment.extract().map_err(|e| one_line(&e))?;
    checked(config)
}

/// [`Validate::settle`], then [`Validate::validate`]; errors on one line.
fn checked<T: Validate>(mut config: T) -> Result<T, String> {
    let invalid = |e: String| format!("invalid config: {}", single_line(&e));
    config.settle().map_err(invalid)?;
    config.validate().map_err(invalid)?;
    Ok(config)
}

/// Parses `T` from a YAML string (tests and fixtures), then validates it.
pub fn from_yaml_str<T: DeserializeOwned + Validate>(yaml: &str) -> Result<T, String> {
    let config: T = Figment::new().merge(Yaml::string(yaml)).extract().map_err(|e| one_line(&e))?;
    checked(config)
}

/// Collapses a multi-line message (regex errors, ...) onto one line.
pub fn single_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn one_line(e: &figment::Error) -> String {
    let mut parts = Vec::new();
    for err in e.clone() {
        let path = err.path.join(".");
        if path.is_empty() {
            parts.push(format!("invalid config: {}", err.kind));
        } else {
            parts.push(format!("invalid config at `{path}`: {}", err.kind));
        }
    }
    single_line(&parts.join("; "))
}

/// Semantic checks a config needs beyond its types.
pub trait Validate {
    /// Runs first: folds an older spelling of a key into the one the code reads (e.g. a
    /// source's `tls:` into its `adapter.tls`), failing when both are set and disagree.
    fn settle(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Telemetry settings shared by every service.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// OTLP/gRPC collector endpoint, e.g. `http://127.0.0.1:4317`. Off when unset.
    #[serde(default)]
    pub otlp_endpoint: Option<String>,
    /// `json` (default) or `pretty` log lines.
    #[serde(default)]
    pub log_format: LogFormat,
    /// A tracing-subscriber filter, e.g. `info,fedsearch=debug`. `RUST_LOG` wins when set.
    #[serde(default)]
    pub log_filter: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Json,
    Pretty,
}

/// Parses durations written as `250ms`, `2s`, `1m` in config files.
pub mod duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, de::Error};

    pub fn parse(s: &str) -> Result<Duration, String> {
        let s = s.trim();
        let (num, unit) = s.find(|c: char| !c.is_ascii_digit()).map(|i| s.split_at(i)).unwrap_or((s, ""));
        let n: u64 = num.parse().map_err(|_| format!("`{s}` is not a duration like 250ms, 2s or 1m"))?;
        match unit {
            "ms" => Ok(Duration::from_millis(n)),
            "s" => Ok(Duration::from_secs(n)),
            "m" => Ok(Duration::from_secs(n * 60)),
            _ => Err(format!("`{s}` is not a duration like 250ms, 2s or 1m")),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        parse(&s).map_err(D::Error::custom)
    }

    /// For `Option<Duration>` fields.
    pub mod option {
        use super::*;

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            Option::<String>::deserialize(d)?.map(|s| parse(&s).map_err(D::Error::custom)).transpose()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        listen: String,
        #[serde(with = "duration")]
        timeout: std::time::Duration,
    }

    impl Validate for Sample {
        fn validate(&self) -> Result<(), String> {
            if self.timeout.is_zero() { Err("`timeout` must be positive".into()) } else { Ok(()) }
        }
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = from_yaml_str::<Sample>("listen: a\ntimeout: 1s\nlisten_typo: b\n").unwrap_err();
        assert!(err.contains("listen_typo"), "{err}");
        let err = from_yaml_str::<Sample>("listen: a\ntimeout: soon\n").unwrap_err();
        assert!(err.contains("timeout"), "{err}");
        let err = from_yaml_str::<Sample>("listen: a\ntimeout: 0s\n").unwrap_err();
        assert!(err.contains("must be positive"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn only_nested_fedsearch_variables_are_config_keys() {
        #[allow(clippy::result_large_err)]
        figment::Jail::expect_with(|jail| {
            jail.create_file("c.yaml", "listen: a\ntimeout: 1s\n")?;
            jail.set_env("FEDSEARCH_RUN_DIR", "/tmp/x");
            jail.set_env("FEDSEARCH_TOKEN", "secret-token");
            let c: Sample = load(Some(Path::new("c.yaml"))).map_err(figment::Error::from)?;
            assert_eq!(c.listen, "a");
            Ok(())
        });
    }

    #[test]
    fn durations_parse() {
        assert_eq!(duration::parse("250ms").unwrap(), std::time::Duration::from_millis(250));
        assert_eq!(duration::parse("2s").unwrap(), std::time::Duration::from_secs(2));
        assert!(duration::parse("2h").is_err());
    }
}
