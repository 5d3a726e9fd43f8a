//! The embedding scorer the spec file (`search: {model, cache}`) or `--model`
//! configures, for `search`, `eval search` and `serve --search`. Built without the
//! `semantic` feature, a configured model is an error that says how to get it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate::search::CatalogScorer;
use toolgate::spec::SpecFile;

/// Where the model and its vector cache are, resolved against the spec file.
pub struct ModelChoice {
    pub model: PathBuf,
    /// Read only by a build with the `semantic` feature.
    #[cfg_attr(not(feature = "semantic"), allow(dead_code))]
    pub cache: Option<PathBuf>,
}

impl ModelChoice {
    /// The spec's `search:` section, with `model` (a flag) taking its place; paths
    /// in the spec are relative to it. The cache defaults to `vectors/` in `state_dir`.
    pub fn resolve(
        spec: Option<(&SpecFile, &Path)>,
        model: Option<&Path>,
        state_dir: Option<&Path>,
    ) -> Option<ModelChoice> {
        let base = spec
            .and_then(|(_, file)| file.parent())
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let section = spec.map(|(spec, _)| &spec.search);
        let model = match model {
            Some(path) => path.to_path_buf(),
            None => base.join(section?.model.as_deref()?),
        };
        let cache = section
            .and_then(|s| s.cache.as_deref())
            .map(|c| base.join(c))
            .or_else(|| state_dir.map(|d| d.join("vectors")));
        Some(ModelChoice { model, cache })
    }

    /// Loads the model (and opens the cache) as a scorer for `search_tools`.
    pub fn open(&self) -> Result<Arc<dyn CatalogScorer>, String> {
        open(self)
    }
}

#[cfg(feature = "semantic")]
fn open(choice: &ModelChoice) -> Result<Arc<dyn CatalogScorer>, String> {
    let index = toolgate::semantic::SemanticIndex::open(&choice.model, choice.cache.as_deref())
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(index))
}

#[cfg(not(feature = "semantic"))]
fn open(choice: &ModelChoice) -> Result<Arc<dyn CatalogScorer>, String> {
    Err(format!(
        "search by meaning needs the model in {}, but this toolgate was built without \
         the `semantic` feature; build it with `cargo install toolgate-cli --features semantic`, \
         or drop `search.model` (and --model) to search by words only",
        choice.model.display()
    ))
}

/// Runs `build` (a catalog's vectors made anew, or any other work of a model) on
/// one of the runtime's blocking threads: embedding takes CPU for as long as a
/// model needs, and an async worker running it would stall every session on it.
pub async fn off_the_workers<T: Send + 'static>(
    build: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(build)
        .await
        .map_err(|e| format!("the work stopped before it finished: {e}"))?
}

/// The variables that set how many threads candle runs a model on.
#[cfg(feature = "semantic")]
const MODEL_THREAD_VARS: [&str; 2] = ["CANDLE_NUM_THREADS", "RAYON_NUM_THREADS"];

/// Runs the model on one thread unless `CANDLE_NUM_THREADS` or `RAYON_NUM_THREADS`
/// says otherwise. candle's extra threads spin while they wait, so where the same
/// cores serve calls they cost more than they gain: at load 4 on 2 cores a query's
/// median was 29.9 ms on one thread and 61.6 ms on two, and indexing 2,000 tools
/// 137 s against 128 s. Called first thing in `main`, before any other thread starts,
/// since the environment may not be written while another thread reads it.
#[cfg(feature = "semantic")]
pub fn one_model_thread_unless_set() {
    if MODEL_THREAD_VARS
        .iter()
        .all(|v| std::env::var_os(v).is_none())
    {
        for var in MODEL_THREAD_VARS {
            // SAFETY: `main` calls this before it starts any thread (the runtime,
            // telemetry's exporter and the model's pool all come later).
            unsafe { std::env::set_var(var, "1") };
        }
    }
}
