//! `scripts/backends/dokuwiki.sh import DIR`: a new company's folder of pages, with their dates
//! and ACLs, loaded into a (private) DokuWiki — the adapter then finds the pages as the company's
//! own user, with the dates of the folder's revision history (an old and a new policy differ), the
//! other companies' accounts keep their passwords, and nobody else reads the new pages.

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
        "acme:policy:parcel_refund_2024  2024-01-10T08:00:00Z  zoe\nacme:policy:parcel_refund  2026-06-01T08:00:00Z  zoe\n",
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
    assert_eq!(date("acme:policy:parcel_refund_2024"), 1_704_873_600, "2024-01-10T08:00:00Z from the folder's dates");
    assert_eq!(date("acme:policy:parcel_refund"), 1_780_300_800, "2026-06-01T08:00:00Z");
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
