//! The fedsearch command line: the connection to the router, the bearer token on every call,
//! and what can go wrong (a usage error exits 2, a gRPC error exits 1).

use std::{process::ExitCode, time::Duration};

use fedsearch_proto::api::federated_search_client::FederatedSearchClient;
use tonic::{
    Request, Status,
    metadata::{AsciiMetadataValue, MetadataValue},
    service::{Interceptor, interceptor::InterceptedService},
    transport::{Channel, Endpoint},
};

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
            Failure::Usage(
                "no token: pass --token or set FEDSEARCH_TOKEN (for the demo: export FEDSEARCH_TOKEN=$(fedsearch token --user alice))"
                    .into(),
            )
        })?;
        let token = token.strip_prefix("Bearer ").unwrap_or(token);
        let mut value: AsciiMetadataValue = MetadataValue::try_from(format!("Bearer {token}"))
            .map_err(|_| Failure::Usage("the token contains characters a token cannot have".into()))?;
        value.set_sensitive(true);
        Ok(Self(value))
    }
}

impl Interceptor for BearerAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        request.metadata_mut().insert("authorization", self.0.clone());
        Ok(request)
    }
}

pub type Client = FederatedSearchClient<InterceptedService<Channel, BearerAuth>>;

/// A client for `router` that connects on first use (an unreachable router shows as UNAVAILABLE).
pub fn connect(router: &str, auth: BearerAuth) -> Result<Client, Failure> {
    let bad = || Failure::Usage(format!("`--router {router}` is not a URL like http://127.0.0.1:50051"));
    if !router.starts_with("http://") {
        return Err(if router.starts_with("https://") {
            Failure::Usage("TLS to the router is not supported yet; use an http:// address".into())
        } else {
            bad()
        });
    }
    let endpoint = Endpoint::from_shared(router.to_string()).map_err(|_| bad())?;
    let channel = endpoint.connect_timeout(CONNECT_TIMEOUT).tcp_nodelay(true).connect_lazy();
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
    fn grpc_failures_are_one_line_with_the_code_name() {
        let f = Failure::from(Status::permission_denied("no access to\nwiki"));
        assert_eq!(f.line(), "error: PERMISSION_DENIED: no access to wiki");
        assert_eq!(f.exit_code(), ExitCode::from(1));
        assert_eq!(
            Failure::from(Status::unavailable("")).line(),
            "error: UNAVAILABLE: The service is currently unavailable"
        );
    }

    #[tokio::test]
    async fn router_addresses_are_checked() {
        let auth = || BearerAuth::new(Some("t")).unwrap();
        assert!(matches!(connect("127.0.0.1:50051", auth()), Err(Failure::Usage(_))));
        assert!(matches!(connect("https://router.example", auth()), Err(Failure::Usage(_))));
        assert!(connect("http://127.0.0.1:50051", auth()).is_ok());
    }
}
