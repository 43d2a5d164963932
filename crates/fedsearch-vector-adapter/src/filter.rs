//! Every `where` filter sent to the vector store is built here, from the user's identity and
//! the sub-query's filters. User values only ever appear in value positions; keys are the fixed
//! schema below or names listed in the source's config (`filterable`).
//!
//! The permission clause is part of the store's nearest-neighbour search itself (Chroma applies
//! `where` before ranking), so a user's top-k is computed among the chunks they may read — never
//! a larger result filtered afterwards.

use fedsearch_proto::types::{Filters, UserContext};
use serde_json::{Value, json};

/// Metadata keys of a stored chunk.
pub const DOC_ID: &str = "doc_id";
pub const CHUNK: &str = "chunk";
pub const TITLE: &str = "title";
pub const URL: &str = "url";
pub const UPDATED_AT: &str = "updated_at";
pub const DOC_TYPE: &str = "doc_type";
pub const PUBLIC: &str = "public";
pub const GROUPS: &str = "groups";
pub const USERS: &str = "users";
pub const TAGS: &str = "tags";

/// Keys a config may not offer to `equals` (they carry the ACL or the document's identity).
pub const RESERVED: &[&str] = &[DOC_ID, CHUNK, PUBLIC, GROUPS, USERS, TAGS, UPDATED_AT, URL, TITLE];

/// Who may read a chunk: it is public, or lists one of the user's groups, or the user's id.
/// No user (or an empty subject) sees public chunks only.
pub fn permission(user: Option<&UserContext>) -> Value {
    let mut any = vec![json!({ PUBLIC: true })];
    if let Some(u) = user.filter(|u| !u.subject.is_empty()) {
        any.push(json!({ USERS: { "$contains": u.subject } }));
        for g in u.groups.iter().filter(|g| !g.is_empty()) {
            any.push(json!({ GROUPS: { "$contains": g } }));
        }
    }
    if any.len() == 1 { any.remove(0) } else { json!({ "$or": any }) }
}

/// The permission clause and every filter the source can apply, ANDed. Filters it cannot apply
/// are returned as notes for the caller.
pub fn build(user: Option<&UserContext>, filters: Option<&Filters>, filterable: &[String]) -> (Value, Vec<String>) {
    let mut all = vec![permission(user)];
    let mut notes = Vec::new();
    if let Some(f) = filters {
        if let Some(range) = &f.time_range {
            if let Some(from) = &range.from {
                all.push(json!({ UPDATED_AT: { "$gte": from.seconds } }));
            }
            if let Some(to) = &range.to {
                all.push(json!({ UPDATED_AT: { "$lt": to.seconds } }));
            }
        }
        if !f.doc_types.is_empty() {
            all.push(json!({ DOC_TYPE: { "$in": f.doc_types } }));
        }
        for tag in &f.tags {
            all.push(json!({ TAGS: { "$contains": tag } }));
        }
        for (key, value) in &f.equals {
            if key == DOC_TYPE || filterable.iter().any(|k| k == key) {
                all.push(json!({ key.as_str(): { "$eq": value } }));
            } else {
                notes.push(format!("filter `equals.{key}` not applied"));
            }
        }
    }
    let filter = if all.len() == 1 { all.remove(0) } else { json!({ "$and": all }) };
    (filter, notes)
}

/// The clause that selects one document's chunks as `user` may read them.
pub fn document(doc_id: &str, user: Option<&UserContext>) -> Value {
    json!({ "$and": [ { DOC_ID: { "$eq": doc_id } }, permission(user) ] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedsearch_proto::types::TimeRange;

    fn user(sub: &str, groups: &[&str]) -> UserContext {
        UserContext {
            subject: sub.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_permission_clause_names_the_user_and_every_group() {
        let p = permission(Some(&user("alice", &["support", "user"])));
        assert_eq!(
            p,
            json!({"$or": [{"public": true}, {"users": {"$contains": "alice"}},
                           {"groups": {"$contains": "support"}}, {"groups": {"$contains": "user"}}]})
        );
        assert_eq!(permission(None), json!({"public": true}));
        assert_eq!(permission(Some(&user("", &["support"]))), json!({"public": true}));
    }

    #[test]
    fn filters_are_anded_with_the_permission_and_unknown_keys_are_noted() {
        let filters = Filters {
            time_range: Some(TimeRange { from: Some(prost_types::Timestamp { seconds: 100, nanos: 0 }), to: None }),
            doc_types: vec!["kb".into()],
            tags: vec!["payment_timeout".into()],
            equals: [("lang".to_string(), "zh".to_string()), ("$or".to_string(), "x".to_string())].into(),
        };
        let (f, notes) = build(Some(&user("bob", &[])), Some(&filters), &["lang".into()]);
        let and = f["$and"].as_array().unwrap();
        assert_eq!(and[0]["$or"][1], json!({"users": {"$contains": "bob"}}));
        assert!(and.contains(&json!({"updated_at": {"$gte": 100}})));
        assert!(and.contains(&json!({"doc_type": {"$in": ["kb"]}})));
        assert!(and.contains(&json!({"tags": {"$contains": "payment_timeout"}})));
        assert!(and.contains(&json!({"lang": {"$eq": "zh"}})));
        assert_eq!(notes, vec!["filter `equals.$or` not applied"]);
    }
}
