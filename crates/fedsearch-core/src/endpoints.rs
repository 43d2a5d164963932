//! How one service reaches another: the one endpoint shape ([`ServiceEndpoint`]) of every
//! config that names a service, and the channels built from it.
//!
//! A [`ServiceEndpoint`] is an address (one URL, or several: replicas), the TLS settings of that
//! endpoint over the caller's own ([`EndpointTls`]: `server_name`, `ca_file`), and its connect
//! and request timeouts. The router's `sources[].adapter` and `fusion.endpoint`, the CLI's
//! `--router` and the doctor all read this one type.
//!
//! An address is one URL or a comma-separated list of them. A URL whose host is an IP address
//! is one endpoint; a URL whose host is a name is every address the name resolves to, resolved
//! again every `resolve_every` — a Kubernetes headless Service gives one address per ready pod.
//! Every endpoint is asked for its gRPC health each [`CHECK_EVERY`]; the ones that answer
//! SERVING feed one channel that balances requests over them (tower's power-of-two-choices
//! balancer, by in-flight requests). A replica that dies, hangs or drains (NOT_SERVING) leaves
//! the balancer at its next check, and one that comes back, or a new pod, joins it (outlier
//! ejection by active health checks). A single IP endpoint is a plain lazily-connecting channel.
//!
//! [`replicated`] also publishes the set those checks found serving ([`Replicas`]: each serving
//! replica's address and the endpoint to reach it) as it changes, for a caller that keeps
//! connections of its own to every replica (the router's shared adapter streams): a single IP
//! endpoint is a set of one, always there.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    time::Duration,
};

use std::sync::Arc;

use serde::{Deserialize, Deserializer, de};
use tokio::sync::watch;
use tonic::transport::{Channel, Endpoint, channel::Change};

use crate::tls::{ClientTls, EndpointTls, TlsConfig};

/// The connect timeout of an endpoint that sets none.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// How often a name in an address is resolved again (new replicas join).
pub const RESOLVE_EVERY: Duration = Duration::from_secs(10);

/// Where and how a service is called: written in YAML either as a plain address —
/// `"https://es-adapter.fedsearch.svc:50061"`, replicas comma-separated — or as a map
///
/// ```yaml
/// url: https://es-adapter.fedsearch.svc:50061   # or a list of URLs (replicas)
/// tls: { server_name: es.other.svc, ca_file: /etc/fedsearch/tls/other-ca.pem }
/// connect_timeout: 500ms
/// timeout: 2s
/// ```
///
/// `tls` overrides the caller's own client TLS (`internal_tls` of the router) for this endpoint
/// only; `timeout` is how long one call may take (for a router source: the source's time).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServiceEndpoint {
    /// One URL, or several comma-separated (replicas of one service).
    pub url: String,
    pub tls: Option<EndpointTls>,
    pub connect_timeout: Option<Duration>,
    pub timeout: Option<Duration>,
}

/// The map form of [`ServiceEndpoint`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointMap {
    #[serde(alias = "urls", alias = "address")]
    url: Urls,
    #[serde(default)]
    tls: Option<EndpointTls>,
    #[serde(default, with = "crate::config::duration::option")]
    connect_timeout: Option<Duration>,
    #[serde(default, with = "crate::config::duration::option")]
    timeout: Option<Duration>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Urls {
    One(String),
    Many(Vec<String>),
}

impl<'de> Deserialize<'de> for ServiceEndpoint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> de::Visitor<'de> for Visitor {
            type Value = ServiceEndpoint;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "an address like https://host:port, or a map with `url`, `tls`, `connect_timeout`, `timeout`",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ServiceEndpoint::new(v))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let m = EndpointMap::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let url = match m.url {
                    Urls::One(u) => u,
                    Urls::Many(list) => list.join(","),
                };
                Ok(ServiceEndpoint { url, tls: m.tls, connect_timeout: m.connect_timeout, timeout: m.timeout })
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// An older key next to the one that replaced it: both may not be set to different values.
fn fold<T: PartialEq>(new: &mut Option<T>, old: Option<T>, new_key: &str, old_key: &str) -> Result<(), String> {
    match (new.as_ref(), old) {
        (Some(n), Some(o)) if *n != o => {
            Err(format!("`{old_key}` is the older spelling of `{new_key}`; they differ: set only `{new_key}`"))
        }
        (None, Some(o)) => {
            *new = Some(o);
            Ok(())
        }
        _ => Ok(()),
    }
}

impl ServiceEndpoint {
    /// An endpoint at `url` (one URL or a comma-separated list) with the caller's defaults.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into().trim().to_string(), ..Default::default() }
    }

    /// Every URL of the address.
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        self.url.split(',').map(str::trim).filter(|u| !u.is_empty())
    }

    /// Whether every URL is `https://`.
    pub fn is_https(&self) -> bool {
        self.urls().all(|u| u.starts_with("https://"))
    }

    pub fn connect_timeout_or(&self, default: Duration) -> Duration {
        self.connect_timeout.unwrap_or(default)
    }

    /// Folds the keys an older config wrote next to the endpoint (`tls:`, `connect_timeout:`,
    /// `timeout:` of the section) into it; `at` names the endpoint's key (e.g.
    /// `sources[0].adapter`) and `older` the section they were written in (`sources[0]`).
    pub fn fold_older(
        &mut self,
        at: &str,
        older: &str,
        tls: Option<EndpointTls>,
        connect_timeout: Option<Duration>,
        timeout: Option<Duration>,
    ) -> Result<(), String> {
        fold(&mut self.tls, tls, &format!("{at}.tls"), &format!("{older}.tls"))?;
        let (new, old) = (format!("{at}.connect_timeout"), format!("{older}.connect_timeout"));
        fold(&mut self.connect_timeout, connect_timeout, &new, &old)?;
        fold(&mut self.timeout, timeout, &format!("{at}.timeout"), &format!("{older}.timeout"))
    }

    /// Checks the endpoint as `what` (its config key): every URL `http://` or `https://` with
    /// a host, the scheme agreeing with the caller's client TLS (`https://` with certificates,
    /// `http://` with `insecure: true`), the override on TLS that is on, positive timeouts.
    pub fn validate(&self, client: Option<&TlsConfig>, what: &str) -> Result<(), String> {
        if self.urls().next().is_none() {
            return Err(format!("`{what}` names no URL"));
        }
        for url in self.urls() {
            let t = parse(url).map_err(|e| format!("`{what}`: {e}"))?;
            if t.scheme != "http" && t.scheme != "https" {
                return Err(format!("`{what}`: `{url}` must be an http:// or https:// URL"));
            }
            if let Some(tls) = client {
                tls.check_scheme(url).map_err(|e| format!("`{what}`: {e}"))?;
            }
        }
        if let Some(o) = &self.tls {
            o.validate(client, &format!("{what}.tls"))?;
        }
        for (key, t) in [("connect_timeout", self.connect_timeout), ("timeout", self.timeout)] {
            if t.is_some_and(|t| t.is_zero()) {
                return Err(format!("`{what}.{key}` must be positive"));
            }
        }
        Ok(())
    }

    /// The client TLS of this endpoint: `base` (the caller's own; `None` = plaintext) with this
    /// endpoint's `tls` over it.
    pub fn client_tls(&self, base: Option<&Arc<ClientTls>>, what: &str) -> Result<Option<Arc<ClientTls>>, String> {
        ClientTls::for_endpoint(base, self.tls.as_ref(), &format!("{what}.tls"))
    }

    /// A channel to every replica of the address ([`replicated`]), over mutual TLS with
    /// `base` and this endpoint's overrides when `base` is set (`what` names the endpoint in
    /// messages). Calls on it are not given a timeout: callers set each call's deadline.
    pub fn channel(&self, base: Option<&Arc<ClientTls>>, what: &str) -> anyhow::Result<Channel> {
        Ok(self.replicated(base, what)?.channel)
    }

    /// [`ServiceEndpoint::channel`] and the serving replicas behind it, as they change
    /// ([`replicated`]).
    pub fn replicated(&self, base: Option<&Arc<ClientTls>>, what: &str) -> anyhow::Result<Replicated> {
        let tls = self.client_tls(base, what).map_err(anyhow::Error::msg)?;
        replicated(&self.url, self.connect_timeout_or(DEFAULT_CONNECT_TIMEOUT), RESOLVE_EVERY, tls)
    }

    /// A channel to the first URL only (a tool checking one replica at a time names it with
    /// [`ServiceEndpoint::replica`]), connecting on first use, with the request `timeout` (if
    /// set) on every call; over TLS as [`ServiceEndpoint::channel`].
    pub fn lazy_channel(&self, base: Option<&Arc<ClientTls>>, what: &str) -> anyhow::Result<Channel> {
        let url = self.urls().next().ok_or_else(|| anyhow::anyhow!("`{what}` names no URL"))?;
        let mut endpoint = crate::grpc::client_endpoint(url, self.connect_timeout_or(DEFAULT_CONNECT_TIMEOUT))?;
        if let Some(t) = self.timeout {
            endpoint = endpoint.timeout(t);
        }
        match self.client_tls(base, what).map_err(anyhow::Error::msg)? {
            Some(tls) if url.starts_with("https://") => Ok(tls.endpoint(endpoint, None)?.connect_lazy()),
            Some(_) => anyhow::bail!("`{what}`: `{url}` must be https:// (TLS is on)"),
            None if url.starts_with("https://") => {
                anyhow::bail!("`{what}`: `{url}` is https:// but there are no client TLS settings to call it with")
            }
            None => Ok(endpoint.connect_lazy()),
        }
    }

    /// This endpoint with one of its URLs only (same TLS and timeouts).
    pub fn replica(&self, url: &str) -> Self {
        Self { url: url.trim().to_string(), ..self.clone() }
    }
}

/// One URL of an address list, checked.
#[derive(Debug, Clone)]
struct Target {
    scheme: String,
    host: String,
    port: u16,
    ip: Option<std::net::IpAddr>,
}

fn parse(url: &str) -> anyhow::Result<Target> {
    let uri: http::Uri = url.trim().parse().map_err(|e| anyhow::anyhow!("invalid endpoint `{url}`: {e}"))?;
    let scheme = uri.scheme_str().ok_or_else(|| anyhow::anyhow!("endpoint `{url}` needs http:// or https://"))?;
    let host = uri.host().ok_or_else(|| anyhow::anyhow!("endpoint `{url}` has no host"))?;
    let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    Ok(Target { scheme: scheme.to_string(), host: bare.to_string(), port, ip: bare.parse().ok() })
}

/// The replicas of an address that answered their last health check SERVING, each with the
/// endpoint that reaches it (its TLS settings included). An endpoint is built once per replica
/// and certificate: the same `Arc` while the address stays known, a new one when the TLS files
/// change, so a caller can tell its connections are stale with [`Arc::ptr_eq`].
#[derive(Debug, Clone, Default)]
pub struct Replicas {
    /// False until the first round of health checks has ended (nothing is known yet).
    pub checked: bool,
    pub serving: BTreeMap<SocketAddr, Arc<Endpoint>>,
}

impl Replicas {
    /// Whether `other` names the same replicas with the same endpoints.
    pub fn same_as(&self, other: &Replicas) -> bool {
        self.checked == other.checked
            && self.serving.len() == other.serving.len()
            && self.serving.iter().zip(&other.serving).all(|((a, x), (b, y))| a == b && Arc::ptr_eq(x, y))
    }
}

/// A channel balanced over the serving replicas of an address, and those replicas as they
/// change ([`replicated`]).
#[derive(Debug, Clone)]
pub struct Replicated {
    pub channel: Channel,
    pub replicas: watch::Receiver<Replicas>,
}

/// A channel to every replica behind `address` (see the module doc), over mutual TLS when
/// `tls` is set (then every URL must be `https://`), with the serving replicas it balances over
/// published as they change (a single IP endpoint: a set of one, with a new endpoint when the TLS
/// files change). When the TLS files change, every endpoint is replaced by one with the new
/// certificate: calls in flight finish on the connections they have, new calls open connections
/// with the new files.
pub fn replicated(
    address: &str,
    connect_timeout: Duration,
    resolve_every: Duration,
    tls: Option<Arc<ClientTls>>,
) -> anyhow::Result<Replicated> {
    let targets = address.split(',').map(parse).collect::<anyhow::Result<Vec<_>>>()?;
    let https = tls.is_some();
    if let Some(t) = targets.iter().find(|t| (t.scheme == "https") != https) {
        anyhow::bail!(
            "endpoint `{}://{}:{}` must be {} (TLS is {})",
            t.scheme,
            t.host,
            t.port,
            if https { "https://" } else { "http://" },
            if https { "on" } else { "off: insecure" }
        );
    }
    let build = {
        let tls = tls.clone();
        move |url: &str, name: Option<&str>| -> anyhow::Result<Endpoint> {
            let ep = crate::grpc::client_endpoint(url, connect_timeout)?;
            match &tls {
                Some(t) => t.endpoint(ep, name),
                None => Ok(ep),
            }
        }
    };
    if let [one] = targets.as_slice()
        && let Some(ip) = one.ip
    {
        let addr = SocketAddr::new(ip, one.port);
        let url = address.trim().to_string();
        let one_of =
            move |ep: &Endpoint| Replicas { checked: true, serving: BTreeMap::from([(addr, Arc::new(ep.clone()))]) };
        let endpoint = build(&url, None)?;
        let (publish, replicas) = watch::channel(one_of(&endpoint));
        let Some(tls) = tls else {
            // Plaintext: the set never changes (the sender goes; receivers keep the value).
            return Ok(Replicated { channel: endpoint.connect_lazy(), replicas });
        };
        // One endpoint behind a balancer of one, so that it can be replaced on a new certificate.
        let (channel, changes) = Channel::balance_channel::<u8>(4);
        let mut generation = tls.generation();
        changes.try_send(Change::Insert(0, endpoint)).map_err(|_| anyhow::anyhow!("channel closed"))?;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(crate::tls::RELOAD_CHECK).await;
                // Nobody uses the channel or reads the set any more.
                if changes.is_closed() && publish.is_closed() {
                    return;
                }
                let now = tls.generation();
                if now != generation {
                    generation = now;
                    match build(&url, None) {
                        Ok(ep) => {
                            publish.send_replace(one_of(&ep));
                            let _ = changes.send(Change::Insert(0, ep)).await;
                        }
                        Err(e) => tracing::warn!(error = %e, "cannot use the new TLS files for an endpoint"),
                    }
                }
            }
        });
        return Ok(Replicated { channel, replicas });
    }
    let (channel, changes) = Channel::balance_channel::<SocketAddr>(64);
    let (publish, replicas) = watch::channel(Replicas::default());
    tokio::spawn(async move {
        let scheme = targets.first().map_or("http", |t| t.scheme.as_str()).to_string();
        let url = |addr: &SocketAddr| format!("{scheme}://{addr}");
        // Every known address: its endpoint (built with the name its certificate is checked
        // against: the name it was resolved from) and a channel of its own for the health checks.
        let mut known: BTreeMap<SocketAddr, (Arc<Endpoint>, Channel)> = BTreeMap::new();
        let mut balanced: BTreeSet<SocketAddr> = BTreeSet::new();
        let mut resolved_at: Option<tokio::time::Instant> = None;
        let mut generation = tls.as_ref().map(|t| t.generation());
        loop {
            // Nobody uses the channel or reads the set any more.
            if changes.is_closed() && publish.is_closed() {
                return;
            }
            let now = tls.as_ref().map(|t| t.generation());
            let renewed = now != generation;
            generation = now;
            if renewed {
                // New certificate: new endpoints, and every balanced endpoint again.
                known.clear();
                balanced.clear();
            }
            if renewed || resolved_at.is_none_or(|t| t.elapsed() >= resolve_every) {
                let wanted = resolve_all(&targets).await;
                // A name that resolves to nothing right now (DNS hiccup) keeps what it had.
                if !wanted.is_empty() {
                    known.retain(|a, _| wanted.contains_key(a));
                    for (addr, name) in wanted {
                        if let std::collections::btree_map::Entry::Vacant(e) = known.entry(addr)
                            && let Ok(ep) = build(&url(&addr), name.as_deref())
                        {
                            let check = ep.connect_lazy();
                            e.insert((Arc::new(ep), check));
                        }
                    }
                }
                resolved_at = Some(tokio::time::Instant::now());
            }
            let checks = known.iter().map(|(addr, (_, ch))| async move {
                (*addr, crate::grpc::is_serving(ch.clone(), CHECK_EVERY / 2).await)
            });
            let healthy: BTreeSet<SocketAddr> =
                futures::future::join_all(checks).await.into_iter().filter(|(_, ok)| *ok).map(|(a, _)| a).collect();
            for gone in balanced.difference(&healthy) {
                tracing::info!(endpoint = %gone, "endpoint left the balancer (not serving)");
                let _ = changes.send(Change::Remove(*gone)).await;
            }
            for new in healthy.difference(&balanced) {
                let Some((ep, _)) = known.get(new) else { continue };
                // Inserting a known key replaces its endpoint (a renewed certificate).
                let _ = changes.send(Change::Insert(*new, Endpoint::clone(ep))).await;
            }
            let serving = healthy.iter().filter_map(|a| Some((*a, known.get(a)?.0.clone()))).collect();
            let now_serving = Replicas { checked: true, serving };
            publish.send_if_modified(|was| {
                let changed = !was.same_as(&now_serving);
                if changed {
                    *was = now_serving;
                }
                changed
            });
            balanced = healthy;
            tokio::time::sleep(CHECK_EVERY).await;
        }
    });
    Ok(Replicated { channel, replicas })
}

/// How often every endpoint of a replicated address is health-checked.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Every address of every target, with the host name it was resolved from (none for an IP).
async fn resolve_all(targets: &[Target]) -> BTreeMap<SocketAddr, Option<String>> {
    let mut out = BTreeMap::new();
    for t in targets {
        match t.ip {
            Some(ip) => {
                out.insert(SocketAddr::new(ip, t.port), None);
            }
            None => match tokio::net::lookup_host((t.host.as_str(), t.port)).await {
                Ok(addrs) => out.extend(addrs.map(|a| (a, Some(t.host.clone())))),
                Err(e) => tracing::warn!(host = %t.host, error = %e, "cannot resolve an endpoint's name"),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Holder {
        ep: ServiceEndpoint,
    }

    fn read(yaml: &str) -> Result<ServiceEndpoint, String> {
        use figment::providers::Format;
        figment::Figment::from(figment::providers::Yaml::string(yaml))
            .extract::<Holder>()
            .map(|h| h.ep)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn an_endpoint_is_an_address_or_a_map_with_tls_and_timeouts() {
        assert_eq!(read("ep: \"https://a:1, https://b:1\"").unwrap(), ServiceEndpoint::new("https://a:1, https://b:1"));
        let full = read(
            "ep: { url: [\"https://a:1\", \"https://b:1\"], tls: { server_name: a.svc }, connect_timeout: 250ms, timeout: 2s }",
        )
        .unwrap();
        assert_eq!(full.urls().collect::<Vec<_>>(), ["https://a:1", "https://b:1"]);
        assert_eq!(full.tls.as_ref().and_then(|t| t.server_name.as_deref()), Some("a.svc"));
        assert_eq!(full.connect_timeout, Some(Duration::from_millis(250)));
        assert_eq!(full.timeout, Some(Duration::from_secs(2)));
        assert!(full.is_https());
        let err = read("ep: { url: \"https://a:1\", colour: red }").unwrap_err();
        assert!(err.contains("colour"), "{err}");
        assert!(read("ep: { tls: {} }").unwrap_err().contains("url"));
    }

    #[test]
    fn an_older_key_folds_in_unless_it_disagrees() {
        let mut ep = ServiceEndpoint::new("https://a:1");
        let older = EndpointTls { server_name: Some("a.svc".into()), ca_file: None };
        ep.fold_older("fusion.endpoint", "fusion", Some(older.clone()), None, Some(Duration::from_secs(1))).unwrap();
        assert_eq!((ep.tls.as_ref(), ep.timeout), (Some(&older), Some(Duration::from_secs(1))));
        let err = ep.fold_older("fusion.endpoint", "fusion", None, None, Some(Duration::from_secs(2))).unwrap_err();
        assert!(err.contains("`fusion.timeout`") && err.contains("`fusion.endpoint.timeout`"), "{err}");
    }

    #[test]
    fn validation_checks_urls_schemes_against_tls_and_timeouts() {
        let tls = TlsConfig {
            ca_file: Some("ca.pem".into()),
            cert_file: Some("c.pem".into()),
            key_file: Some("k.pem".into()),
            ..Default::default()
        };
        let insecure = TlsConfig { insecure: true, ..Default::default() };
        let https = ServiceEndpoint::new("https://a:1,https://b:1");
        assert!(https.validate(Some(&tls), "x").is_ok());
        assert!(https.validate(Some(&insecure), "x").unwrap_err().contains("insecure"));
        let mixed = ServiceEndpoint::new("https://a:1,http://b:1");
        assert!(mixed.validate(Some(&tls), "sources[0].adapter").unwrap_err().contains("sources[0].adapter"));
        assert!(ServiceEndpoint::new("a:1").validate(None, "x").is_err(), "a scheme is needed");
        assert!(ServiceEndpoint::new("").validate(None, "x").unwrap_err().contains("no URL"));
        let zero = ServiceEndpoint { timeout: Some(Duration::ZERO), ..https.clone() };
        assert!(zero.validate(Some(&tls), "x").unwrap_err().contains("`x.timeout`"));
        let over =
            ServiceEndpoint { tls: Some(EndpointTls { server_name: Some("a.svc".into()), ca_file: None }), ..https };
        assert!(over.validate(Some(&tls), "x").is_ok());
        let plain = ServiceEndpoint { url: "http://a:1".into(), ..over };
        assert!(plain.validate(Some(&insecure), "x").unwrap_err().contains("`x.tls`"), "an override needs TLS on");
    }

    #[test]
    fn urls_are_parsed_into_hosts_ports_and_ips() {
        let t = parse("http://es-adapter.fedsearch.svc:50061").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.ip), ("es-adapter.fedsearch.svc", 50061, None));
        let t = parse(" http://127.0.0.2:7 ").unwrap();
        assert_eq!(t.ip, Some("127.0.0.2".parse().unwrap()));
        assert_eq!(parse("https://[::1]").unwrap().port, 443);
        assert!(parse("127.0.0.1:50061").is_err(), "a scheme is needed");
    }

    #[tokio::test]
    async fn every_listed_ip_and_every_address_of_a_name_is_an_endpoint() {
        let targets = vec![
            parse("http://127.0.0.1:7001").unwrap(),
            parse("http://127.0.0.2:7001").unwrap(),
            parse("http://localhost:7002").unwrap(),
        ];
        let all = resolve_all(&targets).await;
        assert!(all.contains_key(&"127.0.0.1:7001".parse().unwrap()));
        assert!(all.contains_key(&"127.0.0.2:7001".parse().unwrap()));
        assert!(
            all.iter()
                .any(|(a, name)| a.port() == 7002 && a.ip().is_loopback() && name.as_deref() == Some("localhost")),
            "{all:?}"
        );
    }

    /// A gRPC health service alone on `addr`, its reporter (SERVING to start with) and address.
    async fn health_server(addr: &str) -> (SocketAddr, tonic_health::server::HealthReporter) {
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (reporter, service) = tonic_health::server::health_reporter();
        reporter.set_service_status("", tonic_health::ServingStatus::Serving).await;
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        tokio::spawn(tonic::transport::Server::builder().add_service(service).serve_with_incoming(incoming));
        (addr, reporter)
    }

    /// The published set once `pred` holds (a hang guard only: the checks run every second).
    async fn published(rx: &mut watch::Receiver<Replicas>, pred: impl FnMut(&Replicas) -> bool) -> Replicas {
        tokio::time::timeout(Duration::from_secs(60), rx.wait_for(pred))
            .await
            .expect("the set was never published")
            .expect("the health loop ended")
            .clone()
    }

    #[tokio::test]
    async fn the_serving_replicas_are_published_as_they_come_and_go() {
        let (a, _serving) = health_server("127.0.0.1:0").await;
        let (b, draining) = health_server(&format!("127.0.0.2:{}", a.port())).await;
        // A third address where nothing listens is never in the set.
        let address = format!("http://{a},http://{b},http://127.0.0.3:{}", a.port());
        let mut rx = replicated(&address, Duration::from_millis(500), RESOLVE_EVERY, None).unwrap().replicas;
        let both = published(&mut rx, |r| r.checked && r.serving.len() == 2).await;
        assert_eq!(both.serving.keys().collect::<Vec<_>>(), [&a, &b]);
        draining.set_service_status("", tonic_health::ServingStatus::NotServing).await;
        let one = published(&mut rx, |r| r.serving.len() == 1).await;
        assert_eq!(one.serving.keys().collect::<Vec<_>>(), [&a]);
        assert!(Arc::ptr_eq(&one.serving[&a], &both.serving[&a]), "a replica that stays keeps its endpoint");
        draining.set_service_status("", tonic_health::ServingStatus::Serving).await;
        let back = published(&mut rx, |r| r.serving.len() == 2).await;
        assert_eq!(back.serving.keys().collect::<Vec<_>>(), [&a, &b]);
    }

    #[tokio::test]
    async fn a_single_ip_is_a_set_of_one_from_the_start() {
        let r = replicated("http://127.0.0.1:7", Duration::from_millis(500), RESOLVE_EVERY, None).unwrap();
        let set = r.replicas.borrow().clone();
        assert!(set.checked);
        assert_eq!(set.serving.keys().collect::<Vec<_>>(), [&"127.0.0.1:7".parse::<SocketAddr>().unwrap()]);
    }
}
