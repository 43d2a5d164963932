//! `scripts/backends/dokuwiki.sh import DIR`: a new company's folder of pages, with their dates
//! and ACLs, loaded into a (private) DokuWiki — the adapter then finds the pages as the company's
//! own user, with the dates of the folder's revision history (an old and a new policy differ), the
//! other companies' accounts keep their passwords, and nobody else reads the new pages. A page
//! dated on several lines has that many revisions: its hit carries the current revision's date,
//! the revision count and the first revision's date (as `version.effective_at` too), read from
//! `wiki.getPageVersions` as the user.

use std::{path::Path, process::Command};

use fedsearch_proto::types::SourceState;

use crate::common::*;

fn script(run_dir: &Path, port: u16, args: &[&str]) -> std::process::Output {
    Command::new(repo_root().join("scripts/backends/dokuwiki.sh"))
        .args(args)
        .env("FEDSEARCH_RUN_DIR", run_dir)
        .env("DOKUWIKI_PORT", port.to_string())
        .output()
        .expect("scripts/backends/dokuwiki.sh runs")
}

fn ok(out: std::process::Output, what: &str) {
    assert!(out.status.success(), "dokuwiki.sh {what} failed: {}", String::from_utf8_lossy(&out.stderr));
}

struct Instance {
    run_dir: tempfile::TempDir,
    port: u16,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = script(self.run_dir.path(), self.port, &["stop"]);
    }
}

fn secrets_entry(file: &Path, subject: &str) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let start = text.find(&format!("\n{subject}:\n")).unwrap_or_else(|| panic!("{subject} in the secrets file"));
    text[start + 1..].lines().take(3).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn an_imported_folder_is_searchable_with_its_dates_and_acls() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let instance = Instance { run_dir: tempfile::tempdir().unwrap(), port };
    let run = instance.run_dir.path();
    ok(script(run, port, &["start"]), "start");
    let secrets = run.join("dokuwiki/secrets.yaml");
    let alice_before = secrets_entry(&secrets, "alice");

    let folder = tempfile::tempdir().unwrap();
    let pages = folder.path().join("acme/policy");
    std::fs::create_dir_all(&pages).unwrap();
    std::fs::write(
        pages.join("parcel_refund_2024.txt"),
        "====== Parcel refund policy 2024 ======\nRefunds within 14 days.\n",
    )
    .unwrap();
    std::fs::write(pages.join("parcel_refund.txt"), "====== Parcel refund policy ======\nRefunds within 30 days.\n")
        .unwrap();
    std::fs::write(
        folder.path().join("mtimes.txt"),
        "acme:policy:parcel_refund_2024  2024-01-10T08:00:00Z  zoe\n\
         acme:policy:parcel_refund_2024  2025-02-01T08:00:00Z  amy\n\
         acme:policy:parcel_refund  2026-06-01T08:00:00Z  zoe\n\
         acme:policy:parcel_refund_2024  2026-07-01T08:00:00Z  zoe\n",
    )
    .unwrap();
    std::fs::write(
        folder.path().join("auth.spec"),
        "user|zoe|Zoe|zoe@acme.example|user,acme|zoe\nacl|acme:*|@ALL|0\nacl|acme:*|@acme|1\n",
    )
    .unwrap();
    ok(script(run, port, &["import", folder.path().to_str().unwrap()]), "import");
    assert_eq!(secrets_entry(&secrets, "alice"), alice_before, "existing accounts keep their passwords");

    let url = format!("http://127.0.0.1:{port}");
    let mut served = serve(dokuwiki_config(&url, secrets.to_str().unwrap())).await;
    let (hits, done) = search(&mut served.client, "parcel refund", "zoe").await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    let date = |id: &str| {
        hits.iter()
            .find(|h| h.local_id == id)
            .unwrap_or_else(|| panic!("{id} in {hits:?}"))
            .updated_at
            .as_ref()
            .unwrap()
            .seconds
    };
    assert_eq!(date("acme:policy:parcel_refund_2024"), 1_782_892_800, "2026-07-01T08:00:00Z: its current revision");
    assert_eq!(date("acme:policy:parcel_refund"), 1_780_300_800, "2026-06-01T08:00:00Z");
    // the revision history: the old policy was edited last, but written first
    let hit = |id: &str| hits.iter().find(|h| h.local_id == id).unwrap();
    let meta = |id: &str, key: &str| hit(id).metadata.get(key).cloned().unwrap_or_default();
    let effective = |id: &str| hit(id).version.as_ref().and_then(|v| v.effective_at.as_ref()).map(|t| t.seconds);
    assert_eq!(meta("acme:policy:parcel_refund_2024", "revision_count"), "3");
    assert_eq!(meta("acme:policy:parcel_refund_2024", "first_revision_at"), "2024-01-10T08:00:00Z");
    assert_eq!(
        effective("acme:policy:parcel_refund_2024"),
        Some(1_704_873_600),
        "no stated date: the first revision's"
    );
    assert_eq!(meta("acme:policy:parcel_refund", "revision_count"), "1");
    assert_eq!(meta("acme:policy:parcel_refund", "first_revision_at"), "2026-06-01T08:00:00Z");
    assert_eq!(effective("acme:policy:parcel_refund"), Some(1_780_300_800));
    let page = fetch(&mut served.client, "acme:policy:parcel_refund_2024", user("zoe")).await.expect("zoe reads it");
    assert_eq!(page.updated_at.map(|t| t.seconds), Some(1_782_892_800));
    assert_eq!(page.metadata.get("revision_count").map(String::as_str), Some("3"));
    assert_eq!(page.metadata.get("first_revision_at").map(String::as_str), Some("2024-01-10T08:00:00Z"));
    // the sample company's user reads nothing of the new company
    let (hits, done) = search(&mut served.client, "parcel refund", "alice").await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    assert!(hits.iter().all(|h| !h.local_id.starts_with("acme:")), "{hits:?}");

    // --replace: the namespace is exactly the folder's pages afterwards
    std::fs::remove_file(pages.join("parcel_refund_2024.txt")).unwrap();
    ok(script(run, port, &["import", folder.path().to_str().unwrap(), "--replace"]), "import --replace");
    let (hits, _) = search(&mut served.client, "parcel refund", "zoe").await;
    let ids: Vec<&str> = hits.iter().map(|h| h.local_id.as_str()).filter(|id| id.starts_with("acme:")).collect();
    assert_eq!(ids, ["acme:policy:parcel_refund"]);
}
