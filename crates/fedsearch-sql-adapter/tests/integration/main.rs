//! Integration tests of the sql-adapter against real PostgreSQL, MariaDB and SQLite.
//!
//! Start the backends with `scripts/backends/{postgres,mariadb,sqlite}.sh start` and export
//! their env files (`set -a; . .run/postgres.env; . .run/mariadb.env; . .run/sqlite.env; set +a`).
//! Every scenario runs the same checks on all three engines; the outage test starts its own
//! PostgreSQL and MariaDB instances on their own ports.

#[path = "../common/mod.rs"]
mod common;

mod doctor;
mod followups;
mod injection;
mod latency;
mod lookups;
mod outage;
mod params;
mod readonly;
mod templates;
mod timeout;
mod types;

/// Declares one `#[tokio::test]` per engine for `scenario(db)`.
#[macro_export]
macro_rules! per_engine {
    ($scenario:path => $pg:ident, $maria:ident, $lite:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $pg() {
            $scenario($crate::common::Db::Postgres).await
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $maria() {
            $scenario($crate::common::Db::Mariadb).await
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $lite() {
            $scenario($crate::common::Db::Sqlite).await
        }
    };
}
