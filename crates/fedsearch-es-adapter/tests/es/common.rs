//! Shared harness: the real OpenSearch node, an in-process gRPC adapter, a bidi search client,
//! scratch indices and the ground truth computed from the seed files.

use std::{
    collections::{BTreeSet, HashMap},
    path::PathBuf,
    time::Duration,
};

use chrono::{DateTime, Utc};
use elasticsearch::{
    Elasticsearch, IndexParts,
    http::transport::Transport,
    indices::{IndicesCreateParts, IndicesDeleteParts, IndicesGetMappingParts},
    params::Refresh,
};
use fedsearch_adapter_kit::serve_adapter;
use fedsearch_es_adapter::{EsAdapter, EsAdapterConfig};
use fedsearch_proto::{
    adapter::{
        FetchRequest, FetchResponse, ResultFrame, SearchFrame, SubQuery, SubQueryDone, result_frame, search_frame,
        source_adapter_client::SourceAdapterClient,
    },
    types::{Filters, SourceHit, SourceState, UserContext},
};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The shared node's URL, from `OPENSEARCH_URL` (written to `.run/opensearch.env` by the script).
pub fn opensearch_url() -> String {
    match std::env::var("OPENSEARCH_URL") {
        Ok(url) if !url.trim().is_empty() => url.trim().to_string(),
        _ => panic!(
            "OPENSEARCH_URL is not set. Start and seed the node, then export its env file:\n  \
             scripts/backends/opensearch.sh start && scripts/backends/opensearch.sh seed\n  \
             set -a; . .run/opensearch.env; set +a\n\
             then run: cargo test -p fedsearch-es-adapter"
        ),
    }
}

/// The shipped example config pointed at `url`, with `extra_sources` (YAML list items) appended.
pub fn config(url: &str, extra_sources: &str) -> EsAdapterConfig {
    let yaml = std::fs::read_to_string(repo_root().join("deploy/config/es-adapter.yaml")).unwrap();
    let yaml = yaml.replace("http://127.0.0.1:9201", url);
    let yaml = format!("{yaml}{extra_sources}");
    fedsearch_core::config::from_yaml_str(&yaml).unwrap_or_else(|e| panic!("test config: {e}"))
}

/// A running in-process adapter and a client connected to it over real gRPC.
pub struct Served {
    pub client: SourceAdapterClient<Channel>,
    /// The adapter's self-check service (`fedsearch doctor`), on the same server.
    pub diagnostics:
        fedsearch_proto::adapter::adapter_diagnostics_service_client::AdapterDiagnosticsServiceClient<Channel>,
    _shutdown: oneshot::Sender<()>,
}

pub async fn serve(config: &EsAdapterConfig) -> Served {
    let adapter = EsAdapter::new(config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // In process: plaintext, the user context believed as sent (the shipped configs' mutual TLS
    // and router-signed identity are covered by the kit's tests and the e2e zero-trust tests).
    let server = config.server.in_process();
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        serve_adapter(adapter, listener, &server, async move {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    let channel = Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    Served {
        client: SourceAdapterClient::new(channel.clone()),
        diagnostics: fedsearch_proto::adapter::adapter_diagnostics_service_client::AdapterDiagnosticsServiceClient::new(
            channel,
        ),
        _shutdown: tx,
    }
}

pub fn user(subject: &str) -> UserContext {
    let groups: &[&str] = match subject {
        "alice" | "dave" => &["employee", "support"],
        "bob" => &["employee", "finance"],
        _ => &["employee"],
    };
    UserContext {
        subject: subject.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    }
}

pub fn sub_query(id: &str, source: &str, text: &str, subject: &str, filters: Filters) -> SubQuery {
    let deadline = std::time::SystemTime::now() + Duration::from_secs(10);
    SubQuery {
        id: id.into(),
        source: source.into(),
        text: text.into(),
        filters: Some(filters),
        limit: 200,
        deadline: Some(fedsearch_core::time::to_timestamp(deadline)),
        user: Some(user(subject)),
        ..Default::default()
    }
}

/// What the adapter streamed back for one sub-query.
#[derive(Debug, Default)]
pub struct Outcome {
    pub hits: Vec<SourceHit>,
    pub done: Option<SubQueryDone>,
}

impl Outcome {
    pub fn ids(&self) -> Vec<String> {
        self.hits.iter().map(|h| h.local_id.clone()).collect()
    }
    pub fn id_set(&self) -> BTreeSet<String> {
        self.ids().into_iter().collect()
    }
    pub fn state(&self) -> SourceState {
        SourceState::try_from(self.done.as_ref().expect("a SubQueryDone").state).unwrap()
    }
    pub fn code(&self) -> &str {
        &self.done.as_ref().expect("a SubQueryDone").code
    }
    pub fn message(&self) -> &str {
        &self.done.as_ref().expect("a SubQueryDone").message
    }
    /// Asserts an OK end and returns self.
    pub fn ok(self) -> Self {
        assert_eq!(self.state(), SourceState::Ok, "sub-query failed: {} {}", self.code(), self.message());
        self
    }
}

/// Sends `queries` on one bidi stream and collects every frame until the stream ends.
pub async fn search(client: &mut SourceAdapterClient<Channel>, queries: Vec<SubQuery>) -> HashMap<String, Outcome> {
    let (tx, rx) = tokio::sync::mpsc::channel(queries.len().max(1));
    for q in queries {
        tx.send(SearchFrame { frame: Some(search_frame::Frame::SubQuery(q)) }).await.unwrap();
    }
    drop(tx);
    let mut stream = client.search(ReceiverStream::new(rx)).await.unwrap().into_inner();
    let mut out: HashMap<String, Outcome> = HashMap::new();
    while let Some(ResultFrame { frame }) = stream.message().await.unwrap() {
        match frame {
            Some(result_frame::Frame::Batch(b)) => out.entry(b.sub_query_id).or_default().hits.extend(b.hits),
            Some(result_frame::Frame::Done(d)) => {
                let id = d.sub_query_id.clone();
                out.entry(id).or_default().done = Some(d);
            }
            None => {}
        }
    }
    out
}

/// One sub-query on its own stream.
pub async fn search_one(client: &mut SourceAdapterClient<Channel>, query: SubQuery) -> Outcome {
    let id = query.id.clone();
    let mut all = search(client, vec![query]).await;
    let outcome = all.remove(&id).expect("an answer for the sub-query");
    assert!(outcome.done.is_some(), "no SubQueryDone for {id}");
    outcome
}

pub async fn fetch(
    client: &mut SourceAdapterClient<Channel>,
    source: &str,
    reference: &str,
    subject: &str,
) -> Result<FetchResponse, tonic::Status> {
    let request = FetchRequest { source: source.into(), reference: reference.into(), user: Some(user(subject)) };
    client.fetch(request).await.map(tonic::Response::into_inner)
}

// ----- ground truth from data/sample/search ----------------------------------------------

/// One seed document as written in the JSON files.
#[derive(Debug, Clone)]
pub struct SeedDoc {
    pub index: String,
    pub id: String,
    pub title: String,
    pub body: String,
    pub tags: Vec<String>,
    pub status: String,
    pub allowed_groups: Vec<String>,
    pub allowed_users: Vec<String>,
    pub public: bool,
    /// `days_ago * 24 + hours_ago`.
    pub hours_ago: i64,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

pub fn seed_docs() -> Vec<SeedDoc> {
    let mut out = Vec::new();
    for file in ["tickets.json", "incidents.json", "kb.json"] {
        let path = repo_root().join("data/sample/search").join(file);
        let spec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let index = spec["index"].as_str().unwrap().to_string();
        for d in spec["docs"].as_array().unwrap() {
            out.push(SeedDoc {
                index: index.clone(),
                id: d["id"].as_str().unwrap().into(),
                title: d["title"].as_str().unwrap_or_default().into(),
                body: d["body"].as_str().unwrap_or_default().into(),
                tags: strings(&d["tags"]),
                status: d["status"].as_str().unwrap_or_default().into(),
                allowed_groups: strings(&d["allowed_groups"]),
                allowed_users: strings(&d["allowed_users"]),
                public: d["public"].as_bool().unwrap_or(false),
                hours_ago: d["days_ago"].as_i64().unwrap_or(0) * 24 + d["hours_ago"].as_i64().unwrap_or(0),
            });
        }
    }
    out
}

impl SeedDoc {
    /// The access rule, written independently of the adapter.
    pub fn visible_to(&self, subject: &str) -> bool {
        let u = user(subject);
        self.public
            || self.allowed_users.contains(&u.subject)
            || self.allowed_groups.iter().any(|g| u.groups.contains(g))
    }

    /// Whether every character-or-word token of `term` occurs in the title or in the body,
    /// tokenised like the `standard` analyzer: runs of ASCII letters/digits/`_` are words
    /// (lower-cased), every other non-space character is its own token.
    pub fn mentions(&self, term: &str) -> bool {
        let q = tokens(term);
        let in_field = |text: &str| {
            let t = tokens(text);
            q.iter().all(|x| t.contains(x))
        };
        in_field(&self.title) || in_field(&self.body)
    }
}

fn tokens(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c.to_ascii_lowercase());
            continue;
        }
        if !word.is_empty() {
            out.insert(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            out.insert(c.to_string());
        }
    }
    if !word.is_empty() {
        out.insert(word);
    }
    out
}

pub fn id_set<'a>(docs: impl IntoIterator<Item = &'a SeedDoc>) -> BTreeSet<String> {
    docs.into_iter().map(|d| d.id.clone()).collect()
}

// ----- direct REST access for setup -----------------------------------------------------------

pub fn rest(url: &str) -> Elasticsearch {
    Elasticsearch::new(Transport::single_node(url).unwrap())
}

async fn json_of(response: Result<elasticsearch::http::response::Response, elasticsearch::Error>) -> Value {
    response.expect("a REST answer").json().await.expect("a JSON answer")
}

/// When the shared node was seeded: `updated_at` of a seed document plus its age.
pub async fn seeded_at(url: &str) -> DateTime<Utc> {
    let es = rest(url);
    let docs = seed_docs();
    let first = docs.iter().find(|d| d.index == "tickets").unwrap();
    let r = json_of(es.get(elasticsearch::GetParts::IndexId("tickets", &first.id)).send().await).await;
    let at = r["_source"]["updated_at"].as_str().expect("seeded tickets index (run opensearch.sh seed)");
    DateTime::parse_from_rfc3339(at).unwrap().with_timezone(&Utc) + chrono::Duration::hours(first.hours_ago)
}

/// A throw-away index with the seed mapping of `tickets`; deleted on drop.
pub struct ScratchIndex {
    pub name: String,
    url: String,
}

impl ScratchIndex {
    pub async fn create(url: &str, purpose: &str, docs: &[Value]) -> Self {
        let mapping =
            json_of(rest(url).indices().get_mapping(IndicesGetMappingParts::Index(&["tickets"])).send().await).await;
        Self::create_with_mappings(url, purpose, mapping["tickets"]["mappings"].clone(), docs).await
    }

    /// A throw-away index with the given `mappings`; deleted on drop.
    pub async fn create_with_mappings(url: &str, purpose: &str, mappings: Value, docs: &[Value]) -> Self {
        let name = format!("es-adapter-test-{purpose}-{}", std::process::id());
        let es = rest(url);
        let _ = es.indices().delete(IndicesDeleteParts::Index(&[&name])).send().await;
        let r = es
            .indices()
            .create(IndicesCreateParts::Index(&name))
            .body(json!({ "settings": { "number_of_shards": 1, "number_of_replicas": 0 }, "mappings": mappings }))
            .send()
            .await
            .unwrap();
        assert!(r.status_code().is_success(), "create {name}: {}", r.text().await.unwrap());
        let scratch = Self { name, url: url.to_string() };
        for d in docs {
            scratch.put(d).await;
        }
        scratch
    }

    /// Indexes (or replaces) `doc` under its `id`, visible to search at once.
    pub async fn put(&self, doc: &Value) {
        let id = doc["id"].as_str().unwrap();
        let r = rest(&self.url)
            .index(IndexParts::IndexId(&self.name, id))
            .body(doc.clone())
            .refresh(Refresh::True)
            .send()
            .await
            .unwrap();
        assert!(r.status_code().is_success(), "index {id}: {}", r.text().await.unwrap());
    }
}

impl Drop for ScratchIndex {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        // Best effort, on a separate thread: Drop may run inside the test's runtime.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let _ = rest(&url).indices().delete(IndicesDeleteParts::Index(&[&name])).send().await;
            });
        })
        .join();
    }
}

/// YAML for one extra source on a scratch index (appended to the shipped sources list).
pub fn scratch_source(name: &str, index: &str, search_fields: &str) -> String {
    format!(
        r#"
  - name: {name}
    index: {index}
    description: scratch
    when_to_use: tests
    doc_types: [ticket]
    search_fields: {search_fields}
    metadata_fields: [status]
    filterable_fields: [status]
"#
    )
}

pub fn doc(id: &str, title: &str, body: &str, groups: &[&str]) -> Value {
    json!({
        "id": id, "doc_type": "ticket", "title": title, "body": body, "status": "open",
        "tags": [], "url": format!("https://helpdesk.example/{id}"),
        "updated_at": "2026-11-01T00:00:00Z",
        "allowed_groups": groups, "allowed_users": [], "public": false,
    })
}
