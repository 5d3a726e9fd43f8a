//! Collecting several compile errors into one, and did-you-mean hints for them.

/// Errors found so far; reported together so one build shows every mistake.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn finish(self) -> Option<syn::Error> {
        self.0
    }
}

/// The known word closest to `unknown`, if one is close enough to be a typo of it
/// or a shortening or lengthening of it (`desc`, `readonly`).
pub(crate) fn closest<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    let unknown = unknown.to_ascii_lowercase();
    let typo = known
        .iter()
        .map(|word| (edit_distance(&unknown, word), *word))
        .filter(|(distance, word)| *distance <= (word.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, word)| word);
    typo.or_else(|| {
        let affix = |word: &&str| {
            unknown.len().min(word.len()) >= 3
                && (unknown.starts_with(*word) || word.starts_with(unknown.as_str()))
        };
        known.iter().copied().find(affix)
    })
}

/// Edit distance counting insertions, deletions, substitutions and swaps of two
/// neighbours (`nmae` is one step from `name`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_word() {
        let keys = ["name", "description", "effect", "crate"];
        assert_eq!(closest("efect", &keys), Some("effect"));
        assert_eq!(closest("Effect", &keys), Some("effect"));
        assert_eq!(closest("descripton", &keys), Some("description"));
        assert_eq!(closest("nmae", &keys), Some("name"));
        assert_eq!(closest("desc", &keys), Some("description"));
        assert_eq!(closest("timeout", &keys), None);
        assert_eq!(closest("readonly", &["read", "write"]), Some("read"));
        assert_eq!(closest("re", &["read", "write"]), None);
        assert_eq!(closest("raed", &["read", "write"]), Some("read"));
    }
}
