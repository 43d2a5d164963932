//! Starting the real binaries as processes on free loopback ports, and the backends' settings.

use std::{
    collections::HashMap,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use fedsearch_e2e::pki::Pki;
use fedsearch_proto::api::federated_search_client::FederatedSearchClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

pub const SECRET: &str = "e2e-test-secret-0123456789abcdef-xyz";

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// A binary built by `cargo build --workspace` (target/debug/<name>).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap();
    let path = dir.join(name);
    assert!(path.exists(), "{} is missing: run `cargo build --workspace` (make test does) first", path.display());
    path
}

/// An environment variable the backend scripts write; missing → a clear failure.
pub fn need_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: start the backends with `scripts/backends/all.sh start` and \
             `eval \"$(scripts/backends/all.sh env)\"`, or run `make test`"
        )
    })
}

/// A free loopback port for a child process. Ports come from 20000–29999, below the kernel's
/// ephemeral range (so outgoing connections never take one before the child binds it), and are
/// never handed out twice in this test binary (tests run in parallel).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let _ = NEXT.compare_exchange(0, 20_000 + (std::process::id() % 5_000) as u16, Ordering::SeqCst, Ordering::SeqCst);
    for _ in 0..10_000 {
        let port = 20_000 + NEXT.fetch_add(1, Ordering::SeqCst).wrapping_sub(20_000) % 10_000;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in 20000-29999 on 127.0.0.1");
}

/// A TLS client identity: the CA to trust and a certificate to show (PEM).
#[derive(Clone)]
pub struct TlsClient {
    pub ca: String,
    pub cert: Option<(String, String)>,
}

impl TlsClient {
    /// The router's identity of `pki` (the one name the services allow).
    pub fn router(pki: &Pki) -> TlsClient {
        let (ca, cert, key) = pki.client_pems("router");
        TlsClient { ca, cert: Some((cert, key)) }
    }

    /// Connects to `url` (https://) with this identity.
    pub async fn connect(&self, url: &str) -> Result<Channel, tonic::transport::Error> {
        let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&self.ca));
        if let Some((cert, key)) = &self.cert {
            tls = tls.identity(Identity::from_pem(cert, key));
        }
        Endpoint::from_shared(url.to_string())?.tls_config(tls)?.connect().await
    }
}

/// A service process; SIGTERM (graceful: flushes spans) on drop.
pub struct Proc {
    pub name: String,
    pub host: String,
    pub port: u16,
    /// The admin HTTP port (`/metrics`, `/healthz`, `/readyz`).
    pub admin_port: u16,
    child: Child,
    log: PathBuf,
    args: Vec<String>,
    env: HashMap<String, String>,
    /// How to reach it when it serves mutual TLS.
    pub tls: Option<TlsClient>,
}

impl Proc {
    pub fn spawn(name: &str, args: &[&str], env: &HashMap<String, String>, logs: &Path) -> Proc {
        let listen = env.get("FEDSEARCH_SERVER__LISTEN").expect("FEDSEARCH_SERVER__LISTEN with a port");
        let port =
            listen.rsplit(':').next().and_then(|p| p.parse().ok()).expect("FEDSEARCH_SERVER__LISTEN with a port");
        let host = listen.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h).to_string();
        let mut env = env.clone();
        let admin_port = free_port();
        env.entry("FEDSEARCH_ADMIN__LISTEN".into()).or_insert_with(|| format!("127.0.0.1:{admin_port}"));
        let log = logs.join(format!("{name}.log"));
        let child = Self::launch(name, args, &env, &log);
        let args = args.iter().map(|a| a.to_string()).collect();
        Proc { name: name.into(), host, port, admin_port, child, log, args, env, tls: None }
    }

    /// This process serves mutual TLS; `client` may call it.
    pub fn with_tls(mut self, client: TlsClient) -> Proc {
        self.tls = Some(client);
        self
    }

    /// A channel to this process (over TLS with its client identity when it serves TLS).
    pub async fn channel(&self) -> Result<Channel, tonic::transport::Error> {
        match &self.tls {
            Some(tls) => tls.connect(&self.url()).await,
            None => Channel::from_shared(self.url()).unwrap().connect().await,
        }
    }

    fn launch(name: &str, args: &[&str], env: &HashMap<String, String>, log: &Path) -> Child {
        let out = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
        Command::new(bin(name))
            .args(args)
            .envs(env)
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"))
    }

    /// The process id (changes when it is restarted).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (e.g. `KILL`, `STOP`, `CONT`) to the process.
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill").arg(format!("-{signal}")).arg(self.child.id().to_string()).status();
        assert!(ok.is_ok_and(|s| s.success()), "kill -{signal} {}", self.name);
    }

    /// kill -9, and waits for the exit.
    pub fn kill9(&mut self) {
        self.signal("KILL");
        let _ = self.child.wait();
    }

    /// Starts the process again with the same arguments, environment and port.
    pub async fn restart(&mut self) {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.child = Self::launch(&self.name, &args, &self.env, &self.log);
        self.wait_healthy().await;
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}:{}", self.host, self.port)
    }

    /// Waits until grpc.health.v1 says SERVING (or the process died).
    pub async fn wait_healthy(&mut self) {
        for _ in 0..300 {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{} exited with {status}; log:\n{}", self.name, self.log_text());
            }
            if let Ok(ch) = self.channel().await {
                let mut health = tonic_health::pb::health_client::HealthClient::new(ch);
                if let Ok(r) = health.check(tonic_health::pb::HealthCheckRequest { service: String::new() }).await
                    && r.into_inner().status == tonic_health::pb::health_check_response::ServingStatus::Serving as i32
                {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{} did not become healthy; log:\n{}", self.name, self.log_text());
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM and wait for the exit.
    pub fn stop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The five services, started against the real backends.
pub struct Stack {
    pub procs: Vec<Proc>,
    pub router_url: String,
    /// The routers beyond the first (`StackOptions.routers`).
    pub other_routers: Vec<String>,
    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub mcp_url: String,
    /// The throwaway CA and certificates every internal hop uses (mutual TLS).
    pub pki: Pki,
    _logs: tempfile::TempDir,
}

#[derive(Default)]
pub struct StackOptions {
    pub otlp_endpoint: Option<String>,
    /// SQL database URL for the sql-adapter (default: the SQLite file, read-only).
    pub sql_url: Option<String>,
    /// More keys of the router's `mcp:` section (YAML lines indented by two spaces).
    pub mcp_extra: Option<&'static str>,
    /// The wiki-adapter's DokuWiki (default: DOKUWIKI_URL).
    pub wiki_url: Option<String>,
    /// More environment for the router (`FEDSEARCH_<SECTION>__<KEY>` overrides).
    pub router_env: Vec<(&'static str, String)>,
    /// Processes per adapter (default 1), on 127.0.0.1, 127.0.0.2, … with one port.
    pub adapter_replicas: usize,
    /// Router processes (default 1) over the same adapters and fusion.
    pub routers: usize,
    /// Also the vector source: its adapter and its registry entry (tests/e2e/hybrid.rs).
    pub vector: bool,
}

impl Stack {
    pub async fn start(opts: StackOptions) -> Stack {
        let logs = tempfile::tempdir().unwrap();
        let root = root();
        let mut common = HashMap::new();
        common.insert("FEDSEARCH_TELEMETRY__LOG_FORMAT".to_string(), "json".to_string());
        if let Some(ep) = &opts.otlp_endpoint {
            common.insert("FEDSEARCH_TELEMETRY__OTLP_ENDPOINT".to_string(), ep.clone());
        }
        let with = |extra: &[(&str, String)]| {
            let mut env = common.clone();
            for (k, v) in extra {
                env.insert(k.to_string(), v.clone());
            }
            env
        };
        let cfg = |name: &str| root.join("deploy/config").join(format!("{name}.yaml")).display().to_string();
        let listen = |port: u16| ("FEDSEARCH_SERVER__LISTEN", format!("127.0.0.1:{port}"));

        let opensearch = need_env("OPENSEARCH_URL");
        let wiki_url = opts.wiki_url.clone().unwrap_or_else(|| need_env("DOKUWIKI_URL"));
        let wiki_secrets = need_env("DOKUWIKI_SECRETS");
        let sql_url = opts.sql_url.clone().unwrap_or_else(|| need_env("SQLITE_URL"));
        let es_cfg = std::fs::read_to_string(cfg("es-adapter")).unwrap().replace("http://127.0.0.1:9201", &opensearch);
        let es_cfg_path = logs.path().join("es-adapter.yaml");
        std::fs::write(&es_cfg_path, es_cfg).unwrap();

        // Every internal hop is mutual TLS with certificates of a CA made for this stack.
        let pki = Pki::generate(&logs.path().join("tls"));
        let secured = |service: &str, extra: &[(&str, String)]| {
            let mut all: Vec<(&str, String)> = pki.env(service);
            all.extend(extra.iter().cloned());
            with(&all)
        };
        let client = TlsClient::router(&pki);
        let (fusion_port, es_port, sql_port, wiki_port, router_port, mcp_port) =
            (free_port(), free_port(), free_port(), free_port(), free_port(), free_port());
        let mut procs = vec![
            Proc::spawn(
                "fusion",
                &["--config", &cfg("fusion")],
                &secured("fusion", &[listen(fusion_port)]),
                logs.path(),
            )
            .with_tls(client.clone()),
        ];
        // Replica r of an adapter listens on 127.0.0.(r+1), all on the adapter's one port.
        let replicas = opts.adapter_replicas.max(1);
        let at = |ip: u8, port: u16| ("FEDSEARCH_SERVER__LISTEN", format!("127.0.0.{ip}:{port}"));
        for r in 1..=replicas as u8 {
            procs.push(
                Proc::spawn(
                    "es-adapter",
                    &["--config", es_cfg_path.to_str().unwrap()],
                    &secured("es-adapter", &[at(r, es_port)]),
                    logs.path(),
                )
                .with_tls(client.clone()),
            );
            procs.push(
                Proc::spawn(
                    "sql-adapter",
                    &["--config", &cfg("sql-adapter")],
                    &secured("sql-adapter", &[at(r, sql_port), ("SQL_ADAPTER_DATABASE_URL", sql_url.clone())]),
                    logs.path(),
                )
                .with_tls(client.clone()),
            );
            procs.push(
                Proc::spawn(
                    "wiki-adapter",
                    &["--config", &cfg("wiki-adapter")],
                    &secured(
                        "wiki-adapter",
                        &[
                            at(r, wiki_port),
                            ("DOKUWIKI_URL", wiki_url.clone()),
                            ("DOKUWIKI_SECRETS", wiki_secrets.clone()),
                        ],
                    ),
                    logs.path(),
                )
                .with_tls(client.clone()),
            );
        }
        let vector = opts.vector.then(|| crate::hybrid::vector_adapter(&pki, logs.path(), &common));
        // The router's address of an adapter: every replica, as a list.
        let address =
            |port: u16| (1..=replicas).map(|r| format!("127.0.0.{r}:{port}")).collect::<Vec<_>>().join(",https://");
        let router_cfg = std::fs::read_to_string(cfg("router"))
            .unwrap()
            .replace("127.0.0.1:50052", &format!("127.0.0.1:{fusion_port}"))
            .replace("127.0.0.1:50061", &address(es_port))
            .replace("127.0.0.1:50062", &address(sql_port))
            .replace("127.0.0.1:50063", &address(wiki_port))
            .replace("127.0.0.1:50071", &format!("127.0.0.1:{mcp_port}"));
        // `sources:` is the file's last key: the vector entry goes at its end.
        let router_cfg = match vector {
            Some((adapter, entry)) => {
                procs.push(adapter);
                router_cfg + &entry
            }
            None => router_cfg,
        };
        let router_cfg = match opts.mcp_extra {
            Some(extra) => {
                // The extra keys replace the example's own (keys of the mcp section only).
                let keys: Vec<String> = extra
                    .lines()
                    .filter_map(|l| l.strip_prefix("  ").filter(|k| !k.starts_with(' ')))
                    .filter_map(|l| l.split_once(':').map(|(k, _)| format!("  {k}:")))
                    .collect();
                let kept: String = router_cfg
                    .lines()
                    .filter(|l| !keys.iter().any(|k| l.starts_with(k.as_str())))
                    .map(|l| format!("{l}\n"))
                    .collect();
                let listen = format!("  listen: 127.0.0.1:{mcp_port}\n");
                assert!(kept.contains(&listen), "the router config has an mcp section");
                kept.replace(&listen, &format!("{listen}{extra}"))
            }
            None => router_cfg,
        };
        let router_cfg_path = logs.path().join("router.yaml");
        std::fs::write(&router_cfg_path, router_cfg).unwrap();
        procs.push(Proc::spawn(
            "router",
            &["--config", router_cfg_path.to_str().unwrap()],
            &secured(
                "router",
                &[listen(router_port), ("FEDSEARCH_AUTH__HS256_SECRET", SECRET.to_string())]
                    .into_iter()
                    .chain(opts.router_env.iter().cloned())
                    .collect::<Vec<_>>(),
            ),
            logs.path(),
        ));
        // More routers over the same adapters and fusion, each with its own ports.
        let mut other_routers = Vec::new();
        for _ in 1..opts.routers.max(1) {
            let (port, mcp) = (free_port(), free_port());
            procs.push(Proc::spawn(
                "router",
                &["--config", router_cfg_path.to_str().unwrap()],
                &secured(
                    "router",
                    &[
                        listen(port),
                        ("FEDSEARCH_MCP__LISTEN", format!("127.0.0.1:{mcp}")),
                        ("FEDSEARCH_AUTH__HS256_SECRET", SECRET.to_string()),
                    ]
                    .into_iter()
                    .chain(opts.router_env.iter().cloned())
                    .collect::<Vec<_>>(),
                ),
                logs.path(),
            ));
            other_routers.push(format!("http://127.0.0.1:{port}"));
        }
        for p in procs.iter_mut() {
            p.wait_healthy().await;
        }
        Stack {
            router_url: format!("http://127.0.0.1:{router_port}"),
            other_routers,
            mcp_url: format!("http://127.0.0.1:{mcp_port}/mcp"),
            procs,
            pki,
            _logs: logs,
        }
    }

    pub async fn client(&self) -> FederatedSearchClient<Channel> {
        FederatedSearchClient::connect(self.router_url.clone()).await.unwrap()
    }

    /// The process named `name`.
    pub fn proc(&mut self, name: &str) -> &mut Proc {
        self.procs.iter_mut().find(|p| p.name == name).unwrap_or_else(|| panic!("no process {name}"))
    }

    pub fn logs(&self) -> String {
        self.procs.iter().map(|p| format!("==== {}\n{}", p.name, p.log_text())).collect()
    }
}

/// A token for one of the sample company's people (data/sample/COMPANY.md).
pub fn token_for(user: &str) -> String {
    let (groups, attrs): (&[&str], &[(&str, &str)]) = match user {
        "alice" => (&["employee", "support"], &[("business_lines", "retail")]),
        "dave" => (&["employee", "support"], &[("business_lines", "wholesale")]),
        "bob" => (&["employee", "finance"], &[("business_lines", "retail,wholesale")]),
        "carol" | "eve" => (&["employee"], &[]),
        other => panic!("unknown sample user {other}"),
    };
    fedsearch_core::auth::mint_hs256(
        SECRET,
        user,
        &groups.iter().map(|g| g.to_string()).collect::<Vec<_>>(),
        attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        Duration::from_secs(600),
    )
    .unwrap()
}

pub fn authed<T>(msg: T, user: &str) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.metadata_mut().insert("authorization", format!("Bearer {}", token_for(user)).parse().unwrap());
    r
}
