//! `fedsearch-dev-pki DIR [--per-service]`: a throwaway CA, a certificate per service and the
//! router's assertion signing key (with its JWKS) in DIR, for the demo and local runs. Never for
//! production: use cert-manager or your mesh's CA (docs/security.md).
//!
//! `--per-service` also writes the layout docker-compose mounts, one directory per service
//! (`DIR/<service>/tls/`, `DIR/<service>/identity/`, see [`fedsearch_e2e::pki::Pki::write_per_service`]).
//! Run again over the same DIR, it rotates everything without a restart: the new files are
//! renamed into the mounted directories, and the CA and signing key they replace stay trusted
//! next to the new ones.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let per_service = args.iter().any(|a| a == "--per-service");
    let dirs: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let ([dir], true) = (dirs.as_slice(), args.len() == dirs.len() + usize::from(per_service)) else {
        eprintln!("usage: fedsearch-dev-pki DIR [--per-service]");
        std::process::exit(2);
    };
    let dir = std::path::PathBuf::from(dir);
    // What a rotation keeps trusted while the services pick up the new files.
    let trusted_before = std::fs::read_to_string(dir.join("ca.pem")).unwrap_or_default();
    let keys_before: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("router.jwks"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|j| j["keys"].as_array().cloned())
        .unwrap_or_default();
    let pki = fedsearch_e2e::pki::Pki::generate(&dir);
    if per_service {
        pki.write_per_service(&trusted_before, &keys_before);
    }
    println!("{}", dir.display());
}
