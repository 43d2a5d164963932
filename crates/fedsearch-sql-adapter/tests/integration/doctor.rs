//! The self-check `fedsearch doctor` reads: the shipped config is clean on every engine, and a
//! purpose-broken config reports each problem with a fix.

use fedsearch_adapter_kit::diagnostics::{Diagnostic, DiagnosticSeverity};
use fedsearch_sql_adapter::SqlAdapter;

use crate::{
    common::{Db, config_for, config_from_yaml},
    per_engine,
};

fn errors(found: &[Diagnostic]) -> Vec<String> {
    found
        .iter()
        .filter(|d| d.severity == DiagnosticSeverity::Error as i32)
        .map(|d| format!("{}: {}", d.check, d.message))
        .collect()
}

const BROKEN: &str = r#"
server: {listen: '127.0.0.1:0'}
database: {url: 'sqlite::memory:'}
source: {name: shop}
list_attributes: [business_lines]
templates:
  - name: bad_hit
    sql: "SELECT o.order_no, o.placed_at FROM orders o WHERE o.placed_at >= :from AND {permission} LIMIT :limit"
    permission: "o.business_line IN (:user.business_lines)"
    params: {from: {type: timestamp}}
    hit: {id: order_no, title: "{order_no} {item}", doc_type: order, metadata: [nope]}
  - name: binary
    sql:
      postgres: "SELECT o.order_no, convert_to(o.item, 'UTF8') AS photo FROM orders o WHERE {permission}"
      mysql: "SELECT o.order_no, CAST(o.item AS BINARY) AS photo FROM orders o WHERE {permission}"
      sqlite: "SELECT o.order_no, o.item AS photo FROM orders o WHERE {permission}"
    permission: "o.business_line IN (:user.business_lines)"
    hit: {id: order_no, title: order_no, doc_type: order}
  - name: everybody
    public: true
    sql: "SELECT o.order_no FROM orders o LIMIT :limit"
    hit: {id: order_no, title: order_no, doc_type: order}
  - name: missing_table
    sql: "SELECT x.id FROM no_such_table x WHERE {permission}"
    permission: "x.owner = :user.subject"
    hit: {id: id, title: id, doc_type: x}
"#;

async fn the_self_check_passes_the_shipped_config_and_names_each_mistake(db: Db) {
    let adapter = SqlAdapter::new(&config_for(&db.ro_url())).unwrap();
    let found = adapter.self_check().await;
    assert!(errors(&found).is_empty(), "{db:?}: {:?}", errors(&found));
    assert!(found.iter().any(|d| d.check == "database" && d.severity == DiagnosticSeverity::Ok as i32), "{db:?}");
    assert!(
        found.iter().any(|d| d.check == "template order_by_number" && d.message.contains("readable")),
        "{db:?}: {found:?}"
    );
    let tz = found.iter().find(|d| d.check == "time_zone").expect("time zone finding");
    assert_eq!(tz.severity, DiagnosticSeverity::Warning as i32, "{db:?}: time parameters, no time_zone: {tz:?}");
    assert!(!tz.fix.is_empty());

    let adapter = SqlAdapter::new(&config_from_yaml(BROKEN, &db.ro_url())).unwrap();
    let found = adapter.self_check().await;
    let errs = errors(&found).join("\n");
    assert!(errs.contains("template bad_hit: `hit.metadata` names `nope`"), "{db:?}: {errs}");
    assert!(errs.contains("names `item`"), "{db:?}: a title placeholder the template does not return: {errs}");
    assert!(errs.contains("template missing_table: the database refuses the statement"), "{db:?}: {errs}");
    if db != Db::Sqlite {
        // SQLite has no type for an expression: its values are checked when they are read.
        assert!(errs.contains("template binary: returns binary data") && errs.contains("`photo`"), "{db:?}: {errs}");
    }
    let public = found.iter().find(|d| d.check == "template everybody").unwrap();
    assert_eq!(public.severity, DiagnosticSeverity::Warning as i32, "{db:?}");
    for d in &found {
        crate::common::assert_no_leak_except_names(&d.message);
    }
}

/// Orca Freight (the second tuning company) on its own databases: no casts, no per-engine SQL,
/// and the self-check finds nothing to fix.
async fn the_second_companys_config_is_clean_on_every_engine(db: Db) {
    let var = match db {
        Db::Postgres => "ORCA_PG_RO_URL",
        Db::Mariadb => "ORCA_MARIADB_RO_URL",
        Db::Sqlite => "ORCA_SQLITE_URL",
    };
    let url =
        std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set: eval \"$(scripts/backends/all.sh env)\""));
    let yaml = std::fs::read_to_string(crate::common::repo_root().join("deploy/eval/orca/sql-adapter.yaml"))
        .unwrap()
        .replace("url_env: SQL_ADAPTER_DATABASE_URL", &format!("url: '{url}'"));
    assert!(
        !yaml.contains("CAST(") && !yaml.contains("::text") && !yaml.contains("fragments:"),
        "no casts or fragments"
    );
    let adapter = SqlAdapter::new(&config_from_yaml(&yaml, &url)).unwrap();
    let found = adapter.self_check().await;
    assert!(errors(&found).is_empty(), "{db:?}: {:?}", errors(&found));
    assert!(found.iter().filter(|d| d.check.starts_with("template ")).count() >= 10, "{db:?}: {found:?}");
}

per_engine!(the_second_companys_config_is_clean_on_every_engine => doctor_orca_postgres, doctor_orca_mariadb, doctor_orca_sqlite);
per_engine!(the_self_check_passes_the_shipped_config_and_names_each_mistake => doctor_postgres, doctor_mariadb, doctor_sqlite);

/// A zone with DST on a MySQL/MariaDB server: the self-check says whether the server knows it by
/// name (its time zone tables), as the server itself answers; a zone without DST needs no tables.
#[tokio::test]
async fn doctor_names_missing_time_zone_tables_for_a_dst_zone_mariadb() {
    use sqlx::Connection;
    let url = Db::Mariadb.ro_url();
    let mut conn = sqlx::MySqlConnection::connect(&url).await.expect("mariadb connects");
    let knows: Option<i64> =
        sqlx::query_scalar("SELECT CONVERT_TZ('2026-01-01 00:00:00', 'UTC', 'Europe/Berlin') IS NOT NULL")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    let config = |zone: &str| {
        BROKEN.replace(
            "database: {url: 'sqlite::memory:'}",
            &format!("database: {{url: 'sqlite::memory:', time_zone: {zone}}}"),
        )
    };
    let found = SqlAdapter::new(&config_from_yaml(&config("Europe/Berlin"), &url)).unwrap().self_check().await;
    let tables = found.iter().find(|d| d.check == "time_zone_tables");
    match knows {
        Some(1) => assert!(tables.is_none(), "the server has the tables: {tables:?}"),
        _ => {
            let d = tables.expect("a warning about the missing time zone tables");
            assert_eq!(d.severity, DiagnosticSeverity::Warning as i32);
            assert!(d.message.contains("Europe/Berlin") && d.fix.contains("tzinfo_to_sql"), "{d:?}");
        }
    }
    let found = SqlAdapter::new(&config_from_yaml(&config("Asia/Shanghai"), &url)).unwrap().self_check().await;
    assert!(found.iter().all(|d| d.check != "time_zone_tables"), "no DST, a fixed offset is exact: {found:?}");
}

/// Nimbus (the held-out company) reads its NUMERIC columns natively: its config has no casts.
#[tokio::test]
async fn the_held_out_companys_config_has_no_casts_and_is_clean_sqlite() {
    let url = std::env::var("NIMBUS_SQLITE_URL")
        .unwrap_or_else(|_| panic!("NIMBUS_SQLITE_URL is not set: eval \"$(scripts/backends/all.sh env)\""));
    let yaml = std::fs::read_to_string(crate::common::repo_root().join("deploy/eval/nimbus/sql-adapter.yaml"))
        .unwrap()
        .replace("url_env: SQL_ADAPTER_DATABASE_URL", &format!("url: '{url}'"));
    for cast in ["CAST(", "::text", "printf(", "fragments:"] {
        assert!(!yaml.contains(cast), "no `{cast}` in the Nimbus config");
    }
    let found = SqlAdapter::new(&config_from_yaml(&yaml, &url)).unwrap().self_check().await;
    assert!(errors(&found).is_empty(), "{:?}", errors(&found));
    assert!(found.iter().any(|d| d.check.starts_with("template ") && d.message.contains("readable")), "{found:?}");
}
