//! Tools' vectors kept on disk between runs, so a restart or a catalog change
//! embeds only the tools whose text changed.
//!
//! One file per model (`<dir>/<model id>.vectors`), an append-only list of records:
//! the SHA-256 of the model's id and the embedded text, then the vector as
//! little-endian `f32`s. A record is looked up by that key, never by tool name, so
//! a renamed tool with the same text reuses its vector and an edited description
//! gets a new one. A torn last record (a crash mid-write) is ignored and
//! overwritten by the next append.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sha2_11::{Digest, Sha256};

/// The first bytes of a cache file, and the version of its layout.
const MAGIC: &[u8; 8] = b"TGVEC01\n";

/// The key of one vector: SHA-256 of the model id and the text.
pub type CacheKey = [u8; 32];

/// The key of `text` embedded by the model `model_id`.
pub fn cache_key(model_id: &str, text: &str) -> CacheKey {
    let mut hasher = Sha256::new();
    hasher.update((model_id.len() as u64).to_le_bytes());
    hasher.update(model_id.as_bytes());
    hasher.update(text.as_bytes());
    hasher.finalize().into()
}

/// A cache that cannot be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The cache directory or file could not be created, read or written.
    #[error(
        "cannot use the vector cache {path}: {source}; give a writable directory \
         (`search: {{cache: DIR}}`) or fix its permissions"
    )]
    Io {
        /// The cache file (or directory) in question.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} is not a vector cache of this model (a {found}-byte header); \
         remove it and the vectors are made again"
    )]
    /// The cache file does not start with this model's header: another
    /// model's cache, or not a cache at all.
    NotACache {
        /// The cache file.
        path: PathBuf,
        /// How many bytes of a header it holds (at most the header's length).
        found: usize,
    },
}

/// The vectors one model made, by [`CacheKey`], and the file they are appended to.
#[derive(Debug)]
pub struct VectorCache {
    path: PathBuf,
    file: File,
    dimension: usize,
    vectors: HashMap<CacheKey, Box<[f32]>>,
}

impl VectorCache {
    /// Opens (or creates) the cache of the model `model_id` in `dir`.
    pub fn open(dir: &Path, model_id: &str, dimension: usize) -> Result<Self, CacheError> {
        let short = &model_id[..model_id.len().min(16)];
        let path = dir.join(format!("{short}.vectors"));
        let io = |source| CacheError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let header = header(dimension);
        if bytes.is_empty() {
            file.write_all(&header).map_err(io)?;
            bytes.extend_from_slice(&header);
        } else if !bytes.starts_with(&header) {
            return Err(CacheError::NotACache {
                path,
                found: bytes.len().min(header.len()),
            });
        }
        let record = 32 + 4 * dimension;
        let body = &bytes[header.len()..];
        let mut vectors = HashMap::with_capacity(body.len() / record);
        for chunk in body.chunks_exact(record) {
            let mut key = [0u8; 32];
            key.copy_from_slice(&chunk[..32]);
            let vector: Box<[f32]> = chunk[32..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            vectors.insert(key, vector);
        }
        let whole = header.len() + vectors.len() * record;
        if body.len() % record != 0 || whole != bytes.len() {
            // A torn record at the end: cut it off so appends stay aligned.
            file.set_len((header.len() + body.len() / record * record) as u64)
                .map_err(io)?;
            file.seek(SeekFrom::End(0)).map_err(io)?;
        }
        Ok(VectorCache {
            path,
            file,
            dimension,
            vectors,
        })
    }

    /// Where the cache is kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many vectors it holds.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether it holds no vector yet (a new cache file).
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// The vector stored under `key`.
    pub fn get(&self, key: &CacheKey) -> Option<&[f32]> {
        self.vectors.get(key).map(|v| &**v)
    }

    /// Stores `vector` under `key`, on disk as well.
    pub fn put(&mut self, key: CacheKey, vector: &[f32]) -> Result<(), CacheError> {
        if vector.len() != self.dimension || self.vectors.contains_key(&key) {
            return Ok(());
        }
        let mut record = Vec::with_capacity(32 + 4 * vector.len());
        record.extend_from_slice(&key);
        for x in vector {
            record.extend_from_slice(&x.to_le_bytes());
        }
        self.file
            .write_all(&record)
            .map_err(|source| CacheError::Io {
                path: self.path.clone(),
                source,
            })?;
        self.vectors.insert(key, vector.into());
        Ok(())
    }
}

fn header(dimension: usize) -> Vec<u8> {
    let mut header = MAGIC.to_vec();
    header.extend_from_slice(&(dimension as u32).to_le_bytes());
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_survive_a_reopen_and_a_torn_record_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let key = cache_key("m", "text");
        assert_ne!(key, cache_key("other model", "text"));
        {
            let mut cache = VectorCache::open(dir.path(), "m", 3).unwrap();
            assert!(cache.is_empty());
            cache.put(key, &[1.0, 2.0, 3.0]).unwrap();
            cache.put(cache_key("m", "b"), &[4.0, 5.0, 6.0]).unwrap();
        }
        let path = dir.path().join("m.vectors");
        let len = std::fs::metadata(&path).unwrap().len();
        let file = OpenOptions::new().append(true).open(&path).unwrap();
        file.set_len(len - 5).unwrap();
        let mut cache = VectorCache::open(dir.path(), "m", 3).unwrap();
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get(&key), Some(&[1.0, 2.0, 3.0][..]));
        cache.put(cache_key("m", "c"), &[7.0, 8.0, 9.0]).unwrap();
        let cache = VectorCache::open(dir.path(), "m", 3).unwrap();
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&cache_key("m", "c")), Some(&[7.0, 8.0, 9.0][..]));
        let err = VectorCache::open(dir.path(), "m", 4).unwrap_err();
        assert!(err.to_string().contains("remove it"), "{err}");
    }
}
