//! The indexer behind `fedsearch-vector-index`: reads a source's inputs (search-index JSON files
//! and DokuWiki page folders), splits each document into chunks of about `chunk_tokens` tokens
//! headed by its title, embeds them, and upserts them with their ACL, dates and metadata into the
//! source's collection. Re-runnable: chunk ids are `<doc id>#<n>`, upserts replace, and chunks
//! of documents (or chunk numbers) no longer produced are deleted.

use std::{
    collections::{BTreeMap, HashSet},
    path::Path,
};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use crate::{
    acl::AuthSpec,
    chroma::Chroma,
    config::{IndexInput, SourceConfig, WikiInput},
    embed::Embedder,
    filter,
};

/// One document before chunking.
#[derive(Debug, Clone, Default)]
pub struct Document {
    pub id: String,
    pub title: String,
    pub body: String,
    pub url: String,
    pub doc_type: String,
    pub updated_at: Option<i64>,
    pub public: bool,
    pub groups: Vec<String>,
    pub users: Vec<String>,
    pub tags: Vec<String>,
    /// Other string metadata (lang, status, version_family, …).
    pub extra: BTreeMap<String, Value>,
}

/// What one run did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub documents: usize,
    pub chunks: usize,
    pub removed: usize,
}

/// Fields of a search-index document that are not copied as extra metadata.
const KNOWN: &[&str] = &[
    "id",
    "title",
    "body",
    "url",
    "tags",
    "public",
    "allowed_groups",
    "allowed_users",
    "updated_at",
    "days_ago",
    "hours_ago",
    "doc_type",
];

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_str()).filter(|s| !s.is_empty()).map(String::from).collect())
        .unwrap_or_default()
}

fn parse_time(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp())
}

/// Documents of a search-index JSON file (`data/*/search/*.json`). Relative ages are taken
/// before `now`, as the OpenSearch seed does.
pub fn read_docs(path: &Path, now: i64) -> anyhow::Result<Vec<Document>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: Value = serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let default_type = v.get("doc_type").and_then(|t| t.as_str()).unwrap_or("document");
    let Some(docs) = v.get("docs").and_then(|d| d.as_array()) else {
        bail!("{}: no `docs` array", path.display());
    };
    let mut out = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let s = |k: &str| d.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let id = s("id");
        if id.is_empty() {
            bail!("{}: docs[{i}] has no id", path.display());
        }
        let updated_at = d.get("updated_at").and_then(|t| t.as_str()).and_then(parse_time).or_else(|| {
            let days = d.get("days_ago").and_then(|x| x.as_i64())?;
            let hours = d.get("hours_ago").and_then(|x| x.as_i64()).unwrap_or(0);
            Some(now - days * 86_400 - hours * 3_600)
        });
        let extra = d
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
            .filter_map(|(k, v)| match v {
                Value::String(x) => {
                    // dates as epoch seconds (comparable), other strings as they are
                    Some((k.clone(), parse_time(x).filter(|_| k.ends_with("_at")).map_or(json!(x), |t| json!(t))))
                }
                Value::Bool(_) | Value::Number(_) => Some((k.clone(), v.clone())),
                _ => None,
            })
            .collect();
        out.push(Document {
            title: s("title"),
            body: s("body"),
            url: s("url"),
            doc_type: d.get("doc_type").and_then(|t| t.as_str()).unwrap_or(default_type).to_string(),
            updated_at,
            public: d.get("public").and_then(|p| p.as_bool()).unwrap_or(false),
            groups: strings(d.get("allowed_groups")),
            users: strings(d.get("allowed_users")),
            tags: strings(d.get("tags")),
            extra,
            id,
        });
    }
    Ok(out)
}

/// DokuWiki markup → plain text (headings, bold/italic/underline, links, tables, lists).
pub fn wiki_plain(text: &str) -> String {
    static RULES: std::sync::LazyLock<Vec<(regex::Regex, &'static str)>> = std::sync::LazyLock::new(|| {
        [
            (r"(?m)^\s*=+\s*(.*?)\s*=+\s*$", "$1"),
            (r"\[\[[^\]|]*\|([^\]]*)\]\]", "$1"),
            (r"\[\[([^\]]*)\]\]", "$1"),
            (r"\*\*|__|''|(?:^|\s)//|//(?:\s|$)", " "),
            (r"(?m)^\s*[\^|]|[\^|]\s*$", ""),
            (r"\s*[\^|]\s*", " · "),
            (r"(?m)^\s+[*-]\s+", "- "),
            (r"</?(?:code|file|nowiki|html)[^>]*>", ""),
        ]
        .into_iter()
        .map(|(re, to)| (regex::Regex::new(re).expect("valid regex"), to))
        .collect()
    });
    let mut t = text.to_string();
    for (re, to) in RULES.iter() {
        t = re.replace_all(&t, *to).into_owned();
    }
    t
}

fn read_mtimes(path: &Path, now: i64) -> anyhow::Result<BTreeMap<String, i64>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let mut f = line.split_whitespace();
        let (Some(id), Some(when)) = (f.next(), f.next()) else { continue };
        let t = match when.parse::<i64>() {
            Ok(days) => now - days * 86_400,
            Err(_) => parse_time(when).with_context(|| format!("{}: bad time `{when}`", path.display()))?,
        };
        out.insert(id.to_string(), t);
    }
    Ok(out)
}

/// Pages of a DokuWiki folder, readers from the auth spec.
pub fn read_wiki(input: &WikiInput, now: i64) -> anyhow::Result<Vec<Document>> {
    let mut spec = AuthSpec::default();
    for f in &input.acl {
        let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        spec.parse(&text, &f.display().to_string()).map_err(anyhow::Error::msg)?;
    }
    let mtimes = match &input.mtimes {
        Some(p) => read_mtimes(p, now)?,
        None => BTreeMap::new(),
    };
    let base = match &input.url_env {
        Some(env) => std::env::var(env).with_context(|| format!("`url_env` names `{env}`, which is not set"))?,
        None => String::new(),
    };
    let mut files = Vec::new();
    walk(&input.dir, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&input.dir).expect("under dir").with_extension("");
        let parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if parts.len() < 2 || (!input.namespaces.is_empty() && !input.namespaces.contains(&parts[0])) {
            continue;
        }
        let id = parts.join(":");
        let raw = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        let title = raw
            .lines()
            .find_map(|l| {
                let l = l.trim();
                (l.starts_with("==") && l.ends_with("==")).then(|| l.trim_matches('=').trim().to_string())
            })
            .unwrap_or_else(|| parts.last().cloned().unwrap_or_default());
        let doc_type = input
            .doc_types
            .iter()
            .filter(|(ns, _)| id == **ns || id.starts_with(&format!("{ns}:")))
            .max_by_key(|(ns, _)| ns.len())
            .map_or(input.default_doc_type.clone(), |(_, t)| t.clone());
        let body = wiki_plain(&raw);
        let body = body.trim_start().strip_prefix(title.as_str()).unwrap_or(&body).trim().to_string();
        out.push(Document {
            url: if base.is_empty() {
                String::new()
            } else {
                format!("{}/doku.php?id={id}", base.trim_end_matches('/'))
            },
            updated_at: mtimes.get(&id).copied(),
            public: spec.public(&id),
            users: spec.readers(&id),
            extra: [("namespace".to_string(), json!(parts[..parts.len() - 1].join(":")))].into(),
            title,
            body,
            doc_type,
            id,
            ..Default::default()
        });
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> anyhow::Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "txt") {
            out.push(p);
        }
    }
    Ok(())
}

/// Splits `body` into pieces of at most `budget` tokens at paragraph, then sentence, then
/// character boundaries.
pub fn chunk(body: &str, budget: usize, count: &dyn Fn(&str) -> usize) -> Vec<String> {
    let mut pieces = Vec::new();
    for para in body.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
        if count(para) <= budget {
            pieces.push(para.to_string());
            continue;
        }
        let mut sentence = String::new();
        for ch in para.chars() {
            sentence.push(ch);
            if matches!(ch, '。' | '！' | '？' | '；' | '\n')
                || (matches!(ch, '.' | '!' | '?' | ';') && sentence.len() > 1)
            {
                pieces.push(std::mem::take(&mut sentence));
            }
        }
        if !sentence.trim().is_empty() {
            pieces.push(sentence);
        }
    }
    // too-long single sentences are cut by characters
    let mut fitted = Vec::new();
    for p in pieces {
        if count(&p) <= budget {
            fitted.push(p);
            continue;
        }
        // eight characters at a time: a piece never ends inside a character
        let chars: Vec<char> = p.chars().collect();
        let mut cur = String::new();
        for step in chars.chunks(8) {
            let next: String = step.iter().collect();
            if !cur.is_empty() && count(&format!("{cur}{next}")) > budget {
                fitted.push(std::mem::take(&mut cur));
            }
            cur.push_str(&next);
        }
        if !cur.trim().is_empty() {
            fitted.push(cur);
        }
    }
    // greedy packing
    let mut chunks: Vec<String> = Vec::new();
    let mut cur = String::new();
    for p in fitted {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        let candidate = if cur.is_empty() { p.to_string() } else { format!("{cur}\n{p}") };
        if !cur.is_empty() && count(&candidate) > budget {
            chunks.push(std::mem::replace(&mut cur, p.to_string()));
        } else {
            cur = candidate;
        }
    }
    if !cur.is_empty() {
        chunks.push(cur);
    }
    chunks
}

fn metadata(doc: &Document, n: usize) -> Value {
    let mut m = Map::new();
    for (k, v) in &doc.extra {
        m.insert(k.clone(), v.clone());
    }
    m.insert(filter::DOC_ID.into(), json!(doc.id));
    m.insert(filter::CHUNK.into(), json!(n));
    m.insert(filter::TITLE.into(), json!(doc.title));
    m.insert(filter::URL.into(), json!(doc.url));
    m.insert(filter::DOC_TYPE.into(), json!(doc.doc_type));
    m.insert(filter::PUBLIC.into(), json!(doc.public));
    if let Some(t) = doc.updated_at {
        m.insert(filter::UPDATED_AT.into(), json!(t));
    }
    // Chroma drops empty arrays; a missing key matches no `$contains`, which is what we want.
    for (k, v) in [(filter::GROUPS, &doc.groups), (filter::USERS, &doc.users), (filter::TAGS, &doc.tags)] {
        if !v.is_empty() {
            m.insert(k.into(), json!(v));
        }
    }
    Value::Object(m)
}

/// Reads every input of `source`.
pub fn read_inputs(source: &SourceConfig, now: i64) -> anyhow::Result<Vec<Document>> {
    let mut docs = Vec::new();
    for input in &source.index {
        match input {
            IndexInput::Docs(p) => docs.extend(read_docs(p, now)?),
            IndexInput::Wiki(w) => docs.extend(read_wiki(w, now)?),
        }
    }
    let mut seen = HashSet::new();
    for d in &docs {
        if !seen.insert(d.id.clone()) {
            bail!("document id `{}` appears twice in the inputs of source `{}`", d.id, source.name);
        }
    }
    Ok(docs)
}

/// Embeds `docs` into the source's collection (created if missing) and removes stale chunks.
pub async fn index(
    store: &Chroma,
    embedder: &Embedder,
    source: &SourceConfig,
    docs: &[Document],
    chunk_tokens: usize,
) -> anyhow::Result<Report> {
    let collection = store
        .get_or_create(
            &source.collection,
            json!({ "fedsearch:source": source.name, "fedsearch:model": "all-MiniLM-L6-v2" }),
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let count = |t: &str| embedder.count_tokens(t).unwrap_or(usize::MAX);
    let mut ids = Vec::new();
    let mut texts = Vec::new();
    let mut documents = Vec::new();
    let mut metas = Vec::new();
    for doc in docs {
        let budget =
            chunk_tokens.min(embedder.max_tokens().saturating_sub(2)).saturating_sub(count(&doc.title) + 1).max(16);
        let body = if doc.body.trim().is_empty() { doc.title.clone() } else { doc.body.clone() };
        for (n, c) in chunk(&body, budget, &count).into_iter().enumerate() {
            ids.push(format!("{}#{n}", doc.id));
            texts.push(format!("{}\n{}", doc.title, c));
            metas.push(metadata(doc, n));
            documents.push(c);
        }
    }
    const BATCH: usize = 16;
    for start in (0..ids.len()).step_by(BATCH) {
        let end = (start + BATCH).min(ids.len());
        let vectors = embedder.embed(&texts[start..end]).map_err(anyhow::Error::msg)?;
        store
            .upsert(&collection, &ids[start..end], &vectors, &documents[start..end], &metas[start..end])
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let keep: HashSet<&String> = ids.iter().collect();
    let stale: Vec<String> = store
        .get(&collection, None, false)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .into_iter()
        .map(|r| r.id)
        .filter(|id| !keep.contains(id))
        .collect();
    store.delete(&collection, &stale).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Report { documents: docs.len(), chunks: ids.len(), removed: stale.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_respect_the_budget_and_keep_every_piece() {
        let count = |t: &str| t.chars().count();
        let body = "第一段。很长的第二句话在这里。\n\nSecond paragraph. With two sentences.";
        let chunks = chunk(body, 16, &count);
        assert!(chunks.iter().all(|c| count(c) <= 16), "{chunks:?}");
        let joined: String = chunks.concat().split_whitespace().collect();
        for part in ["第一段", "很长的第二句话在这里", "Secondparagraph", "Withtwosentences"] {
            assert!(joined.replace(['\n', ' '], "").contains(part), "{part} in {joined}");
        }
        assert_eq!(chunk("short", 100, &count), vec!["short"]);
    }

    #[test]
    fn wiki_markup_becomes_plain_text() {
        let t = wiki_plain(
            "====== 退货政策 Return ======\n**现行** see [[public:x|2025 版]] and [[public:y]]\n^ A ^ B ^\n| 1 | 2 |",
        );
        assert!(t.starts_with("退货政策 Return\n"), "{t}");
        assert!(t.contains(" 现行  see 2025 版 and public:y"), "{t}");
        assert!(t.contains("A · B") && t.contains("1 · 2"), "{t}");
    }
}
