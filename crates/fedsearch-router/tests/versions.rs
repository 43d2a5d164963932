//! An old version the sources returned alone brings its current version into the answer: the
//! router fetches it from the same source as the calling user and puts it just above the old
//! one — or, when the source refuses that user the current text, leaves the old hit alone,
//! marked superseded.

mod common;

use common::*;
use fedsearch_adapter_kit::{
    Adapter, AdapterError, DescribeResponse, FetchRequest, FetchResponse, HitSink, SourceDescription, SubQuery,
};
use fedsearch_proto::types::{SourceHit, VersionInfo};

/// `notices` returns the original field safety notice, which its update replaced — alone, or
/// with the update ranked below it (`both`); the update may be fetched by alice only.
struct Notices {
    both: bool,
}

impl Adapter for Notices {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: "notices".into(),
            sources: vec![SourceDescription { name: "notices".into(), kind: "scripted".into(), ..Default::default() }],
        }
    }

    async fn search(&self, _: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        let old = SourceHit {
            local_id: "FSN-5".into(),
            title: "Field safety notice FSN-5: battery packs".into(),
            snippet: "Lots B1 to B3 are recalled.".into(),
            rank: 1,
            score: Some(3.0),
            full_text_ref: "notices-idx/FSN-5".into(),
            version: Some(VersionInfo {
                family: "fsn-5".into(),
                status: "superseded".into(),
                superseded_by: "FSN-5-U1".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let update = SourceHit {
            local_id: "FSN-5-U1".into(),
            title: "Update 1: lot B4 recalled as well".into(),
            rank: 2,
            score: Some(1.0),
            full_text_ref: "notices-idx/FSN-5-U1".into(),
            version: Some(VersionInfo {
                family: "fsn-5".into(),
                status: "current".into(),
                supersedes: "FSN-5".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        sink.send(if self.both { vec![old, update] } else { vec![old] }).await;
        Ok(())
    }

    async fn fetch(&self, req: FetchRequest) -> Result<FetchResponse, AdapterError> {
        let user = req.user.map(|u| u.subject).unwrap_or_default();
        match (req.reference.as_str(), user.as_str()) {
            ("notices-idx/FSN-5-U1", "alice") => Ok(FetchResponse {
                id: "FSN-5-U1".into(),
                title: "FSN-5 update 1: lot B4 recalled as well".into(),
                content: "The recall now covers lots B1 to B4.".into(),
                ..Default::default()
            }),
            ("notices-idx/FSN-5-U1", _) => Err(AdapterError::PermissionDenied("not yours".into())),
            _ => Err(AdapterError::NotFound("no such notice".into())),
        }
    }
}

#[tokio::test]
async fn an_old_notice_found_alone_is_answered_with_its_update_above_it() {
    let adapter = start_adapter(Notices { both: false }).await;
    let router = start_router(&router_yaml(&[("notices", &adapter.url(), "")], "")).await;
    let mut c = client(&router).await;

    let resp = c.search(authed(query("FSN-5 battery recall"), &token("alice", &[]))).await.unwrap().into_inner();
    let ids: Vec<&str> = resp.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["notices:FSN-5-U1", "notices:FSN-5"], "{:?}", resp.hits);
    let current = &resp.hits[0];
    assert_eq!(current.full_text_ref, "notices:notices-idx/FSN-5-U1");
    assert_eq!(current.snippet, "The recall now covers lots B1 to B4.");
    let v = current.version.as_ref().unwrap();
    assert_eq!((v.status.as_str(), v.supersedes.as_str()), ("current", "FSN-5"));
    assert_eq!(resp.hits[1].version.as_ref().unwrap().superseded_by, "notices:FSN-5-U1");

    // A user the source refuses the update keeps the old notice alone, still marked superseded.
    let resp = c.search(authed(query("FSN-5 battery recall"), &token("bob", &[]))).await.unwrap().into_inner();
    let ids: Vec<&str> = resp.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["notices:FSN-5"]);
    let v = resp.hits[0].version.as_ref().unwrap();
    assert_eq!((v.status.as_str(), v.superseded_by.as_str()), ("superseded", "FSN-5-U1"));
}

#[tokio::test]
async fn a_question_naming_the_old_notice_still_gets_the_update_first() {
    let adapter = start_adapter(Notices { both: true }).await;
    let router =
        start_router(&router_yaml(&[("notices", &adapter.url(), r"routing: { patterns: ['FSN-\d+'] }")], "")).await;
    let mut c = client(&router).await;
    // FSN-5 is named, so it would go first; its update takes the better place.
    let resp = c.search(authed(query("What does FSN-5 recall?"), &token("bob", &[]))).await.unwrap().into_inner();
    let ids: Vec<&str> = resp.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["notices:FSN-5-U1", "notices:FSN-5"], "{:?}", resp.hits);
}
