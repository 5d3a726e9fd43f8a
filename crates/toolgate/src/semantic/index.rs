//! The catalog's vectors, kept in step with the catalog: a tool added or changed is
//! embedded (or its vector taken from the disk cache), a tool removed drops its row.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use toolgate_core::ToolDescriptor;
use toolgate_core::search::{Scorer, embedding_text};

use super::{CacheKey, Embedder, SemanticError, VectorCache, Vectors, cache_key, load_model};
use crate::search_tool::CatalogScorer;

/// Vectors of a catalog's tools and the model that makes them; a [`Scorer`] by
/// cosine similarity to the query.
pub struct SemanticIndex {
    embedder: Arc<Embedder>,
    state: RwLock<State>,
    cache: Option<Mutex<VectorCache>>,
    embedded: AtomicUsize,
}

struct State {
    vectors: Vectors,
    /// Per tool, the key of the text its vector was made from.
    keys: HashMap<String, CacheKey>,
}

impl std::fmt::Debug for SemanticIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticIndex")
            .field("embedder", &self.embedder)
            .field("tools", &self.len())
            .finish_non_exhaustive()
    }
}

impl SemanticIndex {
    /// Loads the model in `model_dir`, with vectors cached in `cache_dir` if given.
    pub fn open(model_dir: &Path, cache_dir: Option<&Path>) -> Result<Self, SemanticError> {
        let embedder = Arc::new(load_model(model_dir)?);
        let cache = cache_dir
            .map(|dir| VectorCache::open(dir, embedder.id(), embedder.dimension()))
            .transpose()?;
        Ok(SemanticIndex::new(embedder, cache))
    }

    /// An empty index over `embedder`'s vectors, reading and filling `cache`.
    pub fn new(embedder: Arc<Embedder>, cache: Option<VectorCache>) -> Self {
        let dimension = embedder.dimension();
        SemanticIndex {
            embedder,
            state: RwLock::new(State {
                vectors: Vectors::new(dimension),
                keys: HashMap::new(),
            }),
            cache: cache.map(Mutex::new),
            embedded: AtomicUsize::new(0),
        }
    }

    /// The model that turns tool descriptions and queries into vectors.
    pub fn embedder(&self) -> &Arc<Embedder> {
        &self.embedder
    }

    /// How many tools have vectors.
    pub fn len(&self) -> usize {
        self.read().vectors.len()
    }

    /// Whether no tool has a vector yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many texts this index has run through the model (cache hits not counted).
    pub fn embedded(&self) -> usize {
        self.embedded.load(Ordering::Relaxed)
    }

    /// The heap bytes of the vectors (not the model).
    pub fn heap_bytes(&self) -> usize {
        self.read().vectors.heap_bytes()
    }

    /// Gives each of `tools` its vector: kept when its text is unchanged, else from
    /// the cache, else embedded (all such tools in batches).
    pub fn insert_all(&self, tools: &[&ToolDescriptor]) {
        let model = self.embedder.id().to_owned();
        let mut missing: Vec<(&str, CacheKey, String)> = Vec::new();
        let mut found: Vec<(&str, CacheKey, Box<[f32]>)> = Vec::new();
        {
            let state = self.read();
            let cache = self
                .cache
                .as_ref()
                .map(|c| c.lock().unwrap_or_else(|e| e.into_inner()));
            for tool in tools {
                let text = embedding_text(tool);
                let key = cache_key(&model, &text);
                if state.keys.get(&tool.name) == Some(&key) {
                    continue;
                }
                match cache.as_ref().and_then(|c| c.get(&key)) {
                    Some(vector) => found.push((tool.name.as_str(), key, vector.into())),
                    None => missing.push((tool.name.as_str(), key, text)),
                }
            }
        }
        let texts: Vec<&str> = missing.iter().map(|(_, _, t)| t.as_str()).collect();
        let vectors = match self.embedder.embed_all(&texts) {
            Ok(vectors) => vectors,
            Err(e) => {
                tracing::warn!(error = %e, "tools were not embedded; they are found by words only");
                Vec::new()
            }
        };
        self.embedded.fetch_add(vectors.len(), Ordering::Relaxed);
        if let Some(cache) = &self.cache {
            let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
            for ((_, key, _), vector) in missing.iter().zip(&vectors) {
                if let Err(e) = cache.put(*key, vector) {
                    tracing::warn!(error = %e, "a vector was not cached");
                    break;
                }
            }
        }
        let mut state = self.write();
        let made = missing
            .iter()
            .zip(vectors)
            .map(|((name, key, _), v)| (*name, *key, v.into_boxed_slice()));
        for (name, key, vector) in found.into_iter().chain(made) {
            state.vectors.insert(name, &vector);
            state.keys.insert(name.to_owned(), key);
        }
    }

    /// Keeps exactly `tools`: [`insert_all`](Self::insert_all) them and drop the rest.
    pub fn sync(&self, tools: &[&ToolDescriptor]) {
        self.insert_all(tools);
        let keep: std::collections::HashSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let gone: Vec<String> = self
            .read()
            .keys
            .keys()
            .filter(|name| !keep.contains(name.as_str()))
            .cloned()
            .collect();
        for name in gone {
            self.remove_tool(&name);
        }
    }

    /// Drops the vector of `name`; returns whether it had one.
    pub fn remove_tool(&self, name: &str) -> bool {
        let mut state = self.write();
        state.keys.remove(name);
        state.vectors.remove(name)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl Scorer for SemanticIndex {
    fn rank(&self, query: &str, limit: usize) -> Vec<String> {
        self.similarities(query, limit)
            .unwrap_or_default()
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    fn similarities(&self, query: &str, limit: usize) -> Option<Vec<(String, f32)>> {
        // Embedded before the lock is taken, so a query never holds up an insert.
        match self.embedder.embed(query) {
            Ok(vector) => Some(self.read().vectors.nearest(&vector, limit)),
            Err(e) => {
                tracing::warn!(error = %e, "the query was not embedded; ranking by words only");
                Some(Vec::new())
            }
        }
    }
}

impl CatalogScorer for SemanticIndex {
    fn insert(&self, tool: &ToolDescriptor) {
        self.insert_all(&[tool]);
    }

    fn insert_all(&self, tools: &[&ToolDescriptor]) {
        SemanticIndex::insert_all(self, tools);
    }

    fn remove(&self, name: &str) {
        self.remove_tool(name);
    }

    fn sync(&self, tools: &[&ToolDescriptor]) {
        SemanticIndex::sync(self, tools);
    }
}
