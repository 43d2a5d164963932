//! Integration tests of the es-adapter against a real OpenSearch node, driven over real gRPC.
//!
//! Needs the shared node: `scripts/backends/opensearch.sh start && scripts/backends/opensearch.sh
//! seed`, then `set -a; . .run/opensearch.env; set +a`. The outage test starts its own node on
//! its own port and run dir.

mod common;
mod describe;
mod errors;
mod fetch;
mod filters;
mod formulation;
mod latency;
mod outage;
mod permissions;
mod relevance;
mod shapes;
