//! Secrets in configuration: one shape for every service.
//!
//! A secret (a password, an API key, a DSN carrying a password, a secrets-file path) is named in
//! YAML by where it comes from, never by its value:
//!
//! ```yaml
//! password: { env: ES_PASSWORD }          # an environment variable
//! password: { file: /run/secrets/es }     # a file (a trailing newline is trimmed)
//! ```
//!
//! [`ConfigValue`] is a value that may also be written inline (`url: "sqlite::memory:"`), for
//! demo values and for keys that took a plain string before; the older `<key>_env: NAME` form of
//! those keys is still read by [`resolve_with_env`]. What is read is a [`Secret`], whose `Debug`
//! never shows the value, so a config or an error printed with `{:?}` leaks nothing.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A secret value: its `Debug` is `<redacted>`; [`Secret::expose`] is the only way to the value.
#[derive(Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that hands it to a backend client.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where a secret comes from: `{ env: NAME }` or `{ file: PATH }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum SecretRef {
    /// An environment variable.
    Env(String),
    /// A file; a trailing newline is trimmed.
    File(PathBuf),
}

impl SecretRef {
    /// Reads the secret now. An unset variable, an unreadable file or an empty value is an error
    /// naming `key` and where it looked, never the value.
    pub fn resolve(&self, key: &str) -> Result<Secret, String> {
        let value = match self {
            Self::Env(name) => {
                std::env::var(name).map_err(|_| format!("`{key}`: environment variable {name} is not set"))?
            }
            Self::File(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("`{key}`: cannot read secret file {}: {e}", path.display()))?
                .trim_end_matches(['\r', '\n'])
                .to_string(),
        };
        if value.trim().is_empty() {
            return Err(format!("`{key}`: the secret is empty"));
        }
        Ok(Secret(value))
    }
}

/// A value written inline, or a [`SecretRef`]: `url: "http://…"`, `url: { env: WIKI_URL }`,
/// `url: { file: /run/secrets/dsn }`. An inline value is redacted in `Debug` too.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ConfigValue {
    Inline(Secret),
    From(SecretRef),
}

impl From<&str> for ConfigValue {
    fn from(value: &str) -> Self {
        Self::Inline(Secret::new(value))
    }
}

impl From<String> for ConfigValue {
    fn from(value: String) -> Self {
        Self::Inline(Secret::new(value))
    }
}

impl ConfigValue {
    pub fn resolve(&self, key: &str) -> Result<Secret, String> {
        match self {
            Self::Inline(s) if s.0.trim().is_empty() => Err(format!("`{key}` must not be empty")),
            Self::Inline(s) => Ok(s.clone()),
            Self::From(r) => r.resolve(key),
        }
    }

    /// The inline value, if it is one (for checks such as a URL's scheme at validation time).
    pub fn inline(&self) -> Option<&str> {
        match self {
            Self::Inline(s) => Some(s.expose()),
            Self::From(_) => None,
        }
    }
}

/// Checks that exactly one of `key` and the older `key_env` is set.
pub fn check_one_with_env(value: &Option<ConfigValue>, env: &Option<String>, key: &str) -> Result<(), String> {
    match (value, env) {
        (Some(_), Some(_)) => Err(format!("set only one of `{key}` and `{key}_env`")),
        (None, None) => Err(format!("`{key}` or `{key}_env` is required")),
        (Some(ConfigValue::Inline(v)), None) if v.0.trim().is_empty() => Err(format!("`{key}` must not be empty")),
        (None, Some(name)) if name.trim().is_empty() => Err(format!("`{key}_env` must not be empty")),
        _ => Ok(()),
    }
}

/// Resolves `key` (inline, `{env}` or `{file}`), else the environment variable the older
/// `key_env` names.
pub fn resolve_with_env(value: &Option<ConfigValue>, env: &Option<String>, key: &str) -> Result<Secret, String> {
    if let Some(v) = value {
        return v.resolve(key);
    }
    let name = env.as_deref().ok_or_else(|| format!("`{key}` or `{key}_env` is required"))?;
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => Ok(Secret(v)),
        _ => Err(format!("environment variable {name} (named by `{key}_env`) is not set")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Sample {
        password: SecretRef,
        url: Option<ConfigValue>,
    }

    fn parse(yaml: &str) -> Result<Sample, String> {
        use figment::providers::Format;
        figment::Figment::new().merge(figment::providers::Yaml::string(yaml)).extract().map_err(|e| e.to_string())
    }

    #[test]
    fn secrets_come_from_env_or_file_and_never_show_in_debug() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "hunter2-from-file\n").unwrap();
        let s = parse(&format!("password: {{ file: {} }}\nurl: \"postgres://u:hunter2-inline@h/db\"", file.display()))
            .unwrap();
        assert_eq!(s.password.resolve("password").unwrap().expose(), "hunter2-from-file");
        let inline = s.url.as_ref().unwrap().resolve("url").unwrap();
        assert_eq!(inline.expose(), "postgres://u:hunter2-inline@h/db");
        let shown = format!("{s:?} {inline:?} {:?}", s.password.resolve("password").unwrap());
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");

        let s = parse("password: { env: FEDSEARCH_SECRET_TEST_SURELY_UNSET }\nurl: { env: PATH }").unwrap();
        let err = s.password.resolve("cluster.auth.basic.password").unwrap_err();
        assert!(err.contains("cluster.auth.basic.password") && err.contains("FEDSEARCH_SECRET_TEST_SURELY_UNSET"));
        assert_eq!(s.url.unwrap().resolve("url").unwrap().expose(), std::env::var("PATH").unwrap());
        assert!(parse("password: hunter2").is_err(), "a secret is never inline");
    }

    #[test]
    fn the_older_key_env_form_still_resolves() {
        let value = Some(ConfigValue::Inline(Secret::new("v")));
        assert_eq!(resolve_with_env(&value, &None, "url").unwrap().expose(), "v");
        let unset = Some("FEDSEARCH_SECRET_TEST_SURELY_UNSET".to_string());
        let err = resolve_with_env(&None, &unset, "url").unwrap_err();
        assert!(err.contains("FEDSEARCH_SECRET_TEST_SURELY_UNSET") && err.contains("url_env"), "{err}");
        assert_eq!(
            resolve_with_env(&None, &Some("PATH".into()), "url").unwrap().expose(),
            std::env::var("PATH").unwrap()
        );
        assert!(check_one_with_env(&value, &unset, "url").unwrap_err().contains("only one"));
        assert!(check_one_with_env(&None, &None, "url").unwrap_err().contains("required"));
        assert!(check_one_with_env(&Some(ConfigValue::Inline(Secret::new(" "))), &None, "url").is_err());
    }
}
