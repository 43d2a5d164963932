//! Value maps (words in either language → the code a column holds), safe "contains" patterns
//! (`%` and `_` in a value match literally) and multi-term parameters, on every engine.

use fedsearch_proto::types::SourceState;

use crate::{
    common::{Db, config_from_yaml, explicit, ids, search, serve},
    per_engine,
    types::{LiteFile, sqlite_file},
};

const ROWS: &str = "SELECT 'n1' AS id, 'SHIPPED' AS status, '100% cotton_shirt' AS note, 'alice' AS owner \
    UNION ALL SELECT 'n2', 'SHIPPED', '100 cotton shirts', 'alice' \
    UNION ALL SELECT 'n3', 'PENDING', 'wool socks', 'alice' \
    UNION ALL SELECT 'n4', 'SHIPPED', '100% cotton_shirt', 'bob'";

fn yaml() -> String {
    let filter = "(:status IS NULL OR n.status = :status) AND (:term IS NULL OR n.note LIKE :term) \
        AND (:start IS NULL OR n.note LIKE :start) AND {any: n.note LIKE :words} AND {all: n.note LIKE :every} \
        AND n.status IN (:statuses) AND {permission} ORDER BY n.id";
    format!(
        r#"
server: {{listen: '127.0.0.1:0'}}
database: {{url: 'sqlite::memory:'}}
source: {{name: shop}}
templates:
  - name: notes
    sql:
      default: "SELECT n.id, n.status, n.note FROM ({ROWS}) AS n WHERE {filter}"
      sqlite: "SELECT n.id, n.status, n.note FROM notes AS n WHERE {filter}"
    permission: "n.owner = :user.subject"
    params:
      status:
        type: string
        pattern: '[A-Z_]+'
        values: {{已发货: SHIPPED, shipped: SHIPPED, 待发货: PENDING, not shipped yet: PENDING}}
      term: {{type: string, like: contains, max_len: 40}}
      start: {{type: string, like: prefix}}
      words: {{type: string, like: contains, multi: true, from_terms: true}}
      every: {{type: string, like: contains, multi: true}}
      statuses: {{type: string, multi: true, default: "SHIPPED PENDING", values: {{发货: SHIPPED}}}}
    hit: {{id: id, title: "{{id}} {{note}}", doc_type: note, metadata: [status]}}
"#
    )
}

async fn harness(db: Db) -> (crate::common::Harness, Option<LiteFile>) {
    let (url, file) = match db {
        Db::Sqlite => {
            let f = sqlite_file(&[
                "CREATE TABLE notes (id TEXT, status TEXT, note TEXT, owner TEXT)",
                &format!("INSERT INTO notes {ROWS}"),
            ])
            .await;
            (f.url.clone(), Some(f))
        }
        _ => (db.ro_url(), None),
    };
    (serve(config_from_yaml(&yaml(), &url)).await, file)
}

async fn run(h: &mut crate::common::Harness, who: &str, text: &str, params: &[(&str, &str)]) -> Vec<String> {
    let mut q = explicit(who, "notes", params);
    q.text = text.into();
    let (hits, done) = search(h, q).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{text} {params:?}: {done:?}");
    ids(&hits)
}

async fn value_maps_turn_words_into_codes(db: Db) {
    let (mut h, _f) = harness(db).await;
    assert_eq!(run(&mut h, "alice", "哪些已发货了", &[]).await, ["n1", "n2"], "{db:?}: 已发货 → SHIPPED");
    assert_eq!(run(&mut h, "alice", "which orders were shipped?", &[]).await, ["n1", "n2"], "{db:?}");
    assert_eq!(run(&mut h, "alice", "what is not shipped yet", &[]).await, ["n3"], "{db:?}: the longest word wins");
    assert_eq!(run(&mut h, "alice", "", &[("status", "Shipped")]).await, ["n1", "n2"], "{db:?}: a given word maps");
    assert_eq!(run(&mut h, "alice", "", &[("status", "PENDING")]).await, ["n3"], "{db:?}: the code itself");
    assert_eq!(run(&mut h, "alice", "", &[("statuses", "发货")]).await, ["n1", "n2"], "{db:?}: maps in lists too");
    assert_eq!(run(&mut h, "bob", "已发货", &[]).await, ["n4"], "{db:?}: the permission predicate still applies");
    let mut q = explicit("alice", "notes", &[("status", "已经")]);
    q.text = String::new();
    let (_, done) = search(&mut h, q).await;
    assert_eq!(done.code, "INVALID_ARGUMENT", "{db:?}: an unmapped word fails the pattern: {done:?}");
}

async fn contains_and_multi_term_parameters_match_literally(db: Db) {
    let (mut h, _f) = harness(db).await;
    assert_eq!(run(&mut h, "alice", "", &[("term", "100%")]).await, ["n1"], "{db:?}: % is literal");
    assert_eq!(run(&mut h, "alice", "", &[("term", "n_s")]).await, ["n1"], "{db:?}: _ is literal (n2 has `n s`)");
    assert_eq!(run(&mut h, "alice", "", &[("term", "cotton")]).await, ["n1", "n2"], "{db:?}");
    assert_eq!(run(&mut h, "alice", "", &[("term", "!")]).await, Vec::<String>::new(), "{db:?}: the escape char too");
    assert_eq!(run(&mut h, "alice", "", &[("start", "wool")]).await, ["n3"], "{db:?}: prefix");
    assert_eq!(run(&mut h, "alice", "", &[("start", "socks")]).await, Vec::<String>::new(), "{db:?}: prefix only");
    assert_eq!(run(&mut h, "alice", "", &[("words", "wool, shirts")]).await, ["n2", "n3"], "{db:?}: any term");
    assert_eq!(run(&mut h, "alice", "", &[("every", "100 cotton")]).await, ["n1", "n2"], "{db:?}: all terms");
    assert_eq!(run(&mut h, "alice", "", &[("every", "100% shirt")]).await, ["n1"], "{db:?}: all, literally");
    assert_eq!(
        run(&mut h, "alice", "", &[("words", "' OR 1=1 --")]).await,
        Vec::<String>::new(),
        "{db:?}: bound, never SQL"
    );
    // from_terms: the router's terms fill the multi-term parameter when nothing else does.
    let mut q = explicit("alice", "notes", &[]);
    q.terms = vec!["socks".into(), "羊毛".into()];
    let (hits, done) = search(&mut h, q).await;
    assert_eq!((ids(&hits), done.state), (vec!["n3".to_string()], SourceState::Ok as i32), "{db:?}: {done:?}");
    let (_, done) = search(&mut h, explicit("alice", "notes", &[("words", &"a ".repeat(17))])).await;
    assert_eq!(done.code, "INVALID_ARGUMENT", "{db:?}: too many terms: {done:?}");
}

per_engine!(value_maps_turn_words_into_codes => value_maps_postgres, value_maps_mariadb, value_maps_sqlite);
per_engine!(contains_and_multi_term_parameters_match_literally => contains_postgres, contains_mariadb, contains_sqlite);
