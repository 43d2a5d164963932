//! DokuWiki read permission computed from an auth spec (`user|login|name|mail|groups|subject`,
//! `acl|scope|who|perm` lines, the format `scripts/backends/dokuwiki.sh` loads into the wiki), so
//! each indexed wiki page carries the subjects that may read it — the wiki's own decision, taken
//! at index time.
//!
//! DokuWiki's rule: for page `a:b:c`, look at scope `a:b:c`, then `a:b:*`, `a:*`, `*`; at the
//! first scope where any rule names the user, one of the user's groups or `@ALL`, the
//! permission is the highest of those rules. Read needs at least 1.

use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WikiUser {
    pub login: String,
    pub groups: Vec<String>,
    /// The JWT subject the wiki adapter maps to this login.
    pub subject: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    scope: String,
    who: String,
    perm: u32,
}

#[derive(Debug, Clone, Default)]
pub struct AuthSpec {
    users: Vec<WikiUser>,
    rules: Vec<Rule>,
}

impl AuthSpec {
    /// Parses spec text; `origin` names it in errors. Blank lines and `#` comments are skipped.
    pub fn parse(&mut self, text: &str, origin: &str) -> Result<(), String> {
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = line.split('|').map(str::trim).collect();
            match f.as_slice() {
                ["user", login, _name, _mail, groups, subject] => self.users.push(WikiUser {
                    login: login.to_string(),
                    groups: groups.split(',').map(str::trim).filter(|g| !g.is_empty()).map(String::from).collect(),
                    subject: subject.to_string(),
                }),
                ["acl", scope, who, perm] => self.rules.push(Rule {
                    scope: scope.to_string(),
                    who: who.to_string(),
                    perm: perm
                        .parse()
                        .map_err(|_| format!("{origin}:{}: permission `{perm}` is not a number", i + 1))?,
                }),
                _ => return Err(format!("{origin}:{}: not a `user|…` or `acl|…` line", i + 1)),
            }
        }
        Ok(())
    }

    /// The permission of a principal (login, groups) on `page`; `None` login = anonymous.
    fn permission(&self, page: &str, login: Option<&str>, groups: &[String]) -> u32 {
        let mut scopes = vec![page.to_string()];
        let parts: Vec<&str> = page.split(':').collect();
        for n in (1..parts.len()).rev() {
            scopes.push(format!("{}:*", parts[..n].join(":")));
        }
        scopes.push("*".into());
        let matches = |who: &str| {
            who == "@ALL"
                || who.strip_prefix('@').is_some_and(|g| groups.iter().any(|x| x == g))
                || login.is_some_and(|l| l == who)
        };
        for scope in &scopes {
            let perms: Vec<u32> =
                self.rules.iter().filter(|r| &r.scope == scope && matches(&r.who)).map(|r| r.perm).collect();
            if let Some(max) = perms.into_iter().max() {
                return max;
            }
        }
        0
    }

    /// Whether anyone (no login) may read `page`.
    pub fn public(&self, page: &str) -> bool {
        self.permission(page, None, &[]) >= 1
    }

    /// Subjects of the known users who may read `page`, sorted.
    pub fn readers(&self, page: &str) -> Vec<String> {
        let set: BTreeSet<String> = self
            .users
            .iter()
            .filter(|u| self.permission(page, Some(&u.login), &u.groups) >= 1)
            .map(|u| u.subject.clone())
            .collect();
        set.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "
user|ting|Ting|t@x|orca,orca_cs|ting
user|hannah|Hannah|h@x|orca,orca_ops|hannah
user|priya|Priya|p@x|orca,orca_claims|priya
acl|orca:*|@ALL|0
acl|orca:public:*|@orca|1
acl|orca:ops:*|@orca_ops|1
acl|orca:ops:*|@orca_cs|1
acl|orca:ops:internal:*|@ALL|0
acl|orca:ops:internal:*|@orca_ops|1
acl|orca:claims:*|@orca_claims|1
acl|orca:claims:insurance_cover|@orca_cs|1
acl|orca:claims:insurance_cover|@orca_claims|1
acl|open:*|@ALL|1
";

    fn spec() -> AuthSpec {
        let mut s = AuthSpec::default();
        s.parse(SPEC, "test").unwrap();
        s
    }

    #[test]
    fn the_most_specific_scope_decides() {
        let s = spec();
        assert_eq!(s.readers("orca:public:tariff"), vec!["hannah", "priya", "ting"]);
        assert_eq!(s.readers("orca:ops:rollover"), vec!["hannah", "ting"]);
        // a more specific @ALL 0 shuts out orca_cs although orca:ops:* let it read
        assert_eq!(s.readers("orca:ops:internal:margins"), vec!["hannah"]);
        assert_eq!(s.readers("orca:claims:sdr"), vec!["priya"]);
        assert_eq!(s.readers("orca:claims:insurance_cover"), vec!["priya", "ting"]);
        assert!(s.readers("other:page").is_empty());
        assert!(!s.public("orca:public:tariff"));
        assert!(s.public("open:faq"));
    }

    #[test]
    fn a_bad_line_is_named() {
        let mut s = AuthSpec::default();
        assert_eq!(s.parse("acl|*|@ALL|x", "f.spec").unwrap_err(), "f.spec:1: permission `x` is not a number");
        assert!(s.parse("\nnonsense", "f.spec").unwrap_err().starts_with("f.spec:2:"));
    }
}
