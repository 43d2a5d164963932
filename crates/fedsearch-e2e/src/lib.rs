//! End-to-end tests: the real binaries as processes, against the real backends.
//!
//! The tests live in the top-level `tests/e2e/` folder (one test binary, a module per
//! scenario); this crate only gives them a package. Run them with `make test`, which builds the
//! binaries and starts PostgreSQL, MariaDB, SQLite, OpenSearch and DokuWiki first.

pub mod pki;
