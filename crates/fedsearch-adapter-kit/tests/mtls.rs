//! The kit's mutual TLS over real TLS sockets: an adapter whose `allowed_clients` names a
//! `spiffe://` ID serves a client certificate carrying that URI SAN, and refuses one from the
//! same CA carrying another ID (or only a DNS name) before any request is read; a client's
//! per-endpoint overrides (`server_name`, `ca_file`) decide which server it accepts.

use std::{path::Path, time::Duration};

use fedsearch_adapter_kit::{Adapter, AdapterError, HitSink, ServerConfig, serve_adapter};
use fedsearch_core::{
    assertion::VerifierConfig,
    tls::{ClientTls, EndpointTls, TlsConfig},
};
use fedsearch_proto::adapter::{
    DescribeRequest, DescribeResponse, FetchRequest, FetchResponse, SubQuery,
    source_adapter_client::SourceAdapterClient,
};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, SanType,
};

const ROUTER_ID: &str = "spiffe://fedsearch.test/ns/search/sa/router";

struct Described;

impl Adapter for Described {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse::default()
    }

    async fn search(&self, _: SubQuery, _: HitSink) -> Result<(), AdapterError> {
        Ok(())
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("none".into()))
    }
}

fn ca(dir: &Path) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, "spiffe test CA");
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    ca
}

/// A certificate of `ca` with exactly `sans`, as `<name>.pem` / `<name>.key` in `dir`.
fn issue(ca: &CertifiedIssuer<'static, KeyPair>, dir: &Path, name: &str, sans: Vec<SanType>) -> TlsConfig {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.subject_alt_names = sans;
    params.distinguished_name.push(DnType::CommonName, name);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, ca).unwrap();
    let (cert_file, key_file) = (dir.join(format!("{name}.pem")), dir.join(format!("{name}.key")));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    TlsConfig {
        ca_file: Some(dir.join("ca.pem")),
        cert_file: Some(cert_file),
        key_file: Some(key_file),
        ..Default::default()
    }
}

fn uri(id: &str) -> SanType {
    SanType::URI(id.try_into().unwrap())
}

/// Describe over mutual TLS with the client certificate of `tls`.
async fn describe(url: &str, tls: &TlsConfig) -> Result<(), String> {
    let client = ClientTls::from_config(tls, "test").unwrap().unwrap();
    describe_with(url, &client, Some("localhost")).await
}

async fn describe_with(url: &str, client: &ClientTls, name: Option<&str>) -> Result<(), String> {
    let endpoint = fedsearch_core::grpc::client_endpoint(url, Duration::from_secs(5)).unwrap();
    let endpoint = client.endpoint(endpoint, name).unwrap();
    let channel = endpoint.connect().await.map_err(|e| format!("connect: {e}"))?;
    let mut request = tonic::Request::new(DescribeRequest {});
    request.set_timeout(Duration::from_secs(5));
    SourceAdapterClient::new(channel).describe(request).await.map(|_| ()).map_err(|s| format!("{s}"))
}

#[tokio::test]
async fn a_spiffe_id_in_allowed_clients_admits_that_workload_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca(dir.path());
    let localhost = vec![SanType::DnsName("localhost".try_into().unwrap())];
    let server = issue(&ca, dir.path(), "adapter", localhost);
    let router = issue(&ca, dir.path(), "router", vec![uri(ROUTER_ID)]);
    let intruder = issue(&ca, dir.path(), "intruder", vec![uri("spiffe://fedsearch.test/ns/search/sa/intruder")]);
    let by_dns = issue(&ca, dir.path(), "by-dns", vec![SanType::DnsName("router.fedsearch.svc".try_into().unwrap())]);

    let url = serve(TlsConfig { allowed_clients: vec![ROUTER_ID.into()], ..server }).await;

    describe(&url, &router).await.expect("the router's SPIFFE ID is allowed");
    let refused = describe(&url, &intruder).await.expect_err("another SPIFFE ID of the same CA is refused");
    assert!(!refused.is_empty());
    describe(&url, &by_dns).await.expect_err("a DNS SAN does not stand in for a listed SPIFFE ID");
    describe(&url, &router).await.expect("the server still serves the allowed workload");
}

/// An adapter over mutual TLS with `tls` on a free loopback port; its `https://` URL.
async fn serve(tls: TlsConfig) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let config = ServerConfig {
        tls: Some(tls),
        identity: Some(VerifierConfig {
            jwks_file: None,
            issuer: fedsearch_core::assertion::DEFAULT_ISSUER.into(),
            leeway_secs: 5,
            trust_unsigned: true,
        }),
        ..ServerConfig::loopback(listener.local_addr().unwrap())
    };
    tokio::spawn(async move { serve_adapter(Described, listener, &config, std::future::pending()).await });
    url
}

#[tokio::test]
async fn an_endpoint_override_names_the_server_and_its_ca() {
    // The adapter's certificate names `adapter.other.svc` only and comes from a second CA; the
    // client's own settings trust the first CA and check the URL's host (127.0.0.1).
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first_ca = ca(first.path());
    let client = issue(&first_ca, first.path(), "router", vec![uri(ROUTER_ID)]);
    let second_ca = ca(second.path());
    // The adapter trusts the first CA (the router's client certificate chains to it).
    let server = TlsConfig {
        ca_file: Some(first.path().join("ca.pem")),
        allowed_clients: vec![ROUTER_ID.into()],
        ..issue(&second_ca, second.path(), "adapter", vec![SanType::DnsName("adapter.other.svc".try_into().unwrap())])
    };
    let url = serve(server).await;
    let base = ClientTls::from_config(&client, "internal_tls").unwrap();
    let plain = base.clone().unwrap();
    assert!(describe_with(&url, &plain, None).await.is_err(), "wrong CA and a name the certificate lacks");

    let name_only = EndpointTls { server_name: Some("adapter.other.svc".into()), ca_file: None };
    let named = ClientTls::for_endpoint(base.as_ref(), Some(&name_only), "sources[0].tls").unwrap().unwrap();
    assert!(describe_with(&url, &named, None).await.is_err(), "the right name, still the wrong CA");

    let ca_only = EndpointTls { server_name: None, ca_file: Some(second.path().join("ca.pem")) };
    let trusted = ClientTls::for_endpoint(base.as_ref(), Some(&ca_only), "sources[0].tls").unwrap().unwrap();
    assert!(describe_with(&url, &trusted, None).await.is_err(), "the right CA, a name the certificate lacks");

    let both = EndpointTls { server_name: Some("adapter.other.svc".into()), ..ca_only };
    let both = ClientTls::for_endpoint(base.as_ref(), Some(&both), "sources[0].tls").unwrap().unwrap();
    describe_with(&url, &both, None).await.expect("the endpoint's name and CA over the client's");
    // No override: the client's own settings, unchanged.
    let same = ClientTls::for_endpoint(base.as_ref(), None, "fusion.tls").unwrap().unwrap();
    assert!(std::sync::Arc::ptr_eq(&same, &plain));
    let err = ClientTls::for_endpoint(None, Some(&name_only), "fusion.tls").unwrap_err();
    assert!(err.contains("fusion.tls"), "{err}");
}

#[test]
fn allowed_clients_take_dns_names_ips_and_spiffe_ids_only() {
    let with = |name: &str| {
        TlsConfig {
            ca_file: Some("ca.pem".into()),
            cert_file: Some("c.pem".into()),
            key_file: Some("k.pem".into()),
            allowed_clients: vec![name.into()],
            ..Default::default()
        }
        .validate_server("server.tls")
    };
    for ok in [ROUTER_ID, "spiffe://fedsearch.test", "router.fedsearch.svc", "10.0.0.7"] {
        assert!(with(ok).is_ok(), "{ok}");
    }
    for bad in ["spiffe://", "spiffe://Upper.Case/x", "spiffe://td/x?y", "spiffe://td/x/", "not a name"] {
        let err = with(bad).unwrap_err();
        assert!(err.contains("server.tls.allowed_clients") && err.contains(bad), "{bad}: {err}");
    }
}
