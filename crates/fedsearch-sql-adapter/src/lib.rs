//! The SQL adapter: whitelisted, permission-bound query templates over PostgreSQL, MySQL/MariaDB and SQLite.
//!
//! The adapter answers only through query templates declared in its config. Each template has
//! named parameters with a schema, a permission predicate bound from the end user's context
//! (refused at start-up when missing, unless the template is marked `public: true`), and a
//! mapping from rows to hits. The DSN picks the engine; the adapter connects with a read-only
//! role (SQLite: `mode=ro`), binds every value and generates no SQL beyond placeholders.
//!
//! Modules: [`config`] (the file), [`sql`] (named parameters → placeholders), [`template`]
//! (compiled whitelist and value checks), [`select`] (template choice and parameter
//! extraction), [`db`] (pool, timeouts, error mapping), [`mapping`] (rows → hits),
//! [`adapter`] (the kit's `Adapter`).

pub mod adapter;
pub mod config;
pub mod db;
pub mod describe;
pub mod diagnose;
pub mod followup;
pub mod lookup;
pub mod mapping;
pub mod ranking;
pub mod select;
pub mod sql;
pub mod template;
pub mod timefmt;

pub use adapter::{ADAPTER_NAME, Outcome, SqlAdapter};
pub use config::SqlAdapterConfig;
