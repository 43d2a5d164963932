//! The labeled question set: one JSON object per line (JSONL), and the users it is asked as.
//!
//! ```json
//! {"id":"n01","user":"mei","question":"…","as_of":"2026-11-20T10:00:00+08:00",
//!  "time_zone":"Asia/Shanghai","relevant":{"issues:NIM-1201":3,"billing:INV-2026-0042":2},
//!  "expected_sources":["issues","billing"],
//!  "superseded":[{"old":"wiki:eng:oncall_2025","current":"wiki:eng:oncall"}],
//!  "forbidden":["wiki:hr:salary_bands"],"lang":"en","kinds":["cross-source"]}
//! ```
//!
//! Ids are `<source>:<local id>`. Grades: 3 answers the question, 2 is needed, 1 is related
//! background; anything unlisted is 0. The users file (YAML) gives the claims the evaluator mints
//! a token with: `users: { mei: { groups: [employee, support], attributes: { regions: apac } } }`.

use std::{
    collections::{BTreeMap, HashSet},
    path::Path,
};

use serde::Deserialize;

/// One labeled question.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub id: String,
    pub user: String,
    pub question: String,
    /// RFC 3339; relative time in the question refers to it. Absent = `--default-as-of`, or now.
    #[serde(default)]
    pub as_of: Option<String>,
    #[serde(default)]
    pub time_zone: Option<String>,
    /// Graded relevant ids (1..=3).
    pub relevant: BTreeMap<String, u8>,
    #[serde(default)]
    pub expected_sources: Vec<String>,
    #[serde(default)]
    pub superseded: Vec<Superseded>,
    /// Ids that must never appear anywhere in the response for this user.
    #[serde(default)]
    pub forbidden: Vec<String>,
    #[serde(default)]
    pub lang: Option<String>,
    #[serde(default)]
    pub kinds: Vec<String>,
}

/// An old version that must not rank above (or stand in for) its current version.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Superseded {
    pub old: String,
    pub current: String,
}

/// The claims one user's token carries.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct User {
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Users {
    pub users: BTreeMap<String, User>,
}

/// Reads and checks a question set; the error names the file, line and problem.
pub fn read_questions(path: &Path) -> Result<Vec<Question>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_questions(&text).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse_questions(text: &str) -> Result<Vec<Question>, String> {
    let mut out = Vec::new();
    let mut ids = HashSet::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let q: Question = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        check(&q).map_err(|e| format!("line {} ({}): {e}", n + 1, q.id))?;
        if !ids.insert(q.id.clone()) {
            return Err(format!("line {}: question id `{}` is used twice", n + 1, q.id));
        }
        out.push(q);
    }
    if out.is_empty() {
        return Err("no questions".into());
    }
    Ok(out)
}

fn check(q: &Question) -> Result<(), String> {
    if q.question.trim().is_empty() {
        return Err("empty question".into());
    }
    if q.relevant.is_empty() {
        return Err("no relevant ids".into());
    }
    if let Some((id, g)) = q.relevant.iter().find(|(_, g)| !(1..=3).contains(*g)) {
        return Err(format!("grade {g} of `{id}` is not 1..=3"));
    }
    for id in q.relevant.keys().chain(&q.forbidden) {
        if !id.contains(':') {
            return Err(format!("id `{id}` is not `<source>:<local id>`"));
        }
    }
    if let Some(id) = q.forbidden.iter().find(|id| q.relevant.contains_key(*id)) {
        return Err(format!("`{id}` is both relevant and forbidden"));
    }
    if let Some(t) = &q.as_of {
        chrono::DateTime::parse_from_rfc3339(t).map_err(|e| format!("as_of `{t}`: {e}"))?;
    }
    Ok(())
}

pub fn read_users(path: &Path) -> Result<Users, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"{"id":"q1","user":"alice","question":"why?","relevant":{"tickets:TCK-1":3}}"#;

    #[test]
    fn a_minimal_line_parses() {
        let qs = parse_questions(OK).unwrap();
        assert_eq!(qs[0].relevant["tickets:TCK-1"], 3);
        assert!(qs[0].as_of.is_none());
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, needle) in [
            (OK.replace("3}", "4}"), "grade 4"),
            (OK.replace("tickets:TCK-1", "TCK-1"), "not `<source>:<local id>`"),
            (format!("{OK}\n{OK}"), "used twice"),
            (OK.replace("\"user\"", "\"usr\""), "line 1"),
            (OK.replace("}}", "},\"forbidden\":[\"tickets:TCK-1\"]}"), "both relevant and forbidden"),
            (OK.replace("}}", "},\"as_of\":\"yesterday\"}"), "as_of"),
            (String::new(), "no questions"),
        ] {
            let err = parse_questions(&text).unwrap_err();
            assert!(err.contains(needle), "expected `{needle}` in {err}");
        }
    }
}
