//! The vector source beside the keyword sources, behind the real router and fusion: Spruce
//! Mall's KB articles and wiki pages embedded into the real Chroma store (`CHROMA_URL`) with the
//! packaged model (`FEDSEARCH_VECTOR_MODEL_DIR`), the shipped configs
//! (deploy/config/vector-adapter.yaml, deploy/config/router-vector-source.yaml) with a collection of
//! these tests' own. `StackOptions { vector: true, .. }` starts it ([`vector_adapter`]).
//!
//! - hybrid merge: a document found by keyword search and by meaning is ONE fused hit (RRF and
//!   weighted score), its other copy a duplicate;
//! - randomized users: nothing any source returns (hits, duplicates, agent context) and nothing
//!   `GetDocument` gives is outside the user's permission, the ground truth read from the data
//!   files, never from a service.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    path::Path,
    process::Command,
    sync::OnceLock,
};

use fedsearch_e2e::pki::Pki;
use fedsearch_proto::{
    api::{ContextOptions, GetDocumentRequest, SearchRequest},
    types::{FusionMethod, FusionOptions, Hit, SourceState},
};
use tonic::Code;

use crate::harness::{SECRET, Stack, StackOptions, TlsClient, bin, free_port, need_env, root};

/// The collection these tests index into (never the demo's or the eval's `spruce-docs`).
const COLLECTION: &str = "fedsearch-e2e-spruce";

/// Starts a vector-adapter for `pki` over [`COLLECTION`] (indexed once per test binary) and
/// returns it with its router registry entry (to append to `sources:`).
pub fn vector_adapter(pki: &Pki, logs: &Path, common: &HashMap<String, String>) -> (crate::harness::Proc, String) {
    let root = root();
    let chroma = need_env("CHROMA_URL");
    let model = need_env("FEDSEARCH_VECTOR_MODEL_DIR");
    let wiki = need_env("DOKUWIKI_URL");
    // Spruce Mall's wiki ACL, as scripts/backends/dokuwiki.sh loads it into the wiki.
    let script = std::fs::read_to_string(root.join("scripts/backends/dokuwiki.sh")).unwrap();
    let start = script.find("AUTH_SPEC='").expect("AUTH_SPEC in dokuwiki.sh") + "AUTH_SPEC='".len();
    let end = start + script[start..].find("\n'").expect("end of AUTH_SPEC");
    let spec = logs.join("spruce-wiki-auth.spec");
    std::fs::write(&spec, &script[start..end]).unwrap();
    let shipped = std::fs::read_to_string(root.join("deploy/config/vector-adapter.yaml")).unwrap();
    assert!(shipped.contains("collection: spruce-docs") && shipped.contains(".run/spruce-wiki-auth.spec"));
    let cfg = shipped
        .replace("collection: spruce-docs", &format!("collection: {COLLECTION}"))
        .replace(".run/spruce-wiki-auth.spec", &spec.display().to_string());
    let cfg_path = logs.join("vector-adapter.yaml");
    std::fs::write(&cfg_path, cfg).unwrap();
    let env = [("CHROMA_URL", chroma), ("FEDSEARCH_VECTOR_MODEL_DIR", model), ("DOKUWIKI_URL", wiki)];
    static INDEXED: OnceLock<()> = OnceLock::new();
    INDEXED.get_or_init(|| {
        let out = Command::new(bin("fedsearch-vector-index"))
            .args(["--config", cfg_path.to_str().unwrap()])
            .envs(env.iter().cloned())
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(out.status.success(), "indexing failed: {}", String::from_utf8_lossy(&out.stderr));
    });
    let port = free_port();
    let mut all = common.clone();
    all.extend(pki.env("vector-adapter").into_iter().map(|(k, v)| (k.to_string(), v)));
    all.extend(env.into_iter().map(|(k, v)| (k.to_string(), v)));
    all.insert("FEDSEARCH_SERVER__LISTEN".into(), format!("127.0.0.1:{port}"));
    let proc = crate::harness::Proc::spawn("vector-adapter", &["--config", cfg_path.to_str().unwrap()], &all, logs)
        .with_tls(TlsClient::router(pki));
    let entry = std::fs::read_to_string(root.join("deploy/config/router-vector-source.yaml"))
        .unwrap()
        .replace("127.0.0.1:50064", &format!("127.0.0.1:{port}"));
    assert!(entry.contains(&format!("127.0.0.1:{port}")), "the registry entry names the adapter");
    (proc, entry)
}

/// The document a hit id names, without its source (`semantic:KB-101`, `kb:KB-101` → `KB-101`).
fn document(id: &str) -> &str {
    id.split_once(':').map_or(id, |(_, rest)| rest)
}

/// Every id a fused hit stands for: its own and its duplicates'.
fn ids(h: &Hit) -> Vec<&str> {
    std::iter::once(h.id.as_str()).chain(h.duplicates.iter().map(|d| d.id.as_str())).collect()
}

fn search(query: &str, method: FusionMethod, user: &Token) -> tonic::Request<SearchRequest> {
    let req = SearchRequest {
        query: query.into(),
        top_k: 20,
        fusion: Some(FusionOptions { method: method as i32, ..Default::default() }),
        context: Some(ContextOptions { token_budget: 1500 }),
        ..Default::default()
    };
    user.request(req)
}

#[tokio::test]
async fn a_document_found_by_keywords_and_by_meaning_is_one_fused_hit() {
    let stack = Stack::start(StackOptions { vector: true, ..Default::default() }).await;
    let mut c = stack.client().await;
    let alice = Token::new("alice", &["employee", "support"]);
    for method in [FusionMethod::Rrf, FusionMethod::WeightedScore] {
        // KB-101 "How to handle payment timeouts": both the kb index's words and the embedding find it
        let q = "payment timeout 支付超时 how to handle it";
        let resp = c.search(search(q, method, &alice)).await.unwrap().into_inner();
        let state = |s: &str| resp.sources.iter().find(|x| x.source == s).map(|x| x.state());
        for s in ["kb", "semantic"] {
            assert_eq!(state(s), Some(SourceState::Ok), "{method:?} {s}: {:?}\n{}", resp.sources, stack.logs());
        }
        let merged = resp
            .hits
            .iter()
            .find(|h| ids(h).contains(&"kb:KB-101") && ids(h).contains(&"semantic:KB-101"))
            .unwrap_or_else(|| panic!("{method:?}: KB-101 of kb and semantic in one hit: {:#?}", resp.hits));
        assert_eq!(
            merged.duplicates.len() + 1,
            ids(merged).iter().map(|i| i.split(':').next()).collect::<BTreeSet<_>>().len()
        );
        let contributors: BTreeSet<&str> =
            merged.explanation.as_ref().unwrap().contributions.iter().map(|c| c.source.as_str()).collect();
        assert!(contributors.contains("kb") && contributors.contains("semantic"), "{method:?}: {merged:#?}");
        assert!(resp.fusion.as_ref().unwrap().duplicates_merged >= 1, "{:?}", resp.fusion);
        // no document is listed twice: each fused hit holds other documents than every other one
        let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
        for h in &resp.hits {
            for id in ids(h) {
                if let Some(other) = owner.insert(document(id), &h.id)
                    && other != h.id
                {
                    panic!("{method:?}: {} is in two fused hits ({other}, {}): {:#?}", document(id), h.id, resp.hits);
                }
            }
        }
        // a wiki page found by the wiki's own search and by meaning merges too (same page URL)
        let q = "支付超时 处理手册 payment timeout runbook";
        let resp = c.search(search(q, method, &alice)).await.unwrap().into_inner();
        let page = "support:runbook_payment_timeout";
        let holders: Vec<&Hit> = resp.hits.iter().filter(|h| ids(h).iter().any(|i| document(i) == page)).collect();
        assert_eq!(holders.len(), 1, "{method:?}: {page} in one hit: {:#?}", resp.hits);
        let all = ids(holders[0]);
        assert!(all.contains(&"semantic:support:runbook_payment_timeout"), "{method:?}: {all:?}");
        if state("wiki") == Some(SourceState::Ok) {
            assert!(all.contains(&"wiki:support:runbook_payment_timeout"), "{method:?}: {all:?} {:?}", resp.sources);
        }
    }
}

/// Who may read a document of the sample company (data/sample/search/kb.json; the wiki's ACL of
/// scripts/backends/dokuwiki.sh: public:* every wiki account, support:* alice and dave, finance:* bob).
struct Truth {
    public: bool,
    groups: Vec<String>,
    users: Vec<String>,
}

fn ground_truth() -> BTreeMap<String, Truth> {
    let kb: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("data/sample/search/kb.json")).unwrap()).unwrap();
    let strs = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(|x| x.as_str().map(String::from)).collect()
    };
    let mut out = BTreeMap::new();
    for d in kb["docs"].as_array().unwrap() {
        let t = Truth {
            public: d["public"].as_bool().unwrap_or(false),
            groups: strs(&d["allowed_groups"]),
            users: strs(&d["allowed_users"]),
        };
        out.insert(d["id"].as_str().unwrap().to_string(), t);
    }
    for (ns, readers) in
        [("public", &["alice", "dave", "bob", "carol"][..]), ("support", &["alice", "dave"]), ("finance", &["bob"])]
    {
        for f in std::fs::read_dir(root().join("data/sample/wiki").join(ns)).unwrap() {
            let name = f.unwrap().path().file_stem().unwrap().to_string_lossy().into_owned();
            let users = readers.iter().map(|s| s.to_string()).collect();
            out.insert(format!("{ns}:{name}"), Truth { public: false, groups: vec![], users });
        }
    }
    out
}

struct Token {
    subject: String,
    groups: Vec<String>,
    jwt: String,
}

impl Token {
    fn new(subject: &str, groups: &[&str]) -> Token {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        let jwt = fedsearch_core::auth::mint_hs256(
            SECRET,
            subject,
            &groups,
            Default::default(),
            std::time::Duration::from_secs(600),
        )
        .unwrap();
        Token { subject: subject.into(), groups, jwt }
    }
    fn request<T>(&self, msg: T) -> tonic::Request<T> {
        let mut r = tonic::Request::new(msg);
        r.metadata_mut().insert("authorization", format!("Bearer {}", self.jwt).parse().unwrap());
        r
    }
    fn may_read(&self, t: &Truth) -> bool {
        t.public || t.users.contains(&self.subject) || t.groups.iter().any(|g| self.groups.contains(g))
    }
}

/// SplitMix64 over a seed that changes every run (`HYBRID_SEED` repeats one; failures name it).
struct Rng(u64);
impl Rng {
    fn seeded() -> (Rng, u64) {
        let seed = std::env::var("HYBRID_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
        });
        (Rng(seed), seed)
    }
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

#[tokio::test]
async fn randomized_users_get_nothing_they_may_not_read_from_any_source_including_the_vector_one() {
    let stack = Stack::start(StackOptions { vector: true, ..Default::default() }).await;
    let mut c = stack.client().await;
    let truth = ground_truth();
    let subjects = ["alice", "bob", "carol", "dave", "eve", "mallory"];
    let groups = ["employee", "support", "finance", "user", "wholesale", "ops"];
    let questions = [
        "payment timeout what to do",
        "退货手续费",
        "refund reconciliation procedure",
        "发货延迟 shipping delay",
        "quarterly revenue",
        "internal guidance during a payment gateway outage",
        "how do refunds reach the customer",
    ];
    let (mut rng, seed) = Rng::seeded();
    let (mut semantic_hits, mut denied_fetches) = (0, 0);
    for round in 0..24 {
        let subject = subjects[rng.below(subjects.len())];
        let gs: Vec<&str> = groups.iter().copied().filter(|_| rng.below(3) == 0).collect();
        let user = Token::new(subject, &gs);
        let q = questions[rng.below(questions.len())];
        let method = if round % 2 == 0 { FusionMethod::WeightedScore } else { FusionMethod::Rrf };
        let resp = c.search(search(q, method, &user)).await.unwrap().into_inner();
        let at = format!("HYBRID_SEED={seed} round {round}: {subject} {gs:?} asking {q:?}");
        let semantic = resp.sources.iter().find(|s| s.source == "semantic").map(|s| s.state());
        assert_eq!(semantic, Some(SourceState::Ok), "{at}: {:?}", resp.sources);
        // every id of every fused hit (duplicates too) and every context item: readable by the user
        let context =
            resp.context.as_ref().map(|c| c.items.iter().map(|i| i.full_text_ref.as_str()).collect::<Vec<_>>());
        for id in resp.hits.iter().flat_map(ids).chain(context.into_iter().flatten()) {
            let (source, doc) = id.split_once(':').unwrap();
            if !["kb", "wiki", "semantic"].contains(&source) {
                continue; // the live sources' permission tests are their adapters' and spine.rs
            }
            // a kb full_text_ref names its index too (`kb:kb/KB-102`)
            let t = truth
                .get(doc)
                .or_else(|| doc.rsplit_once('/').and_then(|(_, d)| truth.get(d)))
                .unwrap_or_else(|| panic!("{at}: {id} is not a document of the sample company"));
            assert!(user.may_read(t), "{at}: LEAK {id}");
            semantic_hits += usize::from(source == "semantic");
        }
        // a vector hit's full text is given to its user; a document they may not read is refused
        if let Some(h) = resp.hits.iter().find(|h| h.source == "semantic") {
            let doc = c
                .get_document(
                    user.request(GetDocumentRequest { full_text_ref: h.full_text_ref.clone(), ..Default::default() }),
                )
                .await
                .unwrap_or_else(|e| panic!("{at}: fetch {}: {e:?}", h.full_text_ref))
                .into_inner();
            assert!(!doc.content.is_empty(), "{at}");
        }
        let hidden: Vec<&String> = truth.iter().filter(|(_, t)| !user.may_read(t)).map(|(id, _)| id).collect();
        if !hidden.is_empty() {
            let doc = hidden[rng.below(hidden.len())];
            let req = GetDocumentRequest { full_text_ref: format!("semantic:{doc}"), ..Default::default() };
            let err = c.get_document(user.request(req)).await.expect_err(&format!("{at}: fetched hidden {doc}"));
            assert!(matches!(err.code(), Code::PermissionDenied | Code::NotFound), "{at}: {doc}: {err:?}");
            denied_fetches += 1;
        }
    }
    // the test saw the vector source answer and refuse, not only empty lists
    assert!(semantic_hits > 10, "semantic hits checked: {semantic_hits}");
    assert!(denied_fetches > 5, "hidden fetches refused: {denied_fetches}");
}
