//! `fedsearch-dev-pki DIR`: a throwaway CA, a certificate per service and the router's
//! assertion signing key (with its JWKS) in DIR, for the demo and local runs. Never for
//! production: use cert-manager or your mesh's CA (docs/security.md).

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: fedsearch-dev-pki DIR");
        std::process::exit(2);
    };
    let dir = std::path::PathBuf::from(dir);
    fedsearch_e2e::pki::Pki::generate(&dir);
    println!("{}", dir.display());
}
