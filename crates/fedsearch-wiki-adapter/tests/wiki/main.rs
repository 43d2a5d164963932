//! Integration tests of the wiki adapter, driven through its real gRPC service.
//!
//! DokuWiki scenarios run against the real DokuWiki started by the project's script:
//!
//! ```text
//! scripts/backends/dokuwiki.sh install && scripts/backends/dokuwiki.sh start
//! set -a; . .run/dokuwiki.env; set +a      # DOKUWIKI_URL, DOKUWIKI_SECRETS
//! cargo test -p fedsearch-wiki-adapter
//! ```
//!
//! Without those variables the DokuWiki tests fail and say how to start the wiki. The recovery
//! scenario starts its own instance (own run dir, own port). Confluence scenarios serve fixture
//! JSON written from Atlassian's documented shapes from an in-test HTTP server.

mod common;
mod confluence;
mod dokuwiki_acl;
mod dokuwiki_errors;
mod dokuwiki_import;
mod dokuwiki_or;
mod dokuwiki_recovery;
mod latency;
