//! Shared helpers: the adapter served in-process on 127.0.0.1:0, a gRPC client, one-shot
//! searches, and the ground truth of the sample wiki (pages, ACL, mtimes) read from
//! `data/sample/wiki` and `data/sample/COMPANY.md`'s ACL — never from the adapter.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use fedsearch_adapter_kit::serve_adapter;
use fedsearch_proto::{
    adapter::{
        FetchRequest, FetchResponse, ResultFrame, SearchFrame, SubQuery, SubQueryDone, result_frame, search_frame,
        source_adapter_client::SourceAdapterClient,
    },
    types::{Filters, Secret, SourceHit, UserContext},
};
use fedsearch_wiki_adapter::{WikiAdapter, WikiAdapterConfig};
use tonic::transport::Channel;

/// The value of a required env var, or a failure that says how to start the backend.
pub fn required_env(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{name} is not set: start the wiki with `scripts/backends/dokuwiki.sh install && \
             scripts/backends/dokuwiki.sh start`, then `set -a; . .run/dokuwiki.env; set +a` before `cargo test`"
        ),
    }
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A config with one DokuWiki source `wiki` in mapped mode.
pub fn dokuwiki_config(url: &str, secrets: &str) -> WikiAdapterConfig {
    let yaml = format!(
        r#"
server: {{ listen: "127.0.0.1:0", default_timeout: 5s }}
sources:
  - name: wiki
    dokuwiki: {{ url: "{url}" }}
    identity: {{ mode: mapped, secrets_file: "{secrets}" }}
    doc_types: {{ public: policy, support: runbook, finance: procedure }}
"#
    );
    fedsearch_core::config::from_yaml_str(&yaml).expect("test config is valid")
}

/// The config for the shared instance from `DOKUWIKI_URL` / `DOKUWIKI_SECRETS`.
pub fn shared_config() -> WikiAdapterConfig {
    dokuwiki_config(&required_env("DOKUWIKI_URL"), &required_env("DOKUWIKI_SECRETS"))
}

/// A running adapter: the client and the shutdown trigger (drop to stop).
pub struct Served {
    pub client: SourceAdapterClient<Channel>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub async fn serve(config: WikiAdapterConfig) -> Served {
    let adapter = WikiAdapter::build(&config).expect("adapter builds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // In process: plaintext, the user context believed as sent (the shipped configs' mutual TLS
    // and router-signed identity are covered by the kit's tests and the e2e zero-trust tests).
    let server = config.server.in_process();
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

pub fn user(subject: &str) -> UserContext {
    UserContext { subject: subject.into(), ..Default::default() }
}

pub fn delegated(subject: &str, credential: &str) -> UserContext {
    UserContext {
        subject: subject.into(),
        delegated_credential: Some(Secret { value: credential.into() }),
        ..Default::default()
    }
}

/// One sub-query through the real `Search` stream: its hits and its `SubQueryDone`.
pub async fn search_with(
    client: &mut SourceAdapterClient<Channel>,
    source: &str,
    text: &str,
    user: UserContext,
    limit: u32,
    filters: Option<Filters>,
) -> (Vec<SourceHit>, SubQueryDone) {
    let query =
        SubQuery { source: source.into(), text: text.into(), filters, limit, user: Some(user), ..Default::default() };
    search_query(client, query).await
}

/// Any sub-query (id and a 10 s deadline filled in) through the real `Search` stream.
pub async fn search_query(
    client: &mut SourceAdapterClient<Channel>,
    mut query: SubQuery,
) -> (Vec<SourceHit>, SubQueryDone) {
    let deadline = std::time::SystemTime::now() + Duration::from_secs(10);
    query.id = "q1".into();
    query.deadline = Some(fedsearch_core::time::to_timestamp(deadline));
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

pub async fn search(
    client: &mut SourceAdapterClient<Channel>,
    text: &str,
    subject: &str,
) -> (Vec<SourceHit>, SubQueryDone) {
    search_with(client, "wiki", text, user(subject), 50, None).await
}

pub async fn fetch(
    client: &mut SourceAdapterClient<Channel>,
    reference: &str,
    user: UserContext,
) -> Result<FetchResponse, tonic::Status> {
    fetch_from(client, "wiki", reference, user).await
}

pub async fn fetch_from(
    client: &mut SourceAdapterClient<Channel>,
    source: &str,
    reference: &str,
    user: UserContext,
) -> Result<FetchResponse, tonic::Status> {
    client
        .fetch(FetchRequest { source: source.into(), reference: reference.into(), user: Some(user) })
        .await
        .map(|r| r.into_inner())
}

/// One seeded page of `data/sample/wiki/<ns>/<page>.txt`.
#[derive(Debug, Clone)]
pub struct SamplePage {
    pub id: String,
    pub namespace: String,
    pub text: String,
}

pub fn sample_pages() -> Vec<SamplePage> {
    let root = repo_root().join("data/sample/wiki");
    let mut pages = Vec::new();
    for ns in std::fs::read_dir(&root).expect("data/sample/wiki exists") {
        let ns = ns.unwrap().path();
        if !ns.is_dir() || ns.ends_with("xmlrpc-examples") {
            continue;
        }
        let ns_name = ns.file_name().unwrap().to_string_lossy().to_string();
        for f in std::fs::read_dir(&ns).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "txt") {
                let page = f.file_stem().unwrap().to_string_lossy().to_string();
                pages.push(SamplePage {
                    id: format!("{ns_name}:{page}"),
                    namespace: ns_name.clone(),
                    text: std::fs::read_to_string(&f).unwrap(),
                });
            }
        }
    }
    assert!(pages.len() >= 7, "sample pages missing");
    pages
}

/// The seeded ACL (data/sample/COMPANY.md, "Wiki — namespaces and ACL"): who may read a namespace.
pub fn may_read(subject: &str, namespace: &str) -> bool {
    let groups: &[&str] = match subject {
        "alice" | "dave" => &["user", "support"],
        "bob" => &["user", "finance"],
        "carol" => &["user"],
        _ => &[],
    };
    let needs = match namespace {
        "public" => "user",
        "support" => "support",
        "finance" => "finance",
        _ => return false,
    };
    groups.contains(&needs)
}

/// The terms of a query as DokuWiki reads them: words and "quoted phrases", lowercased.
fn query_terms(query: &str) -> Vec<String> {
    let mut terms = Vec::new();
    let mut rest = query.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"').unwrap_or(r.len());
            terms.push(r[..end].to_lowercase());
            rest = r.get(end + 1..).unwrap_or("").trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            terms.push(rest[..end].to_lowercase());
            rest = rest[end..].trim_start();
        }
    }
    terms
}

/// Whether one term occurs: ASCII terms as whole words, CJK terms as substrings (DokuWiki
/// splits CJK per character).
fn has_term(text: &str, t: &str) -> bool {
    let lower = text.to_lowercase();
    if t.is_ascii() {
        lower.match_indices(t).any(|(i, _)| {
            let before = lower[..i].chars().next_back();
            let after = lower[i + t.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_alphanumeric()) && !after.is_some_and(|c| c.is_ascii_alphanumeric())
        })
    } else {
        lower.contains(t)
    }
}

/// DokuWiki's own matching for the terms we use: every term (or "quoted phrase") must occur.
pub fn matches(text: &str, query: &str) -> bool {
    query_terms(query).iter().all(|t| has_term(text, t))
}

/// The adapter's matching: a page is found when ANY term of the query occurs.
pub fn matches_any(text: &str, query: &str) -> bool {
    query_terms(query).iter().any(|t| has_term(text, t))
}

/// `data/sample/wiki/mtimes.txt`: page id → days ago.
pub fn seeded_days_ago() -> BTreeMap<String, f64> {
    let text = std::fs::read_to_string(repo_root().join("data/sample/wiki/mtimes.txt")).unwrap();
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.to_string(), f.next()?.parse().ok()?))
        })
        .collect()
}

#[test]
fn ground_truth_matching_follows_words_and_phrases() {
    assert!(matches("A rejection fee of ¥12", "\"rejection fee\""));
    assert!(!matches("rejection fees", "\"rejection fee\""));
    assert!(matches("客户拒收，收取拒收手续费", "拒收 手续费"));
    assert!(!matches("客户拒收", "拒收 手续费"));
    assert!(matches_any("客户拒收", "拒收 手续费") && !matches_any("客户", "拒收 手续费"));
    assert!(!may_read("eve", "public") && may_read("carol", "public") && !may_read("carol", "support"));
}
