//! The tools' vectors, one row per tool, and the [`Scorer`] that ranks them by
//! cosine similarity to a query's vector.

use std::collections::HashMap;

use super::Embedder;
use crate::search::Scorer;

/// Unit vectors by tool name, in one dense matrix so a query reads them in order.
///
/// Adding and removing a tool touch only its row (a removed row is filled by the
/// last one), as the lexical index changes one tool at a time.
#[derive(Debug, Clone, Default)]
pub struct Vectors {
    dimension: usize,
    names: Vec<String>,
    rows: HashMap<String, usize>,
    data: Vec<f32>,
}

impl Vectors {
    /// No vectors yet, each to be `dimension` long.
    pub fn new(dimension: usize) -> Self {
        Vectors {
            dimension,
            ..Vectors::default()
        }
    }

    /// How many numbers each vector has.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// How many tools have a vector.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no tool has a vector.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Whether the tool `name` has a vector.
    pub fn contains(&self, name: &str) -> bool {
        self.rows.contains_key(name)
    }

    /// The vector of `name`.
    pub fn get(&self, name: &str) -> Option<&[f32]> {
        let row = *self.rows.get(name)?;
        Some(&self.data[row * self.dimension..(row + 1) * self.dimension])
    }

    /// The names held, in row order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Sets the vector of `name`; a vector of the wrong length is refused (false).
    pub fn insert(&mut self, name: &str, vector: &[f32]) -> bool {
        if vector.len() != self.dimension {
            return false;
        }
        match self.rows.get(name) {
            Some(&row) => {
                self.data[row * self.dimension..(row + 1) * self.dimension].copy_from_slice(vector);
            }
            None => {
                self.rows.insert(name.to_owned(), self.names.len());
                self.names.push(name.to_owned());
                self.data.extend_from_slice(vector);
            }
        }
        true
    }

    /// Drops the vector of `name`; returns whether it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(row) = self.rows.remove(name) else {
            return false;
        };
        let last = self.names.len() - 1;
        let d = self.dimension;
        if row != last {
            self.data.copy_within(last * d..(last + 1) * d, row * d);
            self.names.swap(row, last);
            self.rows.insert(self.names[row].clone(), row);
        }
        self.names.pop();
        self.data.truncate(last * d);
        true
    }

    /// The `limit` nearest tools to unit vector `query`, as (name, cosine), best first.
    pub fn nearest(&self, query: &[f32], limit: usize) -> Vec<(String, f32)> {
        if query.len() != self.dimension || self.dimension == 0 {
            return Vec::new();
        }
        let mut scored: Vec<(usize, f32)> = self
            .data
            .chunks_exact(self.dimension)
            .map(|row| row.iter().zip(query).map(|(a, b)| a * b).sum::<f32>())
            .enumerate()
            .collect();
        let by_score = |a: &(usize, f32), b: &(usize, f32)| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.names[a.0].cmp(&self.names[b.0]))
        };
        let limit = limit.min(scored.len());
        if limit == 0 {
            return Vec::new();
        }
        if limit < scored.len() {
            scored.select_nth_unstable_by(limit - 1, by_score);
            scored.truncate(limit);
        }
        scored.sort_unstable_by(by_score);
        scored
            .into_iter()
            .map(|(row, s)| (self.names[row].clone(), s))
            .collect()
    }

    /// The heap bytes the vectors hold (capacities; allocator overhead not counted).
    pub fn heap_bytes(&self) -> usize {
        let names: usize = self.names.iter().map(|n| 2 * n.capacity()).sum();
        self.data.capacity() * 4
            + names
            + self.names.capacity() * std::mem::size_of::<String>()
            + self.rows.capacity() * (std::mem::size_of::<(String, usize)>() + 1)
    }
}

/// Ranks tools by the cosine similarity of their vectors to the query's.
///
/// A query the model cannot embed ranks nothing, so the search falls back to the
/// lexical ranking alone.
pub struct EmbeddingScorer<'a> {
    /// The model that embeds the query; it must be the one that made `vectors`.
    pub embedder: &'a Embedder,
    /// The tools' vectors.
    pub vectors: &'a Vectors,
}

impl Scorer for EmbeddingScorer<'_> {
    fn rank(&self, query: &str, limit: usize) -> Vec<String> {
        self.similarities(query, limit)
            .unwrap_or_default()
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    fn similarities(&self, query: &str, limit: usize) -> Option<Vec<(String, f32)>> {
        match self.embedder.embed(query) {
            Ok(vector) => Some(self.vectors.nearest(&vector, limit)),
            Err(e) => {
                tracing::warn!(error = %e, "the query was not embedded; ranking lexically");
                Some(Vec::new())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn the_nearest_rows_come_first_and_removal_keeps_the_rest_findable() {
        let mut vectors = Vectors::new(2);
        assert!(vectors.insert("east", &[1.0, 0.0]));
        assert!(vectors.insert("north", &[0.0, 1.0]));
        assert!(vectors.insert("north_east", &unit(&[1.0, 1.0])));
        assert!(!vectors.insert("bad", &[1.0]));
        let names = |v: &Vectors, q: &[f32], k| -> Vec<String> {
            v.nearest(q, k).into_iter().map(|(n, _)| n).collect()
        };
        assert_eq!(names(&vectors, &[1.0, 0.0], 2), ["east", "north_east"]);
        assert!(vectors.remove("east"));
        assert!(!vectors.remove("east"));
        assert_eq!(
            names(&vectors, &[1.0, 0.0], 5),
            ["north_east", "north"],
            "the last row moved into the removed one's place"
        );
        assert_eq!(vectors.get("north"), Some(&[0.0, 1.0][..]));
        vectors.insert("north", &[1.0, 0.0]);
        assert_eq!(names(&vectors, &[1.0, 0.0], 1), ["north"]);
        assert_eq!(vectors.len(), 2);
    }
}
