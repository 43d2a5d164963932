//! The fedsearch command line: the connection to the router, the bearer token on every call,
//! and what can go wrong (a usage error exits 2, a gRPC error exits 1).

use std::{process::ExitCode, time::Duration};

use fedsearch_proto::api::federated_search_client::FederatedSearchClient;
use tonic::{
    Request, Status,
    metadata::{AsciiMetadataValue, MetadataValue},
    service::{Interceptor, interceptor::InterceptedService},
    transport::Channel,
};

use fedsearch_core::endpoints::ServiceEndpoint;

use crate::render::clean;

/// How long to wait for a TCP connection to the router.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a command failed.
#[derive(Debug)]
pub enum Failure {
    /// Bad arguments or environment: exit 2.
    Usage(String),
    /// The router answered with an error (or could not be reached): exit 1.
    Grpc(Status),
    /// Anything else at run time: exit 1.
    Other(String),
}

impl From<Status> for Failure {
    fn from(s: Status) -> Self {
        Failure::Grpc(s)
    }
}

impl Failure {
    /// The one line printed to stderr.
    pub fn line(&self) -> String {
        match self {
            Failure::Usage(m) | Failure::Other(m) => format!("error: {}", clean(m)),
            Failure::Grpc(s) => {
                let code = fedsearch_core::grpc::code_name(s.code());
                let message = clean(s.message());
                let message = if message.is_empty() { clean(s.code().description()) } else { message };
                format!("error: {code}: {message}")
            }
        }
    }

    /// Names the router address when the call never reached it (a local transport error, not a
    /// status the router sent), so "connection refused" says where.
    pub fn with_router(self, router: &str) -> Self {
        match self {
            Failure::Grpc(s) if std::error::Error::source(&s).is_some() => {
                let message = format!("{} (router {router})", s.message());
                Failure::Grpc(Status::new(s.code(), message))
            }
            other => other,
        }
    }

    pub fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Usage(_) => ExitCode::from(2),
            Failure::Grpc(_) | Failure::Other(_) => ExitCode::from(1),
        }
    }
}

/// Puts `authorization: Bearer <token>` on every call. Its Debug output never shows the token.
#[derive(Clone)]
pub struct BearerAuth(AsciiMetadataValue);

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerAuth(<redacted>)")
    }
}

impl BearerAuth {
    /// From `--token` / `FEDSEARCH_TOKEN`; a missing or unusable token is a usage error.
    pub fn new(token: Option<&str>) -> Result<Self, Failure> {
        let token = token.map(str::trim).filter(|t| !t.is_empty()).ok_or_else(|| {
            let program = std::env::args_os().next().map(|p| p.to_string_lossy().into_owned());
            let secret_set = std::env::var_os("FEDSEARCH_JWT_SECRET").is_some_and(|s| !s.is_empty());
            Failure::Usage(format!(
                "no token: pass --token or set FEDSEARCH_TOKEN (for the demo: {})",
                token_hint(program.as_deref().unwrap_or("fedsearch"), secret_set)
            ))
        })?;
        let token = token.strip_prefix("Bearer ").unwrap_or(token);
        let mut value: AsciiMetadataValue = MetadataValue::try_from(format!("Bearer {token}"))
            .map_err(|_| Failure::Usage("the token contains characters a token cannot have".into()))?;
        value.set_sensitive(true);
        Ok(Self(value))
    }
}

/// A shell command that mints a demo token, runnable exactly as printed: the program as it was
/// invoked (so `target/debug/fedsearch` stays that) and the secret — `FEDSEARCH_JWT_SECRET` when
/// it is set (`fedsearch token` reads it), else the demo router's.
pub fn token_hint(program: &str, secret_in_env: bool) -> String {
    let secret = if secret_in_env { String::new() } else { format!(" --secret {}", crate::presets::DEMO_SECRET) };
    format!("export FEDSEARCH_TOKEN=$({} token{secret} --user alice)", shell_word(program))
}

/// `word` as one POSIX shell word: as it is when that is safe, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

impl Interceptor for BearerAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        request.metadata_mut().insert("authorization", self.0.clone());
        Ok(request)
    }
}

pub type Client = FederatedSearchClient<InterceptedService<Channel, BearerAuth>>;

/// The router address as a URL: `http://host:port` as given, or grpcurl's `host:port` (no scheme)
/// meaning `http://host:port`. TLS (`https://`) is not supported yet; anything else is a usage error.
pub fn router_url(router: &str) -> Result<String, Failure> {
    let router = router.trim();
    let bad = || {
        Failure::Usage(format!("`--router {router}` is not an address like 127.0.0.1:50051 or http://127.0.0.1:50051"))
    };
    if router.starts_with("https://") {
        return Err(Failure::Usage("TLS to the router is not supported yet; use an http:// address".into()));
    }
    let url = match router.strip_prefix("http://") {
        Some(_) => router.to_string(),
        // Any other scheme (grpc://, dns:///...) is not guessed at.
        None if router.contains("://") => return Err(bad()),
        None => format!("http://{router}"),
    };
    // Both forms need a host and a numeric port: `http://router` alone would silently mean port 80.
    let uri: tonic::codegen::http::Uri = url.parse().map_err(|_| bad())?;
    let has_host = uri.host().is_some_and(|h| !h.is_empty());
    let has_port = uri.authority().is_some_and(|a| a.port_u16().is_some());
    let only_root = matches!(uri.path(), "" | "/") && uri.query().is_none();
    if !(has_host && has_port && only_root) {
        return Err(bad());
    }
    Ok(url)
}

/// The router as core's one endpoint type (`--router` is its address; the router's own
/// edge is plaintext, so there are no TLS settings).
pub fn router_endpoint(router: &str) -> Result<ServiceEndpoint, Failure> {
    Ok(ServiceEndpoint { connect_timeout: Some(CONNECT_TIMEOUT), ..ServiceEndpoint::new(router_url(router)?) })
}

/// A client for `router` that connects on first use (an unreachable router shows as UNAVAILABLE).
pub fn connect(router: &str, auth: BearerAuth) -> Result<Client, Failure> {
    let channel = router_endpoint(router)?
        .lazy_channel(None, "--router")
        .map_err(|e| Failure::Usage(format!("`--router {router}` is not usable: {e}")))?;
    Ok(FederatedSearchClient::with_interceptor(channel, auth))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_into_the_authorization_header_and_never_into_debug_output() {
        let mut auth = BearerAuth::new(Some("abc.def.ghi")).unwrap();
        assert!(!format!("{auth:?}").contains("abc"));
        let req = auth.call(Request::new(())).unwrap();
        assert_eq!(req.metadata().get("authorization").unwrap(), "Bearer abc.def.ghi");
        // A token pasted with its scheme is not doubled.
        let mut auth = BearerAuth::new(Some("Bearer abc.def.ghi")).unwrap();
        assert_eq!(auth.call(Request::new(())).unwrap().metadata().get("authorization").unwrap(), "Bearer abc.def.ghi");
    }

    #[test]
    fn a_missing_or_odd_token_is_a_usage_error() {
        for bad in [None, Some(""), Some("  "), Some("a\nb")] {
            let failure = BearerAuth::new(bad).unwrap_err();
            assert!(matches!(failure, Failure::Usage(_)), "{bad:?}");
            assert_eq!(failure.exit_code(), ExitCode::from(2));
        }
    }

    #[test]
    fn the_token_hint_names_the_program_as_invoked_and_a_secret_that_works() {
        assert_eq!(
            token_hint("target/debug/fedsearch", false),
            "export FEDSEARCH_TOKEN=$(target/debug/fedsearch token --secret fedsearch-demo-secret-change-me-0123456789 --user alice)"
        );
        assert_eq!(token_hint("fedsearch", true), "export FEDSEARCH_TOKEN=$(fedsearch token --user alice)");
        assert_eq!(
            token_hint("/opt/my tools/it's/fedsearch", true),
            r"export FEDSEARCH_TOKEN=$('/opt/my tools/it'\''s/fedsearch' token --user alice)"
        );
        assert_eq!(token_hint("", true), "export FEDSEARCH_TOKEN=$('' token --user alice)");
    }

    #[test]
    fn grpc_failures_are_one_line_with_the_code_name() {
        let f = Failure::from(Status::permission_denied("no access to\nwiki"));
        assert_eq!(f.line(), "error: PERMISSION_DENIED: no access to wiki");
        assert_eq!(f.exit_code(), ExitCode::from(1));
        assert_eq!(
            Failure::from(Status::unavailable("")).line(),
            "error: UNAVAILABLE: The service is currently unavailable"
        );
    }

    #[test]
    fn router_addresses_take_the_url_or_the_grpcurl_host_port_form() {
        for (given, url) in [
            ("http://127.0.0.1:50051", "http://127.0.0.1:50051"),
            ("http://127.0.0.1:50051/", "http://127.0.0.1:50051/"),
            ("127.0.0.1:50051", "http://127.0.0.1:50051"),
            ("localhost:50051", "http://localhost:50051"),
            ("router.internal:443", "http://router.internal:443"),
            ("[::1]:50051", "http://[::1]:50051"),
            (" 127.0.0.1:50051 ", "http://127.0.0.1:50051"),
        ] {
            assert_eq!(router_url(given).unwrap(), url, "{given}");
        }
        for bad in [
            "",
            "127.0.0.1",
            "http://127.0.0.1",
            ":50051",
            "127.0.0.1:port",
            "127.0.0.1:99999",
            "grpc://127.0.0.1:50051",
            "127.0.0.1:50051/v1",
            "http://127.0.0.1:50051/v1",
            "a b:50051",
        ] {
            let failure = router_url(bad).unwrap_err();
            assert!(matches!(failure, Failure::Usage(_)), "{bad:?}");
            assert!(
                failure.line().contains("127.0.0.1:50051 or http://127.0.0.1:50051"),
                "{bad:?}: {}",
                failure.line()
            );
        }
        let tls = router_url("https://router.example:443").unwrap_err();
        assert!(tls.line().contains("TLS"), "{}", tls.line());
    }

    #[tokio::test]
    async fn connect_accepts_both_address_forms() {
        let auth = || BearerAuth::new(Some("t")).unwrap();
        assert!(connect("127.0.0.1:50051", auth()).is_ok());
        assert!(connect("http://127.0.0.1:50051", auth()).is_ok());
        assert!(matches!(connect("https://router.example", auth()), Err(Failure::Usage(_))));
        assert!(matches!(connect("127.0.0.1", auth()), Err(Failure::Usage(_))));
    }
}
