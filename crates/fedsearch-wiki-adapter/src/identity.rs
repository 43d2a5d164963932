//! The end user's own wiki credential for one request: taken from the sub-query (`delegated`)
//! or looked up by the verified subject in a secrets file (`mapped`). There is no shared or
//! service account: a user without a credential gets `Unauthenticated` (state DENIED).
//! Credentials are never logged, never put into error messages and never returned.

use std::{collections::HashMap, path::Path};

use fedsearch_adapter_kit::{AdapterError, UserContext};
use serde::Deserialize;

use crate::config::IdentityMode;

/// The message every "no credential" case returns.
pub const NO_CREDENTIAL: &str = "no wiki credential for this user";

/// How a request authenticates. `Debug` is redacted.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// HTTP Basic: DokuWiki login + password, or Confluence Cloud email + API token.
    Basic { username: String, password: String },
    /// `Authorization: Bearer`: a Confluence Data Center personal access token.
    Bearer(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Basic { .. } => f.write_str("Credential::Basic(<redacted>)"),
            Credential::Bearer(_) => f.write_str("Credential::Bearer(<redacted>)"),
        }
    }
}

impl Credential {
    /// Adds the `Authorization` header to a request.
    pub fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Credential::Basic { username, password } => request.basic_auth(username, Some(password)),
            Credential::Bearer(token) => request.bearer_auth(token),
        }
    }
}

/// What form of credential a connector takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    /// `username:password` (DokuWiki) or `email:api_token` (Confluence Cloud).
    Basic,
    /// A bare token (Confluence Data Center PAT).
    Bearer,
}

/// One entry of a secrets file.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct SecretEntry {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    token: Option<String>,
}

impl SecretEntry {
    fn credential(&self) -> Option<Credential> {
        match (&self.username, &self.password, &self.token) {
            (Some(u), Some(p), None) if !u.is_empty() && !p.is_empty() => {
                Some(Credential::Basic { username: u.clone(), password: p.clone() })
            }
            (None, None, Some(t)) if !t.is_empty() => Some(Credential::Bearer(t.clone())),
            _ => None,
        }
    }
}

/// Resolves the credential of the user a request runs for.
#[derive(Clone)]
pub enum Identity {
    Delegated { kind: CredentialKind },
    Mapped { by_subject: HashMap<String, Credential> },
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Delegated { kind } => write!(f, "Identity::Delegated({kind:?})"),
            Identity::Mapped { by_subject } => write!(f, "Identity::Mapped({} subjects)", by_subject.len()),
        }
    }
}

/// Parses a secrets file: YAML mapping subject → `{username, password}` or `{token}`. The
/// error never quotes the file's values.
pub fn parse_secrets(yaml: &str, origin: &str) -> Result<HashMap<String, Credential>, String> {
    let entries: HashMap<String, SecretEntry> = match serde_yaml::from_str::<Option<_>>(yaml) {
        Ok(e) => e.unwrap_or_default(),
        Err(e) => {
            let at = e.location().map(|l| format!(" (line {})", l.line())).unwrap_or_default();
            return Err(format!(
                "secrets file {origin} is not a mapping of subject -> {{username, password}} or {{token}}{at}"
            ));
        }
    };
    let mut out = HashMap::with_capacity(entries.len());
    for (subject, entry) in entries {
        let cred = entry.credential().ok_or_else(|| {
            format!("secrets file {origin}: entry `{subject}` needs `username` and `password`, or only `token`")
        })?;
        out.insert(subject, cred);
    }
    Ok(out)
}

impl Identity {
    /// Builds the resolver for a source. `secrets_file` is read once, here.
    pub fn load(mode: IdentityMode, kind: CredentialKind, secrets_file: Option<&Path>) -> Result<Self, String> {
        match mode {
            IdentityMode::Delegated => Ok(Identity::Delegated { kind }),
            IdentityMode::Mapped => {
                let path = secrets_file.ok_or("mapped identity needs a secrets file")?;
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read secrets file {}: {}", path.display(), e.kind()))?;
                let by_subject = parse_secrets(&text, &path.display().to_string())?;
                Ok(Identity::Mapped { by_subject })
            }
        }
    }

    /// The credential for `user`, or `Unauthenticated` when there is none.
    pub fn credential_for(&self, user: Option<&UserContext>) -> Result<Credential, AdapterError> {
        let none = || AdapterError::Unauthenticated(NO_CREDENTIAL.into());
        let user = user.filter(|u| !u.subject.is_empty()).ok_or_else(none)?;
        match self {
            Identity::Mapped { by_subject } => by_subject.get(&user.subject).cloned().ok_or_else(none),
            Identity::Delegated { kind } => {
                let value = user.delegated_credential.as_ref().map(|s| s.value.as_str()).unwrap_or("");
                if value.trim().is_empty() {
                    return Err(none());
                }
                match kind {
                    CredentialKind::Bearer => Ok(Credential::Bearer(value.trim().to_string())),
                    CredentialKind::Basic => match value.split_once(':') {
                        Some((u, p)) if !u.is_empty() && !p.is_empty() => {
                            Ok(Credential::Basic { username: u.to_string(), password: p.to_string() })
                        }
                        _ => Err(AdapterError::Unauthenticated(
                            "the delegated wiki credential must have the form username:password".into(),
                        )),
                    },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use fedsearch_proto::types::Secret;

    use super::*;

    fn user(subject: &str, delegated: Option<&str>) -> UserContext {
        UserContext {
            subject: subject.into(),
            delegated_credential: delegated.map(|v| Secret { value: v.into() }),
            ..Default::default()
        }
    }

    const SECRETS: &str =
        "# comment\nalice:\n  username: \"alice\"\n  password: \"pw-a\"\ncarol.x:\n  token: \"tok\"\n";

    #[test]
    fn mapped_identity_finds_the_subject_and_denies_the_rest() {
        let id = Identity::Mapped { by_subject: parse_secrets(SECRETS, "t").unwrap() };
        assert_eq!(
            id.credential_for(Some(&user("alice", None))).unwrap(),
            Credential::Basic { username: "alice".into(), password: "pw-a".into() }
        );
        assert_eq!(id.credential_for(Some(&user("carol.x", None))).unwrap(), Credential::Bearer("tok".into()));
        // a delegated value does not override the mapping, and a stranger gets nothing
        assert_eq!(
            id.credential_for(Some(&user("eve", Some("alice:pw-a")))),
            Err(AdapterError::Unauthenticated(NO_CREDENTIAL.into()))
        );
        assert_eq!(id.credential_for(None), Err(AdapterError::Unauthenticated(NO_CREDENTIAL.into())));
    }

    #[test]
    fn delegated_identity_uses_the_callers_credential_only() {
        let basic = Identity::Delegated { kind: CredentialKind::Basic };
        assert_eq!(
            basic.credential_for(Some(&user("bob", Some("bob:p:w")))).unwrap(),
            Credential::Basic { username: "bob".into(), password: "p:w".into() }
        );
        assert_eq!(
            basic.credential_for(Some(&user("bob", None))),
            Err(AdapterError::Unauthenticated(NO_CREDENTIAL.into()))
        );
        let err = basic.credential_for(Some(&user("bob", Some("justatoken")))).unwrap_err();
        assert!(!err.to_string().contains("justatoken"), "{err}");
        let bearer = Identity::Delegated { kind: CredentialKind::Bearer };
        assert_eq!(bearer.credential_for(Some(&user("bob", Some(" pat ")))).unwrap(), Credential::Bearer("pat".into()));
    }

    #[test]
    fn secrets_never_show_in_debug_or_errors() {
        let creds = parse_secrets(SECRETS, "t").unwrap();
        let shown = format!("{:?} {:?}", creds, Identity::Mapped { by_subject: creds.clone() });
        assert!(!shown.contains("pw-a") && !shown.contains("tok\""), "{shown}");
        let err = parse_secrets("alice:\n  username: a\n  password: 12345\n  pasword: sekrit\n", "f").unwrap_err();
        assert!(!err.contains("sekrit") && !err.contains("12345") && err.contains("line"), "{err}");
        let err = parse_secrets("alice:\n  username: a\n", "f").unwrap_err();
        assert!(err.contains("alice"), "{err}");
        assert!(parse_secrets("", "f").unwrap().is_empty());
    }
}
