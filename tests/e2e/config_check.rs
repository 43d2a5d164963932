//! `--check`: every binary validates its config as start-up does (and reads the files it names),
//! then exits — 0 when valid, 2 naming the problem — without binding a port or calling a backend.
//! Every config the project ships passes; a broken one fails with a message that names it.

use std::{path::Path, process::Output};

use fedsearch_e2e::pki::Pki;

use crate::harness::{bin, need_env, root};

const SERVICES: [&str; 6] = ["router", "fusion", "es-adapter", "sql-adapter", "wiki-adapter", "vector-adapter"];

/// `service --config config --check` with the throwaway PKI's files and the backends' settings
/// the shipped configs read from the environment (`SQL_ADAPTER_DATABASE_URL` is never opened).
fn check(pki: &Pki, service: &str, config: &Path) -> Output {
    let mut cmd = std::process::Command::new(bin(service));
    cmd.args(["--config", &config.display().to_string(), "--check"])
        .envs(pki.env(service))
        .env("SQL_ADAPTER_DATABASE_URL", "sqlite::memory:")
        .env("OPENSEARCH_URL", need_env("OPENSEARCH_URL"))
        .env("DOKUWIKI_URL", need_env("DOKUWIKI_URL"))
        .env("DOKUWIKI_SECRETS", need_env("DOKUWIKI_SECRETS"));
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn every_shipped_config_passes_the_check() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::generate(&tmp.path().join("tls"));
    let deploy = root().join("deploy");
    let mut dirs = vec![deploy.join("config")];
    let mut evals: Vec<_> = std::fs::read_dir(deploy.join("eval")).unwrap().map(|e| e.unwrap().path()).collect();
    evals.sort();
    dirs.extend(evals.into_iter().filter(|p| p.is_dir()));
    let mut checked = 0;
    for dir in &dirs {
        for service in SERVICES {
            let config = dir.join(format!("{service}.yaml"));
            if !config.exists() {
                continue;
            }
            let out = check(&pki, service, &config);
            assert_eq!(out.status.code(), Some(0), "{}: {}", config.display(), text(&out));
            assert_eq!(text(&out).trim(), format!("{service}: the config is valid"), "{}", config.display());
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} configs found under {}", deploy.display());
}

#[test]
fn a_broken_config_fails_the_check_naming_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::generate(&tmp.path().join("tls"));
    let shipped =
        |service: &str| std::fs::read_to_string(root().join(format!("deploy/config/{service}.yaml"))).unwrap();
    let broken = |service: &str, from: &str, to: &str| {
        let yaml = shipped(service);
        assert!(yaml.contains(from), "deploy/config/{service}.yaml no longer holds {from:?}");
        let path = tmp.path().join(format!("broken-{service}.yaml"));
        std::fs::write(&path, yaml.replacen(from, to, 1)).unwrap();
        path
    };
    let cases = [
        // A template's SQL names a parameter it does not declare.
        ("sql-adapter", broken("sql-adapter", "LIMIT :limit", "LIMIT :limt"), "limt"),
        // A typo in a key (configs deny unknown fields).
        ("es-adapter", broken("es-adapter", "sources:", "sourcez:"), "sourcez"),
        // A router source pattern that is not a regular expression.
        ("router", broken("router", "patterns: [", "patterns: ['(unclosed', "), "unclosed"),
    ];
    for (service, config, named) in cases {
        let out = check(&pki, service, &config);
        assert_eq!(out.status.code(), Some(2), "{service}: {}", text(&out));
        assert!(text(&out).contains(named), "{service} does not name {named:?}: {}", text(&out));
    }
    // A certificate file that is not there: the check reads the files start-up would read.
    let mut cmd = std::process::Command::new(bin("fusion"));
    let out = cmd
        .args(["--config", &root().join("deploy/config/fusion.yaml").display().to_string(), "--check"])
        .envs(pki.env("fusion"))
        .env("FEDSEARCH_SERVER__TLS__CERT_FILE", tmp.path().join("missing.pem"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("missing.pem"), "{}", text(&out));
}
