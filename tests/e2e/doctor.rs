//! `fedsearch doctor` against real adapter processes and the real backends: a good deployment
//! is reported clean (exit 0), and each misconfiguration is reported on its own line with a fix
//! (exit 1) — a permission field missing from the index mapping, a permission field inside a
//! nested object the config does not name, an index that does not exist, a wiki account the wiki
//! refuses (wrong credentials), an adapter that is not running, a source the adapter does not
//! serve, and a token the router would refuse.

use std::collections::HashMap;

use fedsearch_e2e::pki::Pki;

use crate::harness::{Proc, SECRET, TlsClient, bin, free_port, need_env, token_for};

const SERVER: &str = "  tls: { insecure: true }\n  identity: { trust_unsigned: true }\n";

fn es_config(port: u16, opensearch: &str) -> String {
    format!(
        "server:\n  listen: 127.0.0.1:{port}\n{SERVER}cluster:\n  urls: [{opensearch}]\nsources:\n\
         \x20 - {{ name: tickets, index: tickets, doc_types: [ticket], search_fields: [\"title^3\", body] }}\n\
         \x20 - {{ name: tickets_bad_acl, index: tickets, doc_types: [ticket], search_fields: [title], fields: {{ allowed_groups: acl_groups }} }}\n\
         \x20 - {{ name: gone, index: doctor-test-no-such-index, doc_types: [ticket], search_fields: [title] }}\n"
    )
}

fn wiki_config(port: u16, secrets_env: &str) -> String {
    format!(
        "server:\n  listen: 127.0.0.1:{port}\n{SERVER}sources:\n  - name: wiki\n    description: the wiki\n    \
         dokuwiki: {{ url_env: DOKUWIKI_URL }}\n    identity: {{ mode: mapped, secrets_file_env: {secrets_env} }}\n    \
         doc_types: {{ public: policy }}\n    default_doc_type: page\n"
    )
}

fn router(sources: &[(&str, String, &str)]) -> String {
    let mut s = format!("server: {{ listen: 127.0.0.1:1 }}\nauth: {{ hs256_secret: \"{SECRET}\" }}\nsources:\n");
    for (name, adapter, target) in sources {
        s.push_str(&format!("  - {{ name: {name}, adapter: \"{adapter}\", target: {target}, description: x }}\n"));
    }
    s
}

fn doctor(config: &std::path::Path, token: &str) -> (Option<i32>, String) {
    doctor_with(config, token, &[])
}

fn doctor_with(config: &std::path::Path, token: &str, env: &[(&str, String)]) -> (Option<i32>, String) {
    let out = std::process::Command::new(bin("fedsearch"))
        .envs(env.iter().map(|(k, v)| (k.to_string(), v.clone())))
        .args(["doctor", "--config", config.to_str().unwrap(), "--token", token])
        .env_remove("FEDSEARCH_AUTH__HS256_SECRET")
        .output()
        .expect("run fedsearch doctor");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("fedsearch doctor --config {}:\n{text}", config.display());
    (out.status.code(), text)
}

/// The line of `source` and `check` at `level`, or a failure showing the whole report.
fn line<'a>(report: &'a str, level: &str, source: &str, check: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.starts_with(level) && l.contains(&format!("  {source}  {check}: ")))
        .unwrap_or_else(|| panic!("no `{level} {source} {check}` line in:\n{report}"))
}

#[tokio::test]
async fn doctor_reports_a_good_deployment_clean_and_names_each_misconfiguration() {
    let dir = tempfile::tempdir().unwrap();
    let (opensearch, wiki_url, secrets) =
        (need_env("OPENSEARCH_URL"), need_env("DOKUWIKI_URL"), need_env("DOKUWIKI_SECRETS"));
    // A copy of the real secrets file in which alice's password is wrong.
    let real = std::fs::read_to_string(&secrets).unwrap();
    let mut broken = String::new();
    let mut in_alice = false;
    for l in real.lines() {
        if !l.starts_with(' ') {
            in_alice = l.starts_with("alice:");
        }
        if in_alice && l.trim_start().starts_with("password:") {
            broken.push_str("  password: \"not-alices-password\"\n");
        } else {
            broken.push_str(l);
            broken.push('\n');
        }
    }
    assert_ne!(broken, real, "alice has a password line to break");
    let broken_secrets = dir.path().join("broken-secrets.yaml");
    std::fs::write(&broken_secrets, broken).unwrap();

    let (es_port, wiki_port, bad_wiki_port, dead_port) = (free_port(), free_port(), free_port(), free_port());
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let es_cfg = write("es.yaml", es_config(es_port, &opensearch));
    let wiki_cfg = write("wiki.yaml", wiki_config(wiki_port, "DOKUWIKI_SECRETS"));
    let bad_wiki_cfg = write("bad-wiki.yaml", wiki_config(bad_wiki_port, "BROKEN_SECRETS"));
    let env = |port: u16, extra: &[(&str, &str)]| {
        let mut e = HashMap::from([("FEDSEARCH_SERVER__LISTEN".to_string(), format!("127.0.0.1:{port}"))]);
        for (k, v) in extra {
            e.insert(k.to_string(), v.to_string());
        }
        e
    };
    let wiki_env = [("DOKUWIKI_URL", wiki_url.as_str()), ("DOKUWIKI_SECRETS", secrets.as_str())];
    let bad_env = [("DOKUWIKI_URL", wiki_url.as_str()), ("BROKEN_SECRETS", broken_secrets.to_str().unwrap())];
    let mut procs = vec![
        Proc::spawn("es-adapter", &["--config", &es_cfg], &env(es_port, &[]), dir.path()),
        Proc::spawn("wiki-adapter", &["--config", &wiki_cfg], &env(wiki_port, &wiki_env), dir.path()),
        Proc::spawn("wiki-adapter", &["--config", &bad_wiki_cfg], &env(bad_wiki_port, &bad_env), dir.path()),
    ];
    for p in procs.iter_mut() {
        p.wait_healthy().await;
    }
    let at = |port: u16| format!("http://127.0.0.1:{port}");
    let alice = token_for("alice");

    let good = dir.path().join("good-router.yaml");
    std::fs::write(&good, router(&[("tickets", at(es_port), "tickets"), ("wiki", at(wiki_port), "wiki")])).unwrap();
    let (code, report) = doctor(&good, &alice);
    assert_eq!(code, Some(0), "a good deployment is clean:\n{report}");
    assert!(!report.contains("FAIL"), "{report}");
    line(&report, "ok", "-", "token");
    line(&report, "ok", "tickets", "mapping");
    line(&report, "ok", "tickets", "probe");
    line(&report, "ok", "wiki", "credentials");
    line(&report, "ok", "wiki", "probe");

    let bad = dir.path().join("bad-router.yaml");
    std::fs::write(
        &bad,
        router(&[
            ("bad_acl", at(es_port), "tickets_bad_acl"),
            ("gone", at(es_port), "gone"),
            ("wrong_target", at(es_port), "orders"),
            ("bad_wiki", at(bad_wiki_port), "wiki"),
            ("dead", at(dead_port), "x"),
        ]),
    )
    .unwrap();
    let (code, report) = doctor(&bad, &alice);
    assert_eq!(code, Some(1), "{report}");
    let l = line(&report, "FAIL", "bad_acl", "permission_field");
    assert!(l.contains("acl_groups") && l.contains("fix: set `fields.allowed_groups`"), "{l}");
    assert!(line(&report, "FAIL", "gone", "index").contains("fix: "), "{report}");
    assert!(line(&report, "FAIL", "wrong_target", "describe").contains("does not serve source `orders`"), "{report}");
    let l = line(&report, "FAIL", "bad_wiki", "credentials");
    assert!(l.contains("`alice`") && !l.contains("not-alices-password"), "names the subject, never the secret: {l}");
    assert!(line(&report, "FAIL", "bad_wiki", "probe").contains("DENIED"), "{report}");
    assert!(line(&report, "FAIL", "dead", "adapter").contains("fix: start the adapter"), "{report}");
    assert!(report.lines().all(|l| !l.contains(&alice)), "the token is never printed");

    // A token the router would refuse is the first thing said.
    let (code, report) = doctor(&good, "not-a-jwt");
    assert_eq!(code, Some(1), "{report}");
    assert!(line(&report, "FAIL", "-", "token").contains("fix: "), "{report}");
    drop(procs);
}

/// The doctor calls the adapters as the router does: over mutual TLS with the router's client
/// certificate (`internal_tls`) and with each probe's user signed by the router's key
/// (`identity`), both from router.yaml or its FEDSEARCH_* overrides.
#[tokio::test]
async fn doctor_calls_adapters_over_mutual_tls_with_signed_users_as_the_router_does() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::generate(&dir.path().join("tls"));
    let port = free_port();
    let p = |name: &str| pki.path(name).display().to_string();
    let server = format!(
        "  tls: {{ ca_file: {}, cert_file: {}, key_file: {}, allowed_clients: [router.fedsearch.svc] }}\n  identity: {{ jwks_file: {} }}\n",
        p("ca.pem"),
        p("es-adapter.pem"),
        p("es-adapter.key"),
        p("router.jwks")
    );
    let es = es_config(port, &need_env("OPENSEARCH_URL")).replace(SERVER, &server);
    let es_path = dir.path().join("es.yaml");
    std::fs::write(&es_path, es).unwrap();
    let env = HashMap::from([("FEDSEARCH_SERVER__LISTEN".to_string(), format!("127.0.0.1:{port}"))]);
    let mut es = Proc::spawn("es-adapter", &["--config", es_path.to_str().unwrap()], &env, dir.path())
        .with_tls(TlsClient::router(&pki));
    es.wait_healthy().await;
    let config = dir.path().join("router.yaml");
    std::fs::write(&config, router(&[("tickets", format!("https://127.0.0.1:{port}"), "tickets")])).unwrap();
    let alice = token_for("alice");
    let tls = [
        ("FEDSEARCH_INTERNAL_TLS__CA_FILE", p("ca.pem")),
        ("FEDSEARCH_INTERNAL_TLS__CERT_FILE", p("router.pem")),
        ("FEDSEARCH_INTERNAL_TLS__KEY_FILE", p("router.key")),
    ];
    let signing = ("FEDSEARCH_IDENTITY__SIGNING_KEY_FILE", p("signing.pem"));

    let all: Vec<(&str, String)> = tls.iter().cloned().chain([signing]).collect();
    let (code, report) = doctor_with(&config, &alice, &all);
    assert_eq!(code, Some(0), "{report}");
    line(&report, "ok", "tickets", "describe");
    line(&report, "ok", "tickets", "mapping");
    assert!(line(&report, "ok", "tickets", "probe").contains("as `alice`"), "{report}");

    let (code, report) = doctor_with(&config, &alice, &[]);
    assert_eq!(code, Some(1), "{report}");
    assert!(line(&report, "FAIL", "tickets", "adapter").contains("internal_tls"), "{report}");

    let (code, report) = doctor_with(&config, &alice, &tls);
    assert_eq!(code, Some(1), "{report}");
    assert!(
        line(&report, "FAIL", "tickets", "probe").contains("UNAUTHENTICATED"),
        "an unsigned user is refused: {report}"
    );
}

/// The doctor reads each `adapter` and `fusion.endpoint` as core's endpoint type and honours
/// its own `tls` over `internal_tls`, as the router does: an adapter and a fusion service whose
/// certificates come from another CA are checked with that endpoint's `ca_file`, against its
/// `server_name`; without the override, or with a name the certificate does not carry, the
/// endpoint's line FAILs with the setting to fix.
#[tokio::test]
async fn doctor_honours_each_endpoints_own_tls_for_adapters_and_fusion() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::generate(&dir.path().join("tls"));
    // The servers' certificates come from a second CA; they still take only the router's.
    let other = Pki::generate_named(&dir.path().join("other"), "the adapters' own CA");
    let p = |pki: &Pki, name: &str| pki.path(name).display().to_string();
    let (other_ca, router_cert, router_key) = {
        let (_, cert, key) = pki.client_pems("router");
        (std::fs::read_to_string(other.path("ca.pem")).unwrap(), cert, key)
    };
    let caller = TlsClient { ca: other_ca, cert: Some((router_cert, router_key)) };
    let (es_port, fusion_port) = (free_port(), free_port());
    let server = format!(
        "  tls: {{ ca_file: {}, cert_file: {}, key_file: {}, allowed_clients: [router.fedsearch.svc] }}\n  identity: {{ jwks_file: {} }}\n",
        p(&pki, "ca.pem"),
        p(&other, "es-adapter.pem"),
        p(&other, "es-adapter.key"),
        p(&pki, "router.jwks")
    );
    let es_path = dir.path().join("es.yaml");
    std::fs::write(&es_path, es_config(es_port, &need_env("OPENSEARCH_URL")).replace(SERVER, &server)).unwrap();
    let env = HashMap::from([("FEDSEARCH_SERVER__LISTEN".to_string(), format!("127.0.0.1:{es_port}"))]);
    let mut es =
        Proc::spawn("es-adapter", &["--config", es_path.to_str().unwrap()], &env, dir.path()).with_tls(caller.clone());
    let fusion_env = HashMap::from([
        ("FEDSEARCH_SERVER__LISTEN".to_string(), format!("127.0.0.1:{fusion_port}")),
        ("FEDSEARCH_SERVER__TLS__CA_FILE".to_string(), p(&pki, "ca.pem")),
        ("FEDSEARCH_SERVER__TLS__CERT_FILE".to_string(), p(&other, "fusion.pem")),
        ("FEDSEARCH_SERVER__TLS__KEY_FILE".to_string(), p(&other, "fusion.key")),
    ]);
    let fusion_cfg = crate::harness::root().join("deploy/config/fusion.yaml");
    let mut fusion =
        Proc::spawn("fusion", &["--config", fusion_cfg.to_str().unwrap()], &fusion_env, dir.path()).with_tls(caller);
    es.wait_healthy().await;
    fusion.wait_healthy().await;
    let env: Vec<(&str, String)> = pki.env("router");
    let alice = token_for("alice");
    let config = dir.path().join("router.yaml");
    let with = |fusion_tls: &str, adapter: &str| {
        let yaml = format!(
            "server: {{ listen: 127.0.0.1:1 }}\nauth: {{ hs256_secret: \"{SECRET}\" }}\n\
             fusion:\n  endpoint: {{ url: \"https://127.0.0.1:{fusion_port}\"{fusion_tls} }}\n\
             sources:\n  - {{ name: tickets, {adapter}, target: tickets, description: x }}\n"
        );
        std::fs::write(&config, yaml).unwrap();
        doctor_with(&config, &alice, &env)
    };
    let own = |name: &str| format!("tls: {{ ca_file: {}, server_name: {name} }}", p(&other, "ca.pem"));
    let url = format!("\"https://127.0.0.1:{es_port}\"");

    // Each endpoint with its own CA and name: everything is reached (the new shape for the
    // adapter, the older `tls:` beside `adapter:` as well).
    let fusion_own = format!(", {}", own("fusion.fedsearch.svc"));
    for adapter in [
        format!("adapter: {{ url: {url}, {} }}", own("es-adapter.fedsearch.svc")),
        format!("adapter: {url}, {}", own("es-adapter.fedsearch.svc")),
    ] {
        let (code, report) = with(&fusion_own, &adapter);
        assert_eq!(code, Some(0), "{report}");
        line(&report, "ok", "fusion", "endpoint");
        line(&report, "ok", "tickets", "describe");
        assert!(line(&report, "ok", "tickets", "probe").contains("as `alice`"), "{report}");
    }

    // Without the overrides the router's own CA does not know the servers' certificates.
    let (code, report) = with("", &format!("adapter: {url}"));
    assert_eq!(code, Some(1), "{report}");
    assert!(line(&report, "FAIL", "tickets", "adapter").contains("tls.ca_file"), "{report}");
    line(&report, "FAIL", "fusion", "endpoint");

    // The right CA but a name the certificates do not carry.
    let fusion_wrong = format!(", {}", own("wiki-adapter.fedsearch.svc"));
    let (code, report) =
        with(&fusion_wrong, &format!("adapter: {{ url: {url}, {} }}", own("wiki-adapter.fedsearch.svc")));
    assert_eq!(code, Some(1), "{report}");
    assert!(line(&report, "FAIL", "tickets", "adapter").contains("tls.server_name"), "{report}");
    line(&report, "FAIL", "fusion", "endpoint");
}
