//! Shared service kit of fedsearch: identity, telemetry, trace propagation, config, serving.
//!
//! Every binary (router, fusion, the adapters) builds on this crate so that the cross-cutting
//! behaviour — how a token is verified, how a trace crosses a hop, how a service shuts down —
//! is written once.

pub mod admin;
pub mod assertion;
pub mod auth;
pub mod config;
pub mod endpoints;
pub mod errors;
pub mod grpc;
pub mod metrics;
pub mod propagation;
mod reload;
pub mod secret;
pub mod shutdown;
pub mod telemetry;
pub mod text;
pub mod time;
pub mod tls;

pub use auth::{AuthError, Identity, JwtConfig, JwtVerifier};
