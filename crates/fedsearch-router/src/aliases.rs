//! Names written in two scripts: a customer the orders database knows as "港联贸易 Harbourline
//! Trading Ltd" or "李娜 Li Na" is written one way in a Chinese case note and the other way in
//! an English ticket. The sources' `Describe` vocabularies ([`crate::describe`]) hold such labels
//! whole; a question that names one of the two spellings is expanded with the other, like a
//! glossary term, so every source hears both — 港联贸易那票货 reaches the English case about
//! Harbourline, "Was Li Na charged" the Chinese ticket about 李娜.
//!
//! Only the vocabularies of the sources the caller may use are read (and not one that
//! `routing.vocabulary: false` switches off: [`crate::registry::Source::vocabulary_in_use`]), and
//! the other spelling only goes into the sub-queries and the merging of results, never into the
//! response.

use crate::{analysis, describe::Vocabulary};

/// The CJK and the Latin part of a name written in both (`("港联贸易", "harbourline trading
/// ltd")`), or `None` for a name in one script. `name` is lowercased.
pub fn pair(name: &str) -> Option<(String, String)> {
    let cjk: String = longest_cjk_run(name);
    let latin: String = name.chars().map(|c| if analysis::is_cjk(c) { ' ' } else { c }).collect();
    let latin = latin.split_whitespace().collect::<Vec<_>>().join(" ");
    let letters = latin.chars().filter(|c| c.is_alphabetic()).count();
    (cjk.chars().count() >= 2 && letters >= 4).then_some((cjk, latin))
}

fn longest_cjk_run(name: &str) -> String {
    let mut best = String::new();
    let mut run = String::new();
    for c in name.chars().chain(std::iter::once(' ')) {
        if analysis::is_cjk(c) {
            run.push(c);
        } else {
            if run.chars().count() > best.chars().count() {
                best = run.clone();
            }
            run.clear();
        }
    }
    best
}

/// Every two-script name of `vocabularies` that `question` names, as (the spelling the question
/// uses, the other one), lowercased: `("李娜", "li na")`, `("harbourline", "港联贸易")`.
pub fn two_script_names<'a>(
    question: &str,
    vocabularies: impl IntoIterator<Item = &'a Vocabulary>,
) -> Vec<(String, String)> {
    let lowered = question.to_lowercase();
    let prepared = analysis::Prepared::new(question);
    let mut out: Vec<(String, String)> = Vec::new();
    for v in vocabularies {
        if v.bilingual.is_empty() {
            continue;
        }
        let named = v.named_in(&prepared);
        for (cjk, latin) in &v.bilingual {
            let found = if lowered.contains(cjk.as_str()) {
                Some((cjk.clone(), latin.clone()))
            } else {
                named
                    .iter()
                    .find(|n| !n.chars().any(analysis::is_cjk) && starts_with_words(latin, n))
                    .map(|n| (n.to_string(), cjk.clone()))
            };
            if let Some(pair) = found.filter(|p| !out.contains(p)) {
                out.push(pair);
            }
        }
    }
    out
}

/// Whether `name`'s words begin with all of `part`'s ("harbourline trading ltd", "harbourline").
fn starts_with_words(name: &str, part: &str) -> bool {
    name.strip_prefix(part).is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_in_two_scripts_splits_into_its_two_spellings() {
        assert_eq!(
            pair("港联贸易 harbourline trading ltd"),
            Some(("港联贸易".into(), "harbourline trading ltd".into()))
        );
        assert_eq!(pair("李娜 li na"), Some(("李娜".into(), "li na".into())));
        assert_eq!(pair("harbourline trading"), None);
        assert_eq!(pair("港联贸易"), None);
        assert_eq!(pair("王 li"), None, "one character, two letters: too little to be sure");
    }

    fn vocabulary(labels: &[&str]) -> Vocabulary {
        let mut v = Vocabulary::default();
        for l in labels {
            v.entities.push(analysis::Term::new(l));
            v.entity_texts.insert(l.to_string());
            v.bilingual.extend(pair(l));
        }
        v
    }

    fn other_spellings(question: &str, v: [&Vocabulary; 1]) -> Vec<String> {
        two_script_names(question, v).into_iter().map(|(_, other)| other).collect()
    }

    #[test]
    fn a_question_in_one_script_hears_the_other() {
        let v = vocabulary(&[
            "港联贸易 harbourline trading ltd",
            "harbourline trading",
            "harbourline",
            "港联贸易",
            "李娜 li na",
            "li na",
            "李娜",
        ]);
        assert_eq!(
            other_spellings("港联贸易那票去新罗西斯克的货为什么不能收货？", [&v]),
            vec!["harbourline trading ltd"]
        );
        assert_eq!(other_spellings("Why is the Harbourline shipment on hold?", [&v]), vec!["港联贸易"]);
        assert_eq!(other_spellings("Was Li Na actually charged for the chairs?", [&v]), vec!["李娜"]);
        assert!(other_spellings("Was Lina charged?", [&v]).is_empty());
        assert!(other_spellings("What is the refund policy?", [&v]).is_empty());
        assert_eq!(
            two_script_names("Why is the Harbourline shipment on hold?", [&v]),
            vec![("harbourline".to_string(), "港联贸易".to_string())],
            "the spelling asked, then the other"
        );
    }
}
