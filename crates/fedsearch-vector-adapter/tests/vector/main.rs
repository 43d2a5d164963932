//! The vector adapter against a real Chroma server (`scripts/backends/chroma.sh start`, its URL in
//! `CHROMA_URL`) with the real model (`FEDSEARCH_VECTOR_MODEL_DIR`, from the PyPI wheel), served
//! through the kit on 127.0.0.1:0 and called with the generated client. Spruce Mall's KB
//! articles and wiki pages are indexed once per run into a collection of the tests' own; the
//! permission ground truth is read from the data files here, never from the adapter.

mod outage;

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
    time::Duration,
};

use fedsearch_adapter_kit::{ServerConfig, serve_adapter};
use fedsearch_proto::{
    adapter::{
        FetchRequest, FetchResponse, ResultFrame, SearchFrame, SubQuery, SubQueryDone, result_frame, search_frame,
        source_adapter_client::SourceAdapterClient,
    },
    types::{Filters, SourceHit, SourceState, TimeRange, UserContext},
};
use fedsearch_vector_adapter::{Embedder, VectorAdapter, VectorAdapterConfig, chroma::Chroma, ingest};
use tonic::transport::Channel;

pub const COLLECTION: &str = "fedsearch-test-spruce";

pub fn required_env(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{name} is not set: run `scripts/backends/chroma.sh install && scripts/backends/chroma.sh start`, \
             then `set -a; . .run/chroma.env; set +a` before `cargo test`"
        ),
    }
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Spruce Mall's wiki auth spec, as scripts/backends/dokuwiki.sh loads it into the wiki.
fn spruce_wiki_spec() -> PathBuf {
    let script = std::fs::read_to_string(repo_root().join("scripts/backends/dokuwiki.sh")).unwrap();
    let start = script.find("AUTH_SPEC='").expect("AUTH_SPEC in dokuwiki.sh") + "AUTH_SPEC='".len();
    let end = start + script[start..].find("\n'").expect("end of AUTH_SPEC");
    let path =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fedsearch-vector-test-{}.spec", std::process::id()));
    std::fs::write(&path, &script[start..end]).unwrap();
    path
}

/// A config for `collection` on `url`: every hit returned (min_similarity −1) so permission
/// tests see whole visible sets.
pub fn config(url: &str, collection: &str) -> VectorAdapterConfig {
    let root = repo_root();
    let yaml = format!(
        r#"
server: {{ listen: "127.0.0.1:0", default_timeout: 10s, tls: {{ insecure: true }}, identity: {{ trust_unsigned: true }} }}
store: {{ url: "{url}", request_timeout: 5s }}
model: {{ dir: "{model}" }}
sources:
  - name: semantic
    collection: {collection}
    min_similarity: -1.0
    filterable: [status]
    index:
      - docs: {root}/data/sample/search/kb.json
      - wiki:
          dir: {root}/data/sample/wiki
          namespaces: [public, support, finance]
          acl: [{spec}]
          mtimes: {root}/data/sample/wiki/mtimes.txt
          doc_types: {{ public: policy, support: runbook, finance: procedure }}
"#,
        model = required_env("FEDSEARCH_VECTOR_MODEL_DIR"),
        root = root.display(),
        spec = spruce_wiki_spec().display(),
    );
    fedsearch_core::config::from_yaml_str(&yaml).expect("test config is valid")
}

pub fn embedder() -> Arc<Embedder> {
    static E: OnceLock<Arc<Embedder>> = OnceLock::new();
    E.get_or_init(|| Arc::new(Embedder::load(Path::new(&required_env("FEDSEARCH_VECTOR_MODEL_DIR")), None).unwrap()))
        .clone()
}

pub fn store(url: &str) -> Chroma {
    Chroma::new(url, "default_tenant", "default_database", Duration::from_secs(30)).unwrap()
}

/// Indexes `config`'s inputs into its collection.
pub async fn index(config: &VectorAdapterConfig) -> ingest::Report {
    let source = &config.sources[0];
    let docs = ingest::read_inputs(source, chrono::Utc::now().timestamp()).unwrap();
    ingest::index(&store(&config.store_url().unwrap()), &embedder(), source, &docs, 200).await.unwrap()
}

/// The shared collection, indexed once per test run.
async fn shared() -> VectorAdapterConfig {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let config = config(&required_env("CHROMA_URL"), COLLECTION);
    DONE.get_or_init(|| async {
        index(&config).await;
    })
    .await;
    config
}

pub struct Served {
    pub client: SourceAdapterClient<Channel>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub async fn serve(config: &VectorAdapterConfig) -> Served {
    let url = config.store_url().unwrap();
    let adapter = VectorAdapter::new(config.sources.clone(), store(&url), embedder());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server: ServerConfig = config.server.clone();
    tokio::spawn(async move {
        serve_adapter(adapter, listener, &server, async move {
            let _ = stopped.await;
        })
        .await
        .expect("adapter serves");
    });
    let client = SourceAdapterClient::connect(format!("http://{addr}")).await.expect("client connects");
    Served { client, _stop: stop }
}

pub fn user(subject: &str, groups: &[&str]) -> UserContext {
    UserContext {
        subject: subject.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    }
}

pub async fn search(
    client: &mut SourceAdapterClient<Channel>,
    text: &str,
    user: UserContext,
    limit: u32,
    filters: Option<Filters>,
) -> (Vec<SourceHit>, SubQueryDone) {
    let deadline = std::time::SystemTime::now() + Duration::from_secs(20);
    let query = SubQuery {
        id: "q1".into(),
        source: "semantic".into(),
        text: text.into(),
        original_text: text.into(),
        filters,
        limit,
        user: Some(user),
        deadline: Some(fedsearch_core::time::to_timestamp(deadline)),
        ..Default::default()
    };
    let frames = vec![SearchFrame { frame: Some(search_frame::Frame::SubQuery(query)) }];
    let mut stream = client.search(tokio_stream::iter(frames)).await.expect("search call accepted").into_inner();
    let mut hits = Vec::new();
    let mut done = None;
    while let Some(frame) = stream.message().await.expect("result stream") {
        match frame {
            ResultFrame { frame: Some(result_frame::Frame::Batch(b)) } => hits.extend(b.hits),
            ResultFrame { frame: Some(result_frame::Frame::Done(d)) } => done = Some(d),
            _ => {}
        }
    }
    (hits, done.expect("a SubQueryDone frame"))
}

pub async fn fetch(
    client: &mut SourceAdapterClient<Channel>,
    reference: &str,
    user: UserContext,
) -> Result<FetchResponse, tonic::Status> {
    client
        .fetch(FetchRequest { source: "semantic".into(), reference: reference.into(), user: Some(user) })
        .await
        .map(|r| r.into_inner())
}

fn ids(hits: &[SourceHit]) -> Vec<String> {
    hits.iter().map(|h| h.local_id.clone()).collect()
}

// ---- ground truth, from the data files ------------------------------------------------------

/// One indexed document and who may read it.
#[derive(Debug, Clone)]
struct Truth {
    id: String,
    public: bool,
    groups: Vec<String>,
    users: Vec<String>,
}

impl Truth {
    fn visible_to(&self, u: &UserContext) -> bool {
        self.public || self.users.contains(&u.subject) || self.groups.iter().any(|g| u.groups.contains(g))
    }
}

fn ground_truth() -> Vec<Truth> {
    let kb: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo_root().join("data/sample/search/kb.json")).unwrap())
            .unwrap();
    let strs = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(|x| x.as_str().map(String::from)).collect()
    };
    let mut out: Vec<Truth> = kb["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| Truth {
            id: d["id"].as_str().unwrap().into(),
            public: d["public"].as_bool().unwrap_or(false),
            groups: strs(&d["allowed_groups"]),
            users: strs(&d["allowed_users"]),
        })
        .collect();
    // The wiki (data/sample/COMPANY.md, the spec in dokuwiki.sh): public:* for every wiki account
    // (alice, dave, bob, carol), support:* for alice and dave, finance:* for bob; eve has none.
    for ns in ["public", "support", "finance"] {
        let readers: &[&str] = match ns {
            "public" => &["alice", "dave", "bob", "carol"],
            "support" => &["alice", "dave"],
            _ => &["bob"],
        };
        for f in std::fs::read_dir(repo_root().join("data/sample/wiki").join(ns)).unwrap() {
            let f = f.unwrap().path();
            out.push(Truth {
                id: format!("{ns}:{}", f.file_stem().unwrap().to_string_lossy()),
                public: false,
                groups: vec![],
                users: readers.iter().map(|s| s.to_string()).collect(),
            });
        }
    }
    out
}

/// A small deterministic generator (the tests need variety, not cryptographic randomness).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() as usize) % xs.len()]
    }
}

// ---- tests ----------------------------------------------------------------------------------

#[tokio::test]
async fn indexing_is_rerunnable_and_reports_counts() {
    let url = required_env("CHROMA_URL");
    let cfg = config(&url, "fedsearch-test-reindex");
    let first = index(&cfg).await;
    assert_eq!(first.documents, ground_truth().len());
    assert!(first.chunks >= first.documents);
    let again = index(&cfg).await;
    assert_eq!((again.documents, again.chunks, again.removed), (first.documents, first.chunks, 0));
    // fewer inputs: the chunks of the dropped documents go
    let mut fewer = cfg.clone();
    fewer.sources[0].index.truncate(1); // KB only
    let kb_only = index(&fewer).await;
    assert_eq!(kb_only.removed, first.chunks - kb_only.chunks);
    let chroma = store(&url);
    let id = chroma.collection_id("fedsearch-test-reindex").await.unwrap();
    assert_eq!(chroma.get(&id, None, false).await.unwrap().len(), kb_only.chunks);
}

#[tokio::test]
async fn english_questions_find_the_document_by_meaning() {
    let mut s = serve(&shared().await).await;
    let alice = user("alice", &["employee", "support"]);
    // none of these words is the article's title ("How to handle payment timeouts")
    let (hits, done) =
        search(&mut s.client, "the customer paid but checkout hung and the order failed", alice.clone(), 3, None).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    let top = ids(&hits);
    assert!(top.iter().any(|id| id == "KB-101" || id == "support:runbook_payment_timeout"), "{top:?}");
    let (hits, _) = search(&mut s.client, "what does the shop charge when a parcel is refused", alice, 3, None).await;
    assert!(ids(&hits).iter().any(|id| id.starts_with("public:return_policy")), "{:?}", ids(&hits));
    assert!(hits.iter().all(|h| h.score.is_some() && h.rank >= 1 && !h.snippet.is_empty()));
}

#[tokio::test]
async fn chinese_questions_find_bilingual_documents() {
    let mut s = serve(&shared().await).await;
    let alice = user("alice", &["employee", "support"]);
    let (hits, _) = search(&mut s.client, "支付超时怎么办", alice.clone(), 3, None).await;
    let top = ids(&hits);
    assert!(top.iter().any(|id| id == "KB-101" || id == "support:runbook_payment_timeout"), "{top:?}");
    let (hits, _) = search(&mut s.client, "退货政策", alice, 3, None).await;
    assert!(ids(&hits).iter().any(|id| id.starts_with("public:return_policy")), "{:?}", ids(&hits));
}

#[tokio::test]
async fn randomized_users_see_exactly_their_documents() {
    let mut s = serve(&shared().await).await;
    let truth = ground_truth();
    let subjects = ["alice", "bob", "carol", "dave", "eve", "mallory"];
    let groups = ["employee", "support", "finance", "user", "wholesale", "ops"];
    let questions = ["payment timeout", "退货手续费", "refund reconciliation", "发货延迟", "quarterly revenue"];
    let mut rng = Lcg(0x5eed_f00d);
    for round in 0..30 {
        let subject = *rng.pick(&subjects);
        let gs: Vec<&str> = groups.iter().copied().filter(|_| rng.next().is_multiple_of(3)).collect();
        let u = user(subject, &gs);
        let q = *rng.pick(&questions);
        let visible: BTreeSet<String> = truth.iter().filter(|t| t.visible_to(&u)).map(|t| t.id.clone()).collect();
        // every visible document and nothing else
        let (hits, done) = search(&mut s.client, q, u.clone(), 100, None).await;
        assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
        let got: BTreeSet<String> = ids(&hits).into_iter().collect();
        assert_eq!(got, visible, "round {round}: {u:?} asking {q}");
        // the filter is inside the search: a user's top 2 are two of theirs, not a shared top 2
        // filtered down
        let (top2, _) = search(&mut s.client, q, u.clone(), 2, None).await;
        assert_eq!(top2.len(), visible.len().min(2), "round {round}: {u:?}");
        assert!(top2.iter().all(|h| visible.contains(&h.local_id)), "round {round}: {u:?}");
    }
    // no subject: refused (by the kit) before the store is asked
    let (hits, done) = search(&mut s.client, "payment", user("", &["support"]), 10, None).await;
    assert_eq!(done.state, SourceState::Denied as i32, "{done:?}");
    assert!(hits.is_empty());
}

#[tokio::test]
async fn filters_apply_inside_the_search_and_unknown_ones_are_noted() {
    let mut s = serve(&shared().await).await;
    let bob = user("bob", &["employee", "finance", "support"]);
    let only = |doc_types: &[&str]| Filters {
        doc_types: doc_types.iter().map(|d| d.to_string()).collect(),
        ..Default::default()
    };
    let (hits, _) = search(&mut s.client, "refund", bob.clone(), 50, Some(only(&["procedure"]))).await;
    assert!(!hits.is_empty() && hits.iter().all(|h| h.doc_type == "procedure"), "{:?}", ids(&hits));
    // KB articles are 30+ days old in the seed except the newest; a window of the last 20 days
    let from = chrono::Utc::now().timestamp() - 20 * 86_400;
    let window = Filters {
        time_range: Some(TimeRange { from: Some(prost_types::Timestamp { seconds: from, nanos: 0 }), to: None }),
        ..Default::default()
    };
    let (hits, _) = search(&mut s.client, "payment", bob.clone(), 50, Some(window)).await;
    assert!(hits.iter().all(|h| h.updated_at.as_ref().is_some_and(|t| t.seconds >= from)), "{:?}", ids(&hits));
    let (all, _) = search(&mut s.client, "payment", bob.clone(), 50, None).await;
    assert!(all.len() > hits.len(), "the window excludes older documents");
    let tagged = Filters { tags: vec!["payment_timeout".into()], ..Default::default() };
    let (hits, _) = search(&mut s.client, "anything", bob.clone(), 50, Some(tagged)).await;
    assert!(!hits.is_empty() && hits.iter().all(|h| h.local_id.starts_with("KB-")), "{:?}", ids(&hits));
    let unknown = Filters { equals: [("priority".to_string(), "P1".to_string())].into(), ..Default::default() };
    let (_, done) = search(&mut s.client, "payment", bob, 5, Some(unknown)).await;
    assert_eq!(done.state, SourceState::Ok as i32);
    assert!(done.message.contains("equals.priority"), "{}", done.message);
}

#[tokio::test]
async fn max_hits_caps_a_sub_query_whatever_limit_the_router_asks() {
    let mut config = shared().await;
    let bob = user("bob", &["employee", "finance", "support"]);
    let (uncapped, _) = search(&mut serve(&config).await.client, "refund payment", bob.clone(), 50, None).await;
    assert!(uncapped.len() > 2, "{:?}", ids(&uncapped));
    config.sources[0].max_hits = 2;
    let mut s = serve(&config).await;
    let (capped, done) = search(&mut s.client, "refund payment", bob.clone(), 50, None).await;
    assert_eq!(done.state, SourceState::Ok as i32);
    // the nearest two of the same list
    assert_eq!(ids(&capped), ids(&uncapped)[..2].to_vec());
    let (one, _) = search(&mut s.client, "refund payment", bob, 1, None).await;
    assert_eq!(ids(&one), ids(&uncapped)[..1].to_vec(), "a smaller limit still wins");
}

#[tokio::test]
async fn fetch_rechecks_the_acl() {
    let mut s = serve(&shared().await).await;
    let bob = user("bob", &["employee", "finance"]);
    let doc = fetch(&mut s.client, "finance:refund_reconciliation", bob).await.expect("bob reads finance pages");
    assert!(doc.content.chars().count() > 100 && !doc.title.is_empty());
    let alice = user("alice", &["employee", "support"]);
    let err = fetch(&mut s.client, "finance:refund_reconciliation", alice.clone()).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err:?}");
    assert!(!err.message().contains("refund") && !err.message().contains("127.0.0.1"), "{}", err.message());
    // KB-105 is internal (support only): alice yes, carol no
    let internal = ground_truth().into_iter().find(|t| t.id == "KB-105").unwrap();
    assert!(!internal.public);
    assert!(fetch(&mut s.client, "KB-105", alice).await.is_ok());
    let carol = user("carol", &["employee"]);
    assert_eq!(fetch(&mut s.client, "KB-105", carol.clone()).await.unwrap_err().code(), tonic::Code::PermissionDenied);
    assert_eq!(fetch(&mut s.client, "KB-999", carol.clone()).await.unwrap_err().code(), tonic::Code::NotFound);
    assert_eq!(fetch(&mut s.client, "", carol).await.unwrap_err().code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn a_missing_collection_is_a_clear_error() {
    let mut cfg = shared().await;
    cfg.sources[0].collection = "fedsearch-test-never-indexed".into();
    let mut s = serve(&cfg).await;
    let (_, done) = search(&mut s.client, "payment", user("alice", &[]), 5, None).await;
    assert_eq!(done.state, SourceState::Error as i32);
    assert!(done.message.contains("fedsearch-vector-index"), "{}", done.message);
}

/// The loader reads the packaged files only: the indexer's `--bench` (model load + embeddings)
/// runs in a network namespace with no interface up and with proxies pointing at a dead address.
#[test]
fn the_model_loads_from_the_packaged_files_with_the_network_cut_off() {
    let model = required_env("FEDSEARCH_VECTOR_MODEL_DIR");
    let cfg =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fedsearch-vector-offline-{}.yaml", std::process::id()));
    std::fs::write(
        &cfg,
        format!(
            "server: {{ listen: \"127.0.0.1:0\", tls: {{ insecure: true }}, identity: {{ trust_unsigned: true }} }}\nstore: {{ url: \"http://127.0.0.1:9\" }}\nmodel: {{ dir: \"{model}\" }}\nsources: [{{ name: s, collection: offline }}]\n"
        ),
    )
    .unwrap();
    let bin = env!("CARGO_BIN_EXE_fedsearch-vector-index");
    let isolated = std::process::Command::new("unshare").args(["--net", "true"]).status().is_ok_and(|s| s.success());
    let mut cmd = if isolated {
        let mut c = std::process::Command::new("unshare");
        c.args(["--net", bin]);
        c
    } else {
        eprintln!("unshare --net is not permitted here: proxies only");
        std::process::Command::new(bin)
    };
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
        cmd.env(var, "http://127.0.0.1:9");
    }
    let out = cmd.args(["--config", cfg.to_str().unwrap(), "--bench", "2"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("dimension 384"));
}
