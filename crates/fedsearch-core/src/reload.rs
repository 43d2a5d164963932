//! Values read from files and read again when the files change: the one reload rule of the
//! TLS files ([`crate::tls`]), the router's signing key ([`crate::assertion`]) and the JWKS
//! files of public keys (end-user tokens and the router's assertions, [`crate::auth`]).
//!
//! The files are looked at no more than once a [`RELOAD_CHECK`] (size and modification time).
//! A changed set is read again; a set that cannot be used (half-written, a certificate without
//! its key) is logged once and the value before stays in use. Every value read gets a new
//! generation, so what is built from it ([`PerGeneration`]) is built again once.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::{Duration, Instant, SystemTime},
};

/// How often the files are looked at, at most.
pub const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// What identifies a version of a file on disk.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    std::fs::metadata(path).ok().and_then(|m| Some((m.modified().ok()?, m.len())))
}

type Reader<T> = Box<dyn Fn(&[PathBuf]) -> Result<T, String> + Send + Sync>;

/// A value read from `paths` with `read`, read again when they change.
pub(crate) struct Reloading<T> {
    paths: Vec<PathBuf>,
    /// What the files are, in logs (e.g. `TLS files`).
    what: &'static str,
    read: Reader<T>,
    state: RwLock<State<T>>,
}

struct State<T> {
    value: Arc<T>,
    stamps: Vec<Stamp>,
    /// The stamps of a set that was refused, so it is reported once.
    refused: Option<Vec<Stamp>>,
    checked: Instant,
    generation: u64,
}

impl<T> Reloading<T> {
    /// Reads the files now; an error is the first read's.
    pub(crate) fn load(
        paths: Vec<PathBuf>,
        what: &'static str,
        read: impl Fn(&[PathBuf]) -> Result<T, String> + Send + Sync + 'static,
    ) -> Result<Self, String> {
        let stamps = paths.iter().map(|p| stamp(p)).collect();
        let value = Arc::new(read(&paths)?);
        let state = RwLock::new(State { value, stamps, refused: None, checked: Instant::now(), generation: 0 });
        Ok(Self { paths, what, read: Box::new(read), state })
    }

    pub(crate) fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The value in use and its generation (which grows with every value read again), reading
    /// the files first when they changed.
    pub(crate) fn current(&self) -> (Arc<T>, u64) {
        self.look(false)
    }

    /// [`Reloading::current`], looking at the files now whenever they were last looked at: for
    /// a value that may be new a moment ago (a JWKS asked for a `kid` it does not hold yet).
    /// The files are read only when they changed.
    pub(crate) fn current_now(&self) -> (Arc<T>, u64) {
        self.look(true)
    }

    fn look(&self, now: bool) -> (Arc<T>, u64) {
        let due = |s: &State<T>| now || s.checked.elapsed() >= RELOAD_CHECK;
        {
            let s = self.state.read().unwrap_or_else(|e| e.into_inner());
            if !due(&s) {
                return (s.value.clone(), s.generation);
            }
        }
        let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
        if due(&s) {
            s.checked = Instant::now();
            let stamps: Vec<Stamp> = self.paths.iter().map(|p| stamp(p)).collect();
            if stamps != s.stamps && s.refused.as_ref() != Some(&stamps) {
                match (self.read)(&self.paths) {
                    Ok(value) => {
                        s.value = Arc::new(value);
                        s.stamps = stamps;
                        s.refused = None;
                        s.generation += 1;
                        tracing::info!(files = ?self.paths, generation = s.generation, "{} re-read", self.what);
                    }
                    Err(e) => {
                        s.refused = Some(stamps);
                        tracing::warn!(error = %e, "{} changed but cannot be used; keeping the ones loaded before", self.what);
                    }
                }
            }
        }
        (s.value.clone(), s.generation)
    }
}

/// What is built from one generation of a [`Reloading`] value (a rustls config, a verifier),
/// built again when the generation moves.
pub(crate) struct PerGeneration<T>(RwLock<Option<(u64, Arc<T>)>>);

impl<T> std::fmt::Debug for PerGeneration<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let generation = self.0.read().unwrap_or_else(|e| e.into_inner()).as_ref().map(|(g, _)| *g);
        f.debug_struct("PerGeneration").field("generation", &generation).finish()
    }
}

impl<T> PerGeneration<T> {
    pub(crate) fn new() -> Self {
        Self(RwLock::new(None))
    }

    /// The value built for `generation`, building it with `build` if it is not yet. A failed
    /// build is returned and leaves the value before in place ([`PerGeneration::last`]).
    pub(crate) fn get<E>(&self, generation: u64, build: impl FnOnce() -> Result<Arc<T>, E>) -> Result<Arc<T>, E> {
        if let Some((g, v)) = &*self.0.read().unwrap_or_else(|e| e.into_inner())
            && *g == generation
        {
            return Ok(v.clone());
        }
        let mut built = self.0.write().unwrap_or_else(|e| e.into_inner());
        if let Some((g, v)) = &*built
            && *g == generation
        {
            return Ok(v.clone());
        }
        let v = build()?;
        *built = Some((generation, v.clone()));
        Ok(v)
    }

    /// The value built last, whatever its generation.
    pub(crate) fn last(&self) -> Option<Arc<T>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).as_ref().map(|(_, v)| v.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_is_read_again_once_and_a_broken_one_keeps_the_value_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n");
        std::fs::write(&path, "1").unwrap();
        let parse = |p: &[PathBuf]| {
            std::fs::read_to_string(&p[0]).unwrap().trim().parse::<u32>().map_err(|e| format!("not a number: {e}"))
        };
        let files = Reloading::load(vec![path.clone()], "test file", parse).unwrap();
        assert_eq!(*files.current().0, 1);
        let built = PerGeneration::new();
        let double = |g: u64| built.get(g, || Ok::<_, ()>(Arc::new(*files.current().0 * 2))).unwrap();
        assert_eq!(*double(files.current().1), 2);
        // Another size, so the change shows even within the file system's time granularity.
        std::fs::write(&path, "22").unwrap();
        std::thread::sleep(RELOAD_CHECK + Duration::from_millis(50));
        let (value, generation) = files.current();
        assert_eq!((*value, generation), (22, 1));
        assert_eq!(*double(generation), 44);
        std::fs::write(&path, "broken").unwrap();
        std::thread::sleep(RELOAD_CHECK + Duration::from_millis(50));
        assert_eq!(files.current(), (Arc::new(22), 1), "the value before stays");
        assert!(built.get(2, || Err::<Arc<u32>, _>("cannot")).is_err());
        assert_eq!(built.last().as_deref(), Some(&44), "a failed build keeps the one before");
    }
}
