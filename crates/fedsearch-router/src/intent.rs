//! What kind of answer a question asks for, from its wording alone: a rule, a limit or a
//! procedure ("how long may…", "what should support do", 按规定…吗, 怎么处理) is answered by
//! reference material — the sources without `routing.time_phrases` (policies, handbooks, guides,
//! the wiki) — whatever words the reference sources list about themselves. Used by
//! [`crate::routing`] as a prior in `selection.mode: scored`.
//!
//! The cues are question forms, not subject words, so they hold for any company: they say how
//! the question asks, never what it is about.

use std::sync::LazyLock;

use regex::Regex;

/// English question forms that ask for a rule, a limit or a procedure.
static ENGLISH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:how (?:long|much|many|quickly|soon|do|does|is|are|should|can)|should|must|may|allowed|",
        r"entitled|polic(?:y|ies)|rules?|procedures?|steps?|required|requirements?|need to|do we|",
        r"can (?:i|we|a|the|they)|who (?:approves|may|can)|maximum|minimum|limit|standard|within|",
        r"deadline|after how)\b"
    ))
    .expect("the English rule cues compile")
});

/// Chinese question forms that ask for a rule, a limit or a procedure.
const CHINESE: &[&str] = &[
    "怎么",
    "如何",
    "怎样",
    "应该",
    "要不要",
    "能不能",
    "可不可以",
    "可以",
    "能否",
    "是否",
    "规定",
    "制度",
    "流程",
    "步骤",
    "手册",
    "话术",
    "多久",
    "多长时间",
    "什么时候",
    "几天",
    "几个",
    "最多",
    "最晚",
    "最少",
    "需要",
    "必须",
    "标准",
    "算不算",
    "条件",
    "要求",
    "按什么",
    "按哪",
];

/// Whether the question asks for a rule, a limit or a procedure rather than for records.
pub fn asks_for_rule(question: &str) -> bool {
    let lowered = question.to_lowercase();
    ENGLISH.is_match(&lowered) || CHINESE.iter().any(|c| lowered.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_questions_are_told_from_record_questions_in_both_languages() {
        for q in [
            "How long can a P1 payment ticket sit without progress before the on-call engineer is called?",
            "A customer disputes a demurrage invoice. How long do we have to give them a written answer?",
            "Do we accept class 7 radioactive cargo for sea freight?",
            "付款页面一直转圈最后提示失败，客服应该按什么步骤跟进？",
            "有争议的账单算不算逾期天数？",
            "理赔专员自己最多能批多少钱的赔款？",
        ] {
            assert!(asks_for_rule(q), "{q}");
        }
        for q in [
            "What is the status of order SO20261002?",
            "Which tickets are about the rejected delivery of SO20261007?",
            "迅达电子那个被台风甩掉的柜子，现在改到哪条船了？",
            "昨天仓库系统报了什么告警？",
        ] {
            assert!(!asks_for_rule(q), "{q}");
        }
        assert!(!asks_for_rule("Is the maybe-shipped order here?"), "whole words only");
    }
}
