//! Channels to a service that may run as several replicas.
//!
//! An address is one URL or a comma-separated list of them. A URL whose host is an IP address
//! is one endpoint; a URL whose host is a name is every address the name resolves to, resolved
//! again every `resolve_every` — a Kubernetes headless Service gives one address per ready pod.
//! Every endpoint is asked for its gRPC health each [`CHECK_EVERY`]; the ones that answer
//! SERVING feed one channel that balances requests over them (tower's power-of-two-choices
//! balancer, by in-flight requests). A replica that dies, hangs or drains (NOT_SERVING) leaves
//! the balancer at its next check, and one that comes back, or a new pod, joins it (outlier
//! ejection by active health checks). A single IP endpoint is a plain lazily-connecting channel.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    time::Duration,
};

use std::sync::Arc;

use tonic::transport::{Channel, Endpoint, channel::Change};

use crate::tls::ClientTls;

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

/// A channel to every replica behind `address` (see the module doc), over mutual TLS when
/// `tls` is set (then every URL must be `https://`). When the TLS files change, every endpoint
/// is replaced by one with the new certificate: calls in flight finish on the connections they
/// have, new calls open connections with the new files.
pub fn replicated_channel(
    address: &str,
    connect_timeout: Duration,
    resolve_every: Duration,
    tls: Option<Arc<ClientTls>>,
) -> anyhow::Result<Channel> {
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
        && one.ip.is_some()
    {
        let Some(tls) = tls else { return crate::grpc::lazy_channel(address.trim(), connect_timeout) };
        // One endpoint behind a balancer of one, so that it can be replaced on a new certificate.
        let url = address.trim().to_string();
        let (channel, changes) = Channel::balance_channel::<u8>(4);
        let mut generation = tls.generation();
        changes.try_send(Change::Insert(0, build(&url, None)?)).map_err(|_| anyhow::anyhow!("channel closed"))?;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(crate::tls::RELOAD_CHECK).await;
                if changes.is_closed() {
                    return;
                }
                let now = tls.generation();
                if now != generation {
                    generation = now;
                    match build(&url, None) {
                        Ok(ep) => {
                            if changes.send(Change::Insert(0, ep)).await.is_err() {
                                return;
                            }
                        }
                        Err(e) => tracing::warn!(error = %e, "cannot use the new TLS files for an endpoint"),
                    }
                }
            }
        });
        return Ok(channel);
    }
    let (channel, changes) = Channel::balance_channel::<SocketAddr>(64);
    tokio::spawn(async move {
        let scheme = targets.first().map_or("http", |t| t.scheme.as_str()).to_string();
        let url = |addr: &SocketAddr| format!("{scheme}://{addr}");
        // The name a replica's certificate is checked against: the name it was resolved from.
        let mut names: BTreeMap<SocketAddr, Option<String>> = BTreeMap::new();
        // Every known address, with a channel of its own for the health checks.
        let mut known: BTreeMap<SocketAddr, Channel> = BTreeMap::new();
        let mut balanced: BTreeSet<SocketAddr> = BTreeSet::new();
        let mut resolved_at: Option<tokio::time::Instant> = None;
        let mut generation = tls.as_ref().map(|t| t.generation());
        loop {
            let now = tls.as_ref().map(|t| t.generation());
            let renewed = now != generation;
            generation = now;
            if renewed {
                // New certificate: new health-check channels, and every balanced endpoint again.
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
                            e.insert(ep.connect_lazy());
                        }
                        names.insert(addr, name);
                    }
                }
                resolved_at = Some(tokio::time::Instant::now());
            }
            let checks = known
                .iter()
                .map(|(addr, ch)| async move { (*addr, crate::grpc::is_serving(ch.clone(), CHECK_EVERY / 2).await) });
            let healthy: BTreeSet<SocketAddr> =
                futures::future::join_all(checks).await.into_iter().filter(|(_, ok)| *ok).map(|(a, _)| a).collect();
            for gone in balanced.difference(&healthy) {
                tracing::info!(endpoint = %gone, "endpoint left the balancer (not serving)");
                if changes.send(Change::Remove(*gone)).await.is_err() {
                    return;
                }
            }
            for new in healthy.difference(&balanced) {
                let name = names.get(new).cloned().flatten();
                let Ok(ep) = build(&url(new), name.as_deref()) else { continue };
                // Inserting a known key replaces its endpoint (a renewed certificate).
                if changes.send(Change::Insert(*new, ep)).await.is_err() {
                    return;
                }
            }
            balanced = healthy;
            tokio::time::sleep(CHECK_EVERY).await;
        }
    });
    Ok(channel)
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
}
