//! A small client for the Chroma vector store's HTTP API (v2): collections, upsert, filtered
//! nearest-neighbour query, get and delete. The `where` filters are JSON values built by
//! [`crate::filter`]; this module only moves them.

use std::time::Duration;

use fedsearch_adapter_kit::AdapterError;
use serde::Deserialize;
use serde_json::{Value, json};

/// One Chroma server, one tenant and database.
#[derive(Clone, Debug)]
pub struct Chroma {
    http: reqwest::Client,
    root: String,
    base: String,
}

/// A stored record: id, chunk text and metadata.
#[derive(Debug, Clone)]
pub struct Record {
    pub id: String,
    pub document: String,
    pub metadata: serde_json::Map<String, Value>,
}

/// A query result: a record and its squared L2 distance to the query (unit vectors:
/// cosine similarity = 1 − distance / 2).
#[derive(Debug, Clone)]
pub struct Neighbour {
    pub record: Record,
    pub distance: f32,
}

#[derive(Deserialize)]
struct CollectionInfo {
    id: String,
}

type Meta = serde_json::Map<String, Value>;

#[derive(Deserialize)]
struct QueryAnswer {
    ids: Vec<Vec<String>>,
    #[serde(default)]
    documents: Option<Vec<Vec<Option<String>>>>,
    #[serde(default)]
    metadatas: Option<Vec<Vec<Option<Meta>>>>,
    #[serde(default)]
    distances: Option<Vec<Vec<Option<f32>>>>,
}

#[derive(Deserialize)]
struct GetAnswer {
    ids: Vec<String>,
    #[serde(default)]
    documents: Option<Vec<Option<String>>>,
    #[serde(default)]
    metadatas: Option<Vec<Option<Meta>>>,
}

fn unavailable(e: &reqwest::Error) -> AdapterError {
    if e.is_timeout() {
        AdapterError::Unavailable("the vector store did not answer in time".into())
    } else {
        AdapterError::Unavailable("the vector store is unreachable".into())
    }
}

impl Chroma {
    /// `url` is the server's base URL (`http://127.0.0.1:28000`).
    pub fn new(url: &str, tenant: &str, database: &str, timeout: Duration) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(2)))
            .no_proxy()
            .build()
            .map_err(|e| format!("http client: {e}"))?;
        let enc = |s: &str| percent_encode(s);
        let root = url.trim_end_matches('/').to_string();
        let base = format!("{root}/api/v2/tenants/{}/databases/{}", enc(tenant), enc(database));
        Ok(Self { http, root, base })
    }

    async fn call(&self, req: reqwest::RequestBuilder, what: &str) -> Result<Value, AdapterError> {
        let resp = req.send().await.map_err(|e| unavailable(&e))?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(|e| unavailable(&e))?;
        if status.is_success() {
            return serde_json::from_slice(&body)
                .map_err(|_| AdapterError::Internal(format!("the vector store's answer to {what} is not JSON")));
        }
        let text = String::from_utf8_lossy(&body);
        tracing::warn!(%status, what, body = %text.chars().take(300).collect::<String>(), "vector store error");
        Err(match status.as_u16() {
            404 => AdapterError::FailedPrecondition(
                "the vector collection does not exist (run fedsearch-vector-index)".into(),
            ),
            400 | 422 => AdapterError::Internal(format!("the vector store refused the {what} request")),
            502..=504 => AdapterError::Unavailable("the vector store is unavailable".into()),
            _ => AdapterError::Internal(format!("the vector store failed the {what} request")),
        })
    }

    /// The store answers at all.
    pub async fn heartbeat(&self) -> Result<(), AdapterError> {
        self.call(self.http.get(format!("{}/api/v2/heartbeat", self.root)), "heartbeat").await.map(|_| ())
    }

    /// The id of collection `name` (FailedPrecondition when it does not exist).
    pub async fn collection_id(&self, name: &str) -> Result<String, AdapterError> {
        let v = self
            .call(self.http.get(format!("{}/collections/{}", self.base, percent_encode(name))), "collection")
            .await?;
        let info: CollectionInfo =
            serde_json::from_value(v).map_err(|_| AdapterError::Internal("unexpected collection answer".into()))?;
        Ok(info.id)
    }

    /// Creates collection `name` if missing (L2 space over unit vectors) and returns its id.
    pub async fn get_or_create(&self, name: &str, metadata: Value) -> Result<String, AdapterError> {
        let body = json!({ "name": name, "get_or_create": true, "metadata": metadata });
        let v =
            self.call(self.http.post(format!("{}/collections", self.base)).json(&body), "create collection").await?;
        let info: CollectionInfo =
            serde_json::from_value(v).map_err(|_| AdapterError::Internal("unexpected collection answer".into()))?;
        Ok(info.id)
    }

    pub async fn upsert(
        &self,
        collection: &str,
        ids: &[String],
        embeddings: &[Vec<f32>],
        documents: &[String],
        metadatas: &[Value],
    ) -> Result<(), AdapterError> {
        let body = json!({ "ids": ids, "embeddings": embeddings, "documents": documents, "metadatas": metadatas });
        self.call(self.http.post(format!("{}/collections/{collection}/upsert", self.base)).json(&body), "upsert")
            .await
            .map(|_| ())
    }

    /// The `n` nearest records to `embedding` among those matching `filter` — the filter is
    /// applied by the store inside the search, not to its answer.
    pub async fn query(
        &self,
        collection: &str,
        embedding: &[f32],
        n: usize,
        filter: &Value,
    ) -> Result<Vec<Neighbour>, AdapterError> {
        let body = json!({
            "query_embeddings": [embedding],
            "n_results": n,
            "where": filter,
            "include": ["documents", "metadatas", "distances"],
        });
        let v = self
            .call(self.http.post(format!("{}/collections/{collection}/query", self.base)).json(&body), "query")
            .await?;
        let a: QueryAnswer =
            serde_json::from_value(v).map_err(|_| AdapterError::Internal("unexpected query answer".into()))?;
        let ids = a.ids.into_iter().next().unwrap_or_default();
        let docs = a.documents.and_then(|d| d.into_iter().next()).unwrap_or_default();
        let metas = a.metadatas.and_then(|d| d.into_iter().next()).unwrap_or_default();
        let dists = a.distances.and_then(|d| d.into_iter().next()).unwrap_or_default();
        Ok(ids
            .into_iter()
            .enumerate()
            .map(|(i, id)| Neighbour {
                record: Record {
                    id,
                    document: docs.get(i).cloned().flatten().unwrap_or_default(),
                    metadata: metas.get(i).cloned().flatten().unwrap_or_default(),
                },
                distance: dists.get(i).copied().flatten().unwrap_or(f32::MAX),
            })
            .collect())
    }

    /// Every record matching `filter` (documents and metadata included when `full`).
    pub async fn get(&self, collection: &str, filter: Option<&Value>, full: bool) -> Result<Vec<Record>, AdapterError> {
        let mut body = json!({ "include": if full { json!(["documents", "metadatas"]) } else { json!([]) } });
        if let Some(f) = filter {
            body["where"] = f.clone();
        }
        let v =
            self.call(self.http.post(format!("{}/collections/{collection}/get", self.base)).json(&body), "get").await?;
        let a: GetAnswer =
            serde_json::from_value(v).map_err(|_| AdapterError::Internal("unexpected get answer".into()))?;
        let docs = a.documents.unwrap_or_default();
        let metas = a.metadatas.unwrap_or_default();
        Ok(a.ids
            .into_iter()
            .enumerate()
            .map(|(i, id)| Record {
                id,
                document: docs.get(i).cloned().flatten().unwrap_or_default(),
                metadata: metas.get(i).cloned().flatten().unwrap_or_default(),
            })
            .collect())
    }

    pub async fn delete(&self, collection: &str, ids: &[String]) -> Result<(), AdapterError> {
        if ids.is_empty() {
            return Ok(());
        }
        let body = json!({ "ids": ids });
        self.call(self.http.post(format!("{}/collections/{collection}/delete", self.base)).json(&body), "delete")
            .await
            .map(|_| ())
    }
}

/// Percent-encodes one path segment (names come from config, but stay safe anyway).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(super::percent_encode("spruce_docs"), "spruce_docs");
        assert_eq!(super::percent_encode("a/b c"), "a%2Fb%20c");
    }
}
