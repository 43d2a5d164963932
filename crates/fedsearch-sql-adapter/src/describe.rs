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

/// The id patterns of the templates (their regular expressions, named groups and all).
pub fn entity_patterns(catalog: &Catalog) -> Vec<String> {
    let mut out: Vec<String> =
        catalog.templates.iter().flat_map(|t| t.patterns.iter().map(|p| p.to_string())).collect();
    out.sort();
    out.dedup();
    out
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
