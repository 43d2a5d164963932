//! What the database holds, for `Describe`: the names its `lookups` link (customers, products —
//! every way [`crate::lookup::variants`] says a label can be written, ambiguous ones dropped),
//! the templates' keywords and descriptions, and their id patterns. The names are read with the
//! adapter's read-only role on a pool of their own, every `describe.refresh`; the router only
//! scores sources with them and never shows them; `describe.vocabulary: false` turns it off
//! (docs/security.md).

use std::time::Duration;

use fedsearch_adapter_kit::vocabulary::{VocabularyKind, VocabularyTerm, term};

use crate::{
    config::LookupConfig,
    db::Database,
    lookup::Lookup,
    mapping,
    template::{Catalog, Template},
};

/// The templates' own words: keywords, then descriptions and when-to-use texts.
pub fn template_terms(templates: &[Template]) -> Vec<VocabularyTerm> {
    let mut out = Vec::new();
    for t in templates {
        out.extend(t.keywords.iter().map(|k| term(k, VocabularyKind::Term, "keywords", 0)));
    }
    for t in templates {
        for text in [&t.description, &t.when_to_use] {
            out.push(term(text, VocabularyKind::Term, "template", 0));
        }
    }
    out
}

/// The id patterns of the templates (their regular expressions, named groups and all): every
/// `patterns` entry, and the `captures` that take an id ([`takes_an_id`]). A capture's id names
/// the rows that carry it (a recall notice's number finds the devices it still concerns), so a
/// document that shows one is worth asking this source about.
pub fn entity_patterns(catalog: &Catalog) -> Vec<String> {
    let captured = catalog.templates.iter().flat_map(|t| t.captures.iter().filter(|p| takes_an_id(p.as_str())));
    let mut out: Vec<String> =
        catalog.templates.iter().flat_map(|t| t.patterns.iter()).chain(captured).map(|p| p.to_string()).collect();
    out.sort();
    out.dedup();
    out
}

/// Whether a capture pattern takes an id — it needs a digit (`FSN-\d{4}-\d{2}`) — rather than a
/// word of the question (`(?P<status>overdue|paid)`), which names no document's id.
fn takes_an_id(pattern: &str) -> bool {
    pattern.contains(r"\d") || pattern.contains("[0-9")
}

/// The names of one lookup's rows as entity terms.
pub fn lookup_terms(lookup: &LookupConfig, rows: impl IntoIterator<Item = (String, String)>) -> Vec<VocabularyTerm> {
    Lookup::new(&lookup.param, rows)
        .names
        .into_iter()
        .map(|(name, _)| term(&name, VocabularyKind::Entity, &lookup.name, 1))
        .collect()
}

/// Reads every lookup's names (then the templates' words).
pub async fn read(
    db: &Database,
    lookups: &[LookupConfig],
    templates: &[VocabularyTerm],
    budget: Duration,
) -> Result<Vec<VocabularyTerm>, String> {
    let mut out = Vec::new();
    for l in lookups {
        let rows = db.query(l.sql.clone(), Vec::new(), l.max_rows, budget).await.map_err(|e| e.to_string())?;
        let pairs =
            rows.iter().filter_map(|r| Some((mapping::cell_text(r, "value")?, mapping::cell_text(r, "label")?)));
        out.extend(lookup_terms(l, pairs));
    }
    out.extend(templates.iter().cloned());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{config::SqlAdapterConfig, sql::Engine};

    const YAML: &str = r#"
server: {listen: '127.0.0.1:0'}
database: {url: 'sqlite::memory:'}
source: {name: devices}
list_attributes: [regions]
templates:
  - name: device_by_serial
    sql: "SELECT 1 FROM devices d WHERE d.serial_no = :serial_no AND {permission}"
    permission: "d.region IN (:user.regions)"
    params: {serial_no: {type: string, required: true, pattern: 'P\d{3}-\d{7}'}}
    match: {patterns: ['(?P<serial_no>P\d{3}-\d{7})']}
    hit: {id: serial_no, title: serial_no, doc_type: device}
  - name: open_units
    sql: "SELECT 1 FROM devices d WHERE (:notice IS NULL OR d.notice = :notice) AND (:state IS NULL OR d.state = :state) AND {permission} LIMIT :limit"
    permission: "d.region IN (:user.regions)"
    params:
      notice: {type: string, pattern: 'FSN-[0-9]{4}-\d{2}'}
      state: {type: string}
    match: {captures: ['(?P<notice>FSN-[0-9]{4}-\d{2})', '(?P<state>pending|done)'], keywords: [FSN-, recall]}
    hit: {id: serial_no, title: serial_no, doc_type: device}
"#;

    #[test]
    fn captures_that_take_an_id_are_entity_patterns_and_captured_words_are_not() {
        let cfg: SqlAdapterConfig = fedsearch_core::config::from_yaml_str(YAML).unwrap();
        let catalog = Catalog::compile(&cfg, Engine::Sqlite).unwrap();
        assert_eq!(
            entity_patterns(&catalog),
            [r"(?P<notice>FSN-[0-9]{4}-\d{2})", r"(?P<serial_no>P\d{3}-\d{7})"],
            "the notice a document shows finds its rows; `pending` names no document's id"
        );
    }

    #[test]
    fn a_lookup_says_every_unambiguous_way_a_name_is_written() {
        let l = LookupConfig {
            name: "customers".into(),
            sql: String::new(),
            param: "customer_id".into(),
            refresh: Duration::from_secs(60),
            max_rows: 10,
            max_values: 8,
        };
        let terms = lookup_terms(
            &l,
            [
                ("CU-1".to_string(), "Kessler Maschinenbau AG".to_string()),
                ("CU-2".to_string(), "李娜 Li Na".to_string()),
            ],
        );
        let names: Vec<&str> = terms.iter().map(|t| t.text.as_str()).collect();
        for want in ["kessler", "kessler maschinenbau", "李娜", "li na"] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        assert!(terms.iter().all(|t| t.kind() == VocabularyKind::Entity && t.field == "customers"));
    }
}
