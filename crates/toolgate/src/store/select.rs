//! Which store a gate uses: the SQLite file in the state directory (the default,
//! needing nothing), or a PostgreSQL database that several instances share,
//! chosen by `--store`, else `TOOLGATE_STORE`, else the spec's `store:`.
//!
//! A URL may take its password from the environment (`${env.NAME}`), so a spec
//! file can name the database without holding the secret; a URL is only ever shown
//! with its password masked.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_core::spec::expand_env;

use super::{GateStore, PinStore, SqliteStore, StoreError, StoredSessions};

/// The environment variable that names the store (`postgres://…`).
pub const STORE_ENV: &str = "TOOLGATE_STORE";

/// Everything a served gate keeps: its [`GateStore`], its pins and its clients'
/// sessions.
pub trait ServedStore: GateStore + PinStore + StoredSessions {}
impl<T: GateStore + PinStore + StoredSessions + ?Sized> ServedStore for T {}

/// Where the store lives, as chosen by [`choose_store`].
#[derive(Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// The SQLite file `state.db` in this directory.
    Sqlite(PathBuf),
    /// A PostgreSQL database; `url` holds the password, if any, expanded.
    Postgres {
        /// The database URL, `${env.NAME}` references expanded.
        url: String,
    },
}

impl std::fmt::Debug for StoreChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

impl StoreChoice {
    /// The store as it may be printed: a path, or the URL with its password masked.
    pub fn shown(&self) -> String {
        match self {
            StoreChoice::Sqlite(dir) => dir.join(super::STATE_DB_FILE).display().to_string(),
            #[cfg(feature = "postgres")]
            StoreChoice::Postgres { url } => super::mask_url(url),
            #[cfg(not(feature = "postgres"))]
            StoreChoice::Postgres { .. } => "postgres://…".into(),
        }
    }

    /// Whether this is a database shared over the network rather than a file.
    pub fn is_shared(&self) -> bool {
        matches!(self, StoreChoice::Postgres { .. })
    }
}

/// Picks the store: `explicit` (`--store`) if given, else `TOOLGATE_STORE`, else
/// the spec's `store:`, else the SQLite file in `state_dir`. `${env.NAME}` in the
/// chosen value is replaced from the environment.
///
/// ```
/// use std::path::Path;
/// use toolgate::{store::StoreChoice, store::choose_store};
///
/// let dir = Path::new("/srv/.toolgate");
/// assert_eq!(choose_store(None, None, dir, |_| None)?, StoreChoice::Sqlite(dir.into()));
/// let chosen = choose_store(None, Some("postgres://tg:${env.PGPASS}@db/tg"), dir, |name| {
///     (name == "PGPASS").then(|| "s3cret".to_owned())
/// })?;
/// assert_eq!(chosen, StoreChoice::Postgres { url: "postgres://tg:s3cret@db/tg".into() });
/// assert_eq!(chosen.shown(), "postgres://tg:***@db/tg");
/// # Ok::<(), toolgate::store::StoreError>(())
/// ```
pub fn choose_store(
    explicit: Option<&str>,
    spec: Option<&str>,
    state_dir: &Path,
    env: impl Fn(&str) -> Option<String>,
) -> Result<StoreChoice, StoreError> {
    let chosen = explicit
        .map(str::to_owned)
        .or_else(|| env(STORE_ENV))
        .filter(|v| !v.trim().is_empty())
        .or_else(|| spec.map(str::to_owned));
    let Some(value) = chosen else {
        return Ok(StoreChoice::Sqlite(state_dir.to_path_buf()));
    };
    let value = value.trim();
    if value == "sqlite" {
        return Ok(StoreChoice::Sqlite(state_dir.to_path_buf()));
    }
    if !(value.starts_with("postgres://") || value.starts_with("postgresql://")) {
        return Err(StoreError::BadStoreUrl {
            location: masked(value),
            problem: "toolgate keeps its store in SQLite (the default: leave `store` unset) or in PostgreSQL (`postgres://…`)".into(),
        });
    }
    let url = expand_env(value, &env).map_err(|name| StoreError::BadStoreUrl {
        location: masked(value),
        problem: format!("the environment variable {name} is not set"),
    })?;
    Ok(StoreChoice::Postgres { url })
}

fn masked(value: &str) -> String {
    #[cfg(feature = "postgres")]
    return super::mask_url(value);
    #[cfg(not(feature = "postgres"))]
    return value.split('@').next_back().unwrap_or_default().to_owned();
}

/// How large a PostgreSQL store's pool is, and where its code-run key lives.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Connections in a PostgreSQL store's pool; `None` for the default.
    pub pool_size: Option<usize>,
}

/// Opens the chosen store. For PostgreSQL, the key that seals paused programs is
/// kept in `key_dir` (the state directory), which every instance that resumes
/// another's programs must share.
pub fn open_store(
    choice: &StoreChoice,
    options: &OpenOptions,
    key_dir: &Path,
) -> Result<Arc<dyn ServedStore>, StoreError> {
    match choice {
        StoreChoice::Sqlite(dir) => Ok(Arc::new(SqliteStore::open_in_dir(dir)?)),
        #[cfg(feature = "postgres")]
        StoreChoice::Postgres { url } => {
            let mut pg = super::PostgresOptions {
                key_dir: Some(key_dir.to_path_buf()),
                ..Default::default()
            };
            if let Some(size) = options.pool_size {
                pg.pool_size = size;
            }
            std::fs::create_dir_all(key_dir).map_err(|source| StoreError::CreateDir {
                path: key_dir.to_path_buf(),
                source,
            })?;
            Ok(Arc::new(super::PostgresStore::open(url, pg)?))
        }
        #[cfg(not(feature = "postgres"))]
        StoreChoice::Postgres { .. } => {
            let _ = (options, key_dir);
            Err(StoreError::BadStoreUrl {
                location: choice.shown(),
                problem: "this toolgate was built without the `postgres` feature".into(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_over_the_environment_and_the_environment_over_the_spec() {
        let dir = Path::new("/s");
        let env = |name: &str| (name == STORE_ENV).then(|| "postgres://env/db".to_owned());
        let pg = |url: &str| StoreChoice::Postgres { url: url.into() };
        assert_eq!(
            choose_store(
                Some("postgres://flag/db"),
                Some("postgres://spec/db"),
                dir,
                env
            )
            .unwrap(),
            pg("postgres://flag/db")
        );
        assert_eq!(
            choose_store(None, Some("postgres://spec/db"), dir, env).unwrap(),
            pg("postgres://env/db")
        );
        assert_eq!(
            choose_store(None, Some("postgres://spec/db"), dir, |_| None).unwrap(),
            pg("postgres://spec/db")
        );
    }

    #[test]
    fn an_unknown_store_or_a_missing_variable_is_a_clear_error() {
        let dir = Path::new("/s");
        let e = choose_store(Some("mysql://x"), None, dir, |_| None).unwrap_err();
        assert!(e.to_string().contains("PostgreSQL (`postgres://…`)"), "{e}");
        let e = choose_store(None, Some("postgres://u:${env.NOPE}@h/db"), dir, |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("NOPE is not set"), "{e}");
        assert!(
            !e.contains("${env.NOPE}"),
            "the template is masked too: {e}"
        );
    }
}
