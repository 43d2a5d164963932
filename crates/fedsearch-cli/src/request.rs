//! The fedsearch command line: turning `search` arguments into a `SearchRequest`.

use std::time::SystemTime;

use fedsearch_proto::{
    api::{ContextOptions, SearchRequest},
    types::{Filters, FusionMethod, FusionOptions, TimeRange},
};

use crate::cli::{Fusion, FusionArgs, SearchArgs};

impl FusionArgs {
    /// The request's fusion options; `None` when no flag was given (the router decides).
    pub fn options(&self) -> Option<FusionOptions> {
        (self.fusion.is_some() || self.rrf_k.is_some() || !self.weight.is_empty()).then(|| FusionOptions {
            method: match self.fusion {
                None => FusionMethod::Unspecified,
                Some(Fusion::Rrf) => FusionMethod::Rrf,
                Some(Fusion::Weighted) => FusionMethod::WeightedScore,
            } as i32,
            rrf_k: self.rrf_k,
            weights: self.weight.iter().cloned().collect(),
        })
    }
}

/// Builds the request; `now` anchors `--since`.
pub fn search_request(args: &SearchArgs, now: SystemTime) -> SearchRequest {
    let from = match args.since {
        Some(since) => {
            Some(fedsearch_core::time::to_timestamp(now.checked_sub(since).unwrap_or(SystemTime::UNIX_EPOCH)))
        }
        None => args.from,
    };
    let time_range = (from.is_some() || args.to.is_some()).then_some(TimeRange { from, to: args.to });
    let filters = Filters {
        time_range,
        doc_types: args.doc_type.clone(),
        tags: args.tag.clone(),
        equals: args.eq.iter().cloned().collect(),
    };
    let has_filters = filters.time_range.is_some()
        || !filters.doc_types.is_empty()
        || !filters.tags.is_empty()
        || !filters.equals.is_empty();
    SearchRequest {
        query: args.query.clone(),
        filters: has_filters.then_some(filters),
        top_k: args.top_k.unwrap_or(0),
        sources: args.source.clone(),
        fusion: args.fusion.options(),
        timeout: args.timeout.and_then(|t| prost_types::Duration::try_from(t).ok()),
        source_credentials: Default::default(),
        context: args.context_tokens.map(|token_budget| ContextOptions { token_budget }),
        source_params: Default::default(),
        as_of: args.as_of,
        time_zone: args.time_zone.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(argv: &[&str]) -> SearchArgs {
        let mut full = vec!["fedsearch", "search"];
        full.extend_from_slice(argv);
        match Cli::try_parse_from(full).unwrap().command {
            Command::Search(a) => a,
            other => panic!("not a search: {other:?}"),
        }
    }

    #[test]
    fn every_flag_lands_in_the_request() {
        let args = parse(&[
            "支付超时",
            "--source",
            "tickets",
            "-s",
            "wiki",
            "--top-k",
            "5",
            "--since",
            "7d",
            "--type",
            "ticket",
            "--tag",
            "p1",
            "--eq",
            "status=open",
            "--fusion",
            "weighted",
            "--rrf-k",
            "30",
            "--weight",
            "wiki=2",
            "--timeout",
            "3s",
            "--context-tokens",
            "500",
        ]);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let req = search_request(&args, now);
        assert_eq!(req.query, "支付超时");
        assert_eq!(req.sources, ["tickets", "wiki"]);
        assert_eq!(req.top_k, 5);
        let f = req.filters.unwrap();
        let range = f.time_range.unwrap();
        assert_eq!(range.from.unwrap().seconds, 1_000_000 - 7 * 86_400);
        assert!(range.to.is_none());
        assert_eq!(f.doc_types, ["ticket"]);
        assert_eq!(f.tags, ["p1"]);
        assert_eq!(f.equals["status"], "open");
        let fusion = req.fusion.unwrap();
        assert_eq!(fusion.method, FusionMethod::WeightedScore as i32);
        assert_eq!(fusion.rrf_k, Some(30));
        assert_eq!(fusion.weights["wiki"], 2.0);
        assert_eq!(req.timeout, Some(prost_types::Duration { seconds: 3, nanos: 0 }));
        assert_eq!(req.context.unwrap().token_budget, 500);
    }

    #[test]
    fn a_bare_question_sends_no_filters_and_lets_the_router_choose() {
        let req = search_request(&parse(&["where is my order"]), SystemTime::now());
        assert!(req.filters.is_none());
        assert!(req.fusion.is_none());
        assert!(req.sources.is_empty());
        assert_eq!(req.top_k, 0);
        assert!(req.timeout.is_none());
        assert!(req.context.is_none());
    }

    #[test]
    fn from_and_to_make_a_closed_range() {
        let req = search_request(&parse(&["q", "--from", "2026-11-01", "--to", "2026-11-02"]), SystemTime::now());
        let range = req.filters.unwrap().time_range.unwrap();
        assert_eq!(range.to.unwrap().seconds - range.from.unwrap().seconds, 86_400);
    }
}
