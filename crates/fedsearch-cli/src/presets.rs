//! The fedsearch command line: demo user presets from the sample company (`data/sample/COMPANY.md`).

use std::collections::BTreeMap;

/// One demo user: the claims `fedsearch token --user NAME` puts in the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoUser {
    pub sub: &'static str,
    pub role: &'static str,
    pub groups: &'static [&'static str],
    pub attrs: &'static [(&'static str, &'static str)],
}

impl DemoUser {
    pub fn groups(&self) -> Vec<String> {
        self.groups.iter().map(|g| g.to_string()).collect()
    }

    pub fn attrs(&self) -> BTreeMap<String, String> {
        self.attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }
}

/// The people of Spruce Mall, as in the table of `data/sample/COMPANY.md`.
pub const DEMO_USERS: &[DemoUser] = &[
    DemoUser {
        sub: "alice",
        role: "support agent (retail)",
        groups: &["employee", "support"],
        attrs: &[("business_lines", "retail")],
    },
    DemoUser {
        sub: "dave",
        role: "support agent (wholesale)",
        groups: &["employee", "support"],
        attrs: &[("business_lines", "wholesale")],
    },
    DemoUser {
        sub: "bob",
        role: "finance analyst",
        groups: &["employee", "finance"],
        attrs: &[("business_lines", "retail,wholesale")],
    },
    DemoUser { sub: "carol", role: "plain employee", groups: &["employee"], attrs: &[] },
    DemoUser { sub: "eve", role: "contractor, no wiki account", groups: &["employee"], attrs: &[] },
];

/// The HS256 secret of the demo router (`deploy/config/router.yaml`, `auth.hs256_secret`): public
/// on purpose, for the demo only. The no-token hint prints it so that its command works as printed.
pub const DEMO_SECRET: &str = "fedsearch-demo-secret-change-me-0123456789";

/// The demo user called `name`, or a message listing the known ones.
pub fn demo_user(name: &str) -> Result<&'static DemoUser, String> {
    DEMO_USERS.iter().find(|u| u.sub.eq_ignore_ascii_case(name.trim())).ok_or_else(|| {
        let known: Vec<_> = DEMO_USERS.iter().map(|u| u.sub).collect();
        format!("unknown demo user `{name}`; known: {}", known.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_match_the_sample_company() {
        let alice = demo_user("alice").unwrap();
        assert_eq!(alice.groups(), ["employee", "support"]);
        assert_eq!(alice.attrs().get("business_lines").map(String::as_str), Some("retail"));
        assert_eq!(demo_user("Bob").unwrap().attrs()["business_lines"], "retail,wholesale");
        assert!(demo_user("eve").unwrap().attrs().is_empty());
        assert_eq!(demo_user("dave").unwrap().attrs()["business_lines"], "wholesale");
    }

    #[test]
    fn the_demo_secret_is_the_demo_routers() {
        let config = include_str!("../../../deploy/config/router.yaml");
        assert!(
            config.contains(&format!("hs256_secret: \"{DEMO_SECRET}\"")),
            "deploy/config/router.yaml changed its secret"
        );
        assert!(DEMO_SECRET.len() >= fedsearch_core::auth::MIN_SECRET_LEN);
    }

    #[test]
    fn an_unknown_user_lists_the_known_ones() {
        let err = demo_user("mallory").unwrap_err();
        assert!(err.contains("alice, dave, bob, carol, eve"), "{err}");
    }
}
