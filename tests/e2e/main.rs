//! End-to-end scenarios: router → adapters → fusion as real processes over real gRPC, against
//! the real backends `make test` starts (OpenSearch, SQLite/PostgreSQL, DokuWiki).

mod config_check;
mod doctor;
mod faults;
mod harness;
mod hybrid;
mod mcp;
mod mcp_inspector;
mod mcp_stateless;
mod observability;
mod replicas;
mod spine;
mod trace;
mod zero_trust;
