//! The wiki-adapter's self-check (`fedsearch doctor`, [`fedsearch_adapter_kit::diagnostics`]).
//!
//! The adapter has no service account: every call is made as the end user. So the check is
//! per source: the wiki answers its remote API, and — with mapped identity — every account of the
//! secrets file is accepted by the wiki (`dokuwiki.getVersion` as that account), because an
//! account the wiki refuses makes that user's searches DENIED. Findings name subjects, never
//! usernames or passwords.

use std::time::Duration;

use fedsearch_adapter_kit::{
    AdapterError,
    diagnostics::{Diagnostic, error, ok, warning},
};

use crate::{
    identity::{Credential, Identity},
    source::{Connector, Source},
};

/// At most this many mapped accounts are tried per source (each is one small call).
const MAX_ACCOUNTS: usize = 200;

/// Checks one source.
pub async fn diagnose_source(source: &Source) -> Vec<Diagnostic> {
    let name = source.name.as_str();
    let timeout = source.request_timeout.min(Duration::from_secs(5));
    let Connector::DokuWiki(wiki) = &source.connector else {
        return vec![warning(name, "self-check", "no self-check for Confluence sources yet; only the probe tells", "")];
    };
    let mut out = Vec::new();
    match source.identity.as_ref() {
        Identity::Delegated { .. } => {
            // Without a credential DokuWiki answers 401: that is an answer, so the wiki is there.
            let anonymous = Credential::Bearer(String::new());
            match wiki.call(&anonymous, "dokuwiki.getVersion", &[], timeout).await {
                Ok(_) | Err(AdapterError::Unauthenticated(_)) | Err(AdapterError::PermissionDenied(_)) => {
                    out.push(ok(name, "wiki", "the wiki's remote API answers (identity is delegated by each caller)"))
                }
                Err(e) => out.push(unreachable(name, &e)),
            }
        }
        Identity::Mapped { by_subject } => {
            if by_subject.is_empty() {
                out.push(error(
                    name,
                    "credentials",
                    "the secrets file maps no subject to a wiki account: every search is DENIED",
                    "add `<subject>: {username, password}` entries to the secrets file",
                ));
                return out;
            }
            let mut subjects: Vec<&String> = by_subject.keys().collect();
            subjects.sort();
            let mut accepted = 0;
            for subject in subjects.into_iter().take(MAX_ACCOUNTS) {
                match wiki.call(&by_subject[subject], "dokuwiki.getVersion", &[], timeout).await {
                    Ok(_) => accepted += 1,
                    Err(AdapterError::Unauthenticated(_)) | Err(AdapterError::PermissionDenied(_)) => out.push(error(
                        name,
                        "credentials",
                        format!("the wiki refuses the account mapped to `{subject}`: that user's searches are DENIED"),
                        format!("fix the password of `{subject}` in the secrets file (or the account in the wiki, and its remote API rights)"),
                    )),
                    Err(e) => {
                        out.push(unreachable(name, &e));
                        return out;
                    }
                }
            }
            if by_subject.len() > MAX_ACCOUNTS {
                out.push(warning(
                    name,
                    "credentials",
                    format!("only the first {MAX_ACCOUNTS} accounts were tried"),
                    "",
                ));
            }
            if accepted > 0 {
                out.push(ok(name, "credentials", format!("the wiki accepts {accepted} mapped account(s)")));
            }
        }
    }
    out
}

fn unreachable(name: &str, e: &AdapterError) -> Diagnostic {
    error(
        name,
        "wiki",
        format!("the wiki's remote API did not answer ({e})"),
        "check the source's `dokuwiki.url`, that the wiki runs, and that its remote API is on (`remote = 1`)",
    )
}
