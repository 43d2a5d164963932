//! Test harness: in-process scripted adapters and a router on loopback ports.

#![allow(dead_code)]

use std::{collections::HashMap, net::SocketAddr, time::Duration};

use fedsearch_adapter_kit::{Adapter, ServerConfig, testing::Script};
use fedsearch_proto::api::{SearchRequest, federated_search_client::FederatedSearchClient};
use tokio::sync::oneshot;
use tonic::transport::Channel;

pub const SECRET: &str = "router-test-secret-0123456789abcdef";

pub struct Running {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Running {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

pub async fn start_adapter<A: Adapter>(adapter: A) -> Running {
    start_adapter_on(adapter, "127.0.0.1:0".parse().unwrap()).await
}

/// Starts `adapter` on `addr` (port 0: any free port).
pub async fn start_adapter_on<A: Adapter>(adapter: A, addr: SocketAddr) -> Running {
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let config = ServerConfig {
        listen: addr,
        shutdown_grace: Duration::from_millis(200),
        max_concurrent_subqueries: 64,
        default_timeout: Duration::from_secs(5),
        tls: None,
        identity: None,
    };
    tokio::spawn(async move {
        let _ = fedsearch_adapter_kit::serve_adapter(adapter, listener, &config, async {
            let _ = rx.await;
        })
        .await;
    });
    Running { addr, stop: Some(tx) }
}

pub async fn start_router(yaml: &str) -> Running {
    // As in the binary: the OpenTelemetry layer gives every search a trace id.
    static TELEMETRY: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    TELEMETRY.get_or_init(|| {
        let t = fedsearch_core::telemetry::init("router-test", &Default::default()).expect("telemetry");
        std::mem::forget(t);
    });
    let config: fedsearch_router::RouterConfig = fedsearch_core::config::from_yaml_str(yaml).expect("router config");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = fedsearch_router::serve(config, listener, async {
            let _ = rx.await;
        })
        .await;
    });
    Running { addr, stop: Some(tx) }
}

/// A router config with `sources` given as (name, adapter url, extra yaml flow-map entries).
pub fn router_yaml(sources: &[(&str, &str, &str)], extra: &str) -> String {
    let mut y = format!(
        "server: {{ listen: \"127.0.0.1:0\", shutdown_grace: 200ms }}\nauth: {{ hs256_secret: \"{SECRET}\" }}\n{extra}\nsources:\n"
    );
    for (name, url, more) in sources {
        let more = if more.is_empty() { String::new() } else { format!(", {more}") };
        y.push_str(&format!(
            "  - {{ name: {name}, adapter: \"{url}\", description: \"{name} docs\", timeout: 2s{more} }}\n"
        ));
    }
    y
}

pub fn token(sub: &str, groups: &[&str]) -> String {
    fedsearch_core::auth::mint_hs256(
        SECRET,
        sub,
        &groups.iter().map(|g| g.to_string()).collect::<Vec<_>>(),
        Default::default(),
        Duration::from_secs(300),
    )
    .unwrap()
}

pub async fn client(router: &Running) -> FederatedSearchClient<Channel> {
    FederatedSearchClient::connect(router.url()).await.unwrap()
}

pub fn authed<T>(msg: T, token: &str) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    r
}

pub fn query(q: &str) -> SearchRequest {
    SearchRequest { query: q.into(), ..Default::default() }
}

pub fn scripts(entries: Vec<(&str, Script)>) -> HashMap<String, Script> {
    entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Polls `cond` for up to 5 s.
pub async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..250 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}
