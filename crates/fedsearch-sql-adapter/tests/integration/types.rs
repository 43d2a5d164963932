//! Every common column type is read natively on each engine (no casts in templates), binary
//! columns are refused naming the column, and time parameters are bound and values read in the
//! database's zone and timestamp format.
//!
//! PostgreSQL and MariaDB values come from typed literals in the SELECT itself (no tables, so the
//! sample data is untouched); SQLite's types are declared types, so its rows live in a table of a
//! temporary database file of the test's own.

use fedsearch_proto::types::{Filters, SourceState, TimeRange};

use crate::{
    common::{Db, config_from_yaml, explicit, ids, search, serve},
    per_engine,
};

/// A throwaway SQLite file with typed columns; the adapter opens it read-only.
pub struct LiteFile {
    _dir: tempfile::TempDir,
    pub url: String,
}

pub async fn sqlite_file(statements: &[&str]) -> LiteFile {
    use sqlx::{Connection, Executor};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("types.sqlite");
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}?mode=rwc", path.display())).await.unwrap();
    for s in statements {
        conn.execute(sqlx::AssertSqlSafe(s.to_string())).await.unwrap();
    }
    conn.close().await.unwrap();
    LiteFile { url: format!("sqlite://{}?mode=ro", path.display()), _dir: dir }
}

const SQLITE_TYPES: &[&str] = &[
    "CREATE TABLE typed (id TEXT, amount NUMERIC(12, 2), whole NUMERIC(12, 2), day DATE, tod TIME, wall DATETIME, \
     flag BOOLEAN, doc JSON, n BIGINT, x DOUBLE, t VARCHAR(20), photo BLOB, owner TEXT)",
    "INSERT INTO typed VALUES ('r1', 899.5, 899, '2026-11-28', '17:15:07', '2026-11-28 17:15:00', 1, '{\"a\":1}', 42, \
     2.5, 'text', X'0102', 'alice')",
    "CREATE TABLE events (id TEXT, wall VARCHAR(19), owner TEXT)",
    "INSERT INTO events VALUES ('a', '2026-11-27 23:30:00', 'alice'), ('b', '2026-11-28 00:30:00', 'alice'), \
     ('c', '2026-11-28 23:30:00', 'alice'), ('d', '2026-11-29 00:30:00', 'alice'), ('e', '2026-11-28 12:00:00', 'bob')",
];

fn types_yaml(format: &str) -> String {
    format!(
        r#"
server: {{listen: '127.0.0.1:0'}}
database: {{url: 'sqlite::memory:', time_zone: Asia/Shanghai, timestamp_format: "{format}"}}
source: {{name: shop}}
templates:
  - name: types
    sql:
      postgres: >-
        SELECT * FROM (SELECT 'r1' AS id, CAST(899.5 AS NUMERIC(12, 2)) AS amount, CAST(899 AS NUMERIC(12, 2)) AS whole,
          DATE '2026-11-28' AS day, TIME '17:15:07' AS tod, TIMESTAMP '2026-11-28 17:15:00' AS wall,
          TIMESTAMPTZ '2026-11-28 09:15:00+00' AS instant, TRUE AS flag, CAST('{{"a": 1}}' AS JSONB) AS doc,
          CAST(42 AS BIGINT) AS n, CAST(2.5 AS DOUBLE PRECISION) AS x, CAST('text' AS VARCHAR(20)) AS t,
          CAST(7 AS SMALLINT) AS small, CAST(1.25 AS REAL) AS single, 'alice' AS owner) AS typed
        WHERE {{permission}}
      mysql: >-
        SELECT * FROM (SELECT 'r1' AS id, CAST(899.5 AS DECIMAL(12, 2)) AS amount, CAST(899 AS DECIMAL(12, 2)) AS whole,
          DATE '2026-11-28' AS day, TIME '17:15:07' AS tod, TIMESTAMP '2026-11-28 17:15:00' AS wall,
          JSON_OBJECT('a', 1) AS doc, CAST(42 AS SIGNED) AS n, CAST(2.5 AS DOUBLE) AS x, 'text' AS t,
          CAST(7 AS UNSIGNED) AS small, 'alice' AS owner) AS typed,
          JSON_TABLE('[1]', '$[*]' COLUMNS (flag BOOLEAN PATH '$')) AS booleans
        WHERE {{permission}}
      sqlite: "SELECT id, amount, whole, day, tod, wall, flag, doc, n, x, t FROM typed WHERE {{permission}}"
    permission: "typed.owner = :user.subject"
    hit: {{id: id, title: "{{id}} {{amount}}", date_column: wall, doc_type: row,
           metadata: [amount, whole, day, tod, wall, instant, flag, doc, n, x, t, small, single]}}
  - name: binary
    sql:
      postgres: "SELECT 'r1' AS id, CAST('\\x0102' AS BYTEA) AS photo WHERE {{permission}}"
      mysql: "SELECT 'r1' AS id, CAST('xy' AS BINARY) AS photo FROM DUAL WHERE {{permission}}"
      sqlite: "SELECT id, photo FROM typed WHERE {{permission}}"
    permission: "'alice' = :user.subject"
    hit: {{id: id, title: id, doc_type: row}}
  - name: events
    sql:
      postgres: >-
        SELECT * FROM (SELECT 'a' AS id, TIMESTAMP '2026-11-27 23:30:00' AS wall, 'alice' AS owner
          UNION ALL SELECT 'b', TIMESTAMP '2026-11-28 00:30:00', 'alice' UNION ALL SELECT 'c', TIMESTAMP '2026-11-28 23:30:00', 'alice'
          UNION ALL SELECT 'd', TIMESTAMP '2026-11-29 00:30:00', 'alice' UNION ALL SELECT 'e', TIMESTAMP '2026-11-28 12:00:00', 'bob') AS events
        WHERE events.wall >= :since AND (:until IS NULL OR events.wall < :until) AND {{permission}} ORDER BY events.wall
      mysql: >-
        SELECT * FROM (SELECT 'a' AS id, TIMESTAMP '2026-11-27 23:30:00' AS wall, 'alice' AS owner
          UNION ALL SELECT 'b', TIMESTAMP '2026-11-28 00:30:00', 'alice' UNION ALL SELECT 'c', TIMESTAMP '2026-11-28 23:30:00', 'alice'
          UNION ALL SELECT 'd', TIMESTAMP '2026-11-29 00:30:00', 'alice' UNION ALL SELECT 'e', TIMESTAMP '2026-11-28 12:00:00', 'bob') AS events
        WHERE events.wall >= :since AND (:until IS NULL OR events.wall < :until) AND {{permission}} ORDER BY events.wall
      sqlite: >-
        SELECT id, wall FROM events WHERE wall >= :since AND (:until IS NULL OR wall < :until) AND {{permission}} ORDER BY wall
    permission: "events.owner = :user.subject"
    params:
      since: {{type: timestamp, required: true}}
      until: {{type: timestamp}}
    time_range: {{from: since, to: until}}
    hit: {{id: id, title: "{{id}} {{wall}}", date_column: wall, doc_type: event}}
"#
    )
}

/// The text-timestamp variant for PostgreSQL/MariaDB: the same events as VARCHAR local times.
fn text_events(yaml: &str) -> String {
    yaml.replace("TIMESTAMP '", "'")
}

async fn url_for(db: Db) -> (String, Option<LiteFile>) {
    match db {
        Db::Sqlite => {
            let f = sqlite_file(SQLITE_TYPES).await;
            (f.url.clone(), Some(f))
        }
        _ => (db.ro_url(), None),
    }
}

async fn every_common_type_reads_natively(db: Db) {
    let (url, _file) = url_for(db).await;
    let format = if db == Db::Sqlite { "%Y-%m-%d %H:%M:%S" } else { "native" };
    let mut h = serve(config_from_yaml(&types_yaml(format), &url)).await;
    let (hits, done) = search(&mut h, explicit("alice", "types", &[])).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{db:?}: {done:?}");
    let m = &hits[0].metadata;
    assert_eq!(m["amount"], "899.50", "{db:?} NUMERIC/DECIMAL keeps its scale: {m:?}");
    assert_eq!(m["whole"], "899.00", "{db:?}: {m:?}");
    assert_eq!(hits[0].title, "r1 899.50");
    assert_eq!(m["day"], "2026-11-28", "{db:?}");
    assert_eq!(m["tod"], "17:15:07", "{db:?}");
    assert_eq!(m["wall"], "2026-11-28 17:15:00", "{db:?}");
    assert_eq!(m["flag"], "true", "{db:?} BOOLEAN");
    assert!(m["doc"].replace(' ', "") == r#"{"a":1}"#, "{db:?} JSON: {}", m["doc"]);
    assert_eq!((m["n"].as_str(), m["x"].as_str(), m["t"].as_str()), ("42", "2.5", "text"), "{db:?}");
    // The hit date: a zone-less timestamp read in the database's zone (Asia/Shanghai).
    assert_eq!(hits[0].updated_at.as_ref().map(|t| t.seconds), Some(1_795_857_300), "{db:?} 17:15 +08:00 = 09:15Z");
    match db {
        Db::Postgres => {
            assert_eq!(m["instant"], "2026-11-28T17:15:00+08:00", "timestamptz shown in the zone");
            assert_eq!((m["small"].as_str(), m["single"].as_str()), ("7", "1.25"));
        }
        Db::Mariadb => assert_eq!(m["small"], "7", "unsigned"),
        Db::Sqlite => {}
    }
    // Nobody else's rows: the permission predicate still applies.
    let (hits, _) = search(&mut h, explicit("bob", "types", &[])).await;
    assert!(hits.is_empty(), "{db:?}");
}

async fn a_binary_column_is_refused_naming_it(db: Db) {
    let (url, _file) = url_for(db).await;
    let mut h = serve(config_from_yaml(&types_yaml("native"), &url)).await;
    let (hits, done) = search(&mut h, explicit("alice", "binary", &[])).await;
    assert!(hits.is_empty());
    assert_eq!(
        (done.state, done.code.as_str()),
        (SourceState::Error as i32, "FAILED_PRECONDITION"),
        "{db:?}: {done:?}"
    );
    assert!(done.message.contains("`photo`") && done.message.contains("binary"), "{db:?}: {}", done.message);
}

/// The window of 28 November 2026 in Shanghai: 27 Nov 16:00Z – 28 Nov 16:00Z.
fn shanghai_day() -> Filters {
    let t = |s: &str| fedsearch_core::time::parse_rfc3339(s).unwrap();
    Filters {
        time_range: Some(TimeRange {
            from: Some(t("2026-11-28T00:00:00+08:00")),
            to: Some(t("2026-11-29T00:00:00+08:00")),
        }),
        ..Default::default()
    }
}

async fn time_filters_bind_in_the_databases_zone_and_format(db: Db) {
    let (url, _file) = url_for(db).await;
    let mut variants = vec![(
        "%Y-%m-%d %H:%M:%S",
        if db == Db::Sqlite { types_yaml("%Y-%m-%d %H:%M:%S") } else { text_events(&types_yaml("%Y-%m-%d %H:%M:%S")) },
    )];
    if db != Db::Sqlite {
        variants.push(("native", types_yaml("native")));
    }
    for (format, yaml) in variants {
        let mut h = serve(config_from_yaml(&yaml, &url)).await;
        // time_range → `since` / `until` (the template's own names), in Shanghai wall time.
        let mut q = explicit("alice", "events", &[]);
        q.filters = Some(shanghai_day());
        let (hits, done) = search(&mut h, q).await;
        assert_eq!(done.state, SourceState::Ok as i32, "{db:?} {format}: {done:?}");
        let mut got = ids(&hits);
        got.sort();
        assert_eq!(
            got,
            ["b", "c"],
            "{db:?} {format}: 00:30 and 23:30 local are on the 28th, 23:30 the day before is not"
        );
        let b = hits.iter().find(|h| h.local_id == "events:b").unwrap();
        assert_eq!(b.updated_at.as_ref().map(|t| t.seconds), Some(1_795_797_000), "{db:?} {format}: 00:30 +08:00");
        // An explicit parameter is read the same way.
        let (hits, _) = search(&mut h, explicit("alice", "events", &[("since", "2026-11-28T15:00:00Z")])).await;
        assert_eq!(ids(&hits), ["c", "d"], "{db:?} {format}: 23:00 local and later");
        let (hits, _) = search(&mut h, explicit("bob", "events", &[("since", "2026-11-01T00:00:00Z")])).await;
        assert_eq!(ids(&hits), ["e"], "{db:?} {format}: bob sees his own only");
    }
}

per_engine!(every_common_type_reads_natively => types_postgres, types_mariadb, types_sqlite);
per_engine!(a_binary_column_is_refused_naming_it => binary_refused_postgres, binary_refused_mariadb, binary_refused_sqlite);
per_engine!(time_filters_bind_in_the_databases_zone_and_format => time_zone_postgres, time_zone_mariadb, time_zone_sqlite);

/// Europe/Berlin around the change to summer time (29 March 2026, 01:00Z): 12:00 on the 28th is
/// +01:00 (11:00Z), 12:00 on the 30th is +02:00 (10:00Z). A zone bound as one fixed offset puts
/// one side an hour off.
const DST_YAML: &str = r#"
server: {listen: '127.0.0.1:0'}
database: {url: 'sqlite::memory:', time_zone: Europe/Berlin, timestamp_format: "FORMAT"}
source: {name: shop}
templates:
  - name: dst
    sql:
      postgres: >-
        SELECT * FROM (SELECT 'w' AS id, TIMESTAMP '2026-03-28 12:00:00' AS wall, 'alice' AS owner
          UNION ALL SELECT 's', TIMESTAMP '2026-03-30 12:00:00', 'alice') AS ev
        WHERE ev.wall >= :since AND ev.wall < :until AND {permission} ORDER BY ev.wall
      mysql: >-
        SELECT * FROM (SELECT 'w' AS id, TIMESTAMP '2026-03-28 12:00:00' AS wall, 'alice' AS owner
          UNION ALL SELECT 's', TIMESTAMP '2026-03-30 12:00:00', 'alice') AS ev
        WHERE ev.wall >= :since AND ev.wall < :until AND {permission} ORDER BY ev.wall
      sqlite: "SELECT id, wall FROM ev WHERE wall >= :since AND wall < :until AND {permission} ORDER BY wall"
    permission: "ev.owner = :user.subject"
    params:
      since: {type: timestamp, required: true}
      until: {type: timestamp, required: true}
    hit: {id: id, title: "{id} {wall}", date_column: wall, doc_type: event}
  - name: stamps
    sql:
      postgres: "SELECT 'x' AS id, NOW() AS at, 0 AS epoch WHERE {permission}"
      mysql: >-
        SELECT CONCAT('t', j.n) AS id, j.t AS at, UNIX_TIMESTAMP(j.t) AS epoch
        FROM JSON_TABLE('[{"n": 1, "t": "2026-03-28 12:00:00"}, {"n": 2, "t": "2026-03-30 12:00:00"}]', '$[*]'
          COLUMNS (n INT PATH '$.n', t TIMESTAMP PATH '$.t')) AS j
        WHERE {permission} ORDER BY j.n
      sqlite: "SELECT 'x' AS id, 'x' AS at, 0 AS epoch WHERE {permission}"
    permission: "'alice' = :user.subject"
    hit: {id: id, title: "{id} {at}", date_column: at, doc_type: stamp, metadata: [at, epoch]}
"#;

async fn wall_times_convert_with_the_zones_own_dst_rules(db: Db) {
    let _file;
    let url = if db == Db::Sqlite {
        let f = sqlite_file(&[
            "CREATE TABLE ev (id TEXT, wall DATETIME, owner TEXT)",
            "INSERT INTO ev VALUES ('w', '2026-03-28 12:00:00', 'alice'), ('s', '2026-03-30 12:00:00', 'alice')",
        ])
        .await;
        let url = f.url.clone();
        _file = Some(f);
        url
    } else {
        _file = None;
        db.ro_url()
    };
    let formats: &[&str] = if db == Db::Sqlite { &["%Y-%m-%d %H:%M:%S"] } else { &["native", "%Y-%m-%d %H:%M:%S"] };
    for format in formats {
        let mut yaml = DST_YAML.replace("FORMAT", format);
        if *format != "native" {
            yaml = text_events(&yaml);
        }
        let mut h = serve(config_from_yaml(&yaml, &url)).await;
        // 10:30Z on the 28th is 11:30 CET, 10:30Z on the 30th is 12:30 CEST: both rows are inside.
        // A winter offset for both would make `until` 11:30 (dropping `s`), a summer one `since`
        // 12:30 (dropping `w`).
        let q = explicit("alice", "dst", &[("since", "2026-03-28T10:30:00Z"), ("until", "2026-03-30T10:30:00Z")]);
        let (hits, done) = search(&mut h, q).await;
        assert_eq!(done.state, SourceState::Ok as i32, "{db:?} {format}: {done:?}");
        assert_eq!(ids(&hits), ["w", "s"], "{db:?} {format}: each bound time in its own offset");
        let date = |i: usize| hits[i].updated_at.as_ref().map(|t| t.seconds);
        assert_eq!(date(0), Some(1_774_695_600), "{db:?} {format}: 12:00 CET = 11:00Z");
        assert_eq!(date(1), Some(1_774_864_800), "{db:?} {format}: 12:00 CEST = 10:00Z");
        // the other side of each bound is outside
        let q = explicit("alice", "dst", &[("since", "2026-03-28T11:00:01Z"), ("until", "2026-03-30T10:00:00Z")]);
        let (hits, _) = search(&mut h, q).await;
        assert!(hits.is_empty(), "{db:?} {format}: {:?}", ids(&hits));
        if db == Db::Mariadb && *format == "native" {
            // A TIMESTAMP column (an instant, shown in the session's zone) is read as the server's
            // own UNIX_TIMESTAMP of it, on both sides of the change, whether the server knows the
            // zone by name or the session runs in a fixed offset.
            let (hits, done) = search(&mut h, explicit("alice", "stamps", &[])).await;
            assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
            assert_eq!(hits.len(), 2);
            for hit in &hits {
                let epoch: i64 = hit.metadata["epoch"].parse().unwrap();
                assert_eq!(hit.updated_at.as_ref().map(|t| t.seconds), Some(epoch), "{hit:?}");
            }
        }
    }
}

per_engine!(wall_times_convert_with_the_zones_own_dst_rules => dst_postgres, dst_mariadb, dst_sqlite);
