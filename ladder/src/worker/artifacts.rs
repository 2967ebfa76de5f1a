//! Uploaded bots' folders on a worker: fetched from the server by SHA-256,
//! checked against that hash before anything is unpacked, unpacked read-only
//! (`<cache>/<sha256>/`), and kept up to a size, the least recently used
//! dropped first. A folder in use by a batch being played is never dropped.

use super::{Api, WorkerError};
use crate::submission::{ArchiveLimits, Tree, archive::sha256_hex};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The largest artifact a worker takes from the server: a server's upload limit
/// can be raised, but never past this.
pub const MAX_ARTIFACT_BYTES: u64 = 1 << 30;

/// One folder in the cache.
#[derive(Debug)]
struct Entry {
    /// Its files' contents, added up.
    bytes: u64,
    /// When it was last used (a counter, not a clock).
    used: u64,
    /// Batches using it now.
    pins: usize,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<String, Entry>,
    clock: u64,
    /// Artifacts fetched from the server since the cache was opened.
    fetched: u64,
}

/// The worker's folders of uploaded bots.
#[derive(Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    max_bytes: u64,
    state: Mutex<State>,
}

/// A folder a batch is using: not dropped from the cache while held.
#[derive(Debug)]
pub struct Pinned {
    cache: Arc<ArtifactCache>,
    sha256: String,
    /// The unpacked folder.
    pub dir: PathBuf,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Ok(mut s) = self.cache.state.lock()
            && let Some(e) = s.entries.get_mut(&self.sha256)
        {
            e.pins = e.pins.saturating_sub(1);
        }
    }
}

/// Whether `text` is a SHA-256 in lowercase hex (so, also, a safe folder name).
pub fn is_sha256(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Removes a folder the cache unpacked read-only.
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fn open_up(dir: &Path) -> std::io::Result<()> {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                open_up(&entry.path())?;
            }
        }
        Ok(())
    }
    if dir.exists() {
        open_up(dir)?;
        std::fs::remove_dir_all(dir)?;
    }
    Ok(())
}

impl ArtifactCache {
    /// Opens the cache in `dir` (made private to this user), keeping what a
    /// previous run unpacked there and removing what it left half done.
    ///
    /// # Errors
    /// The folder cannot be made or read.
    pub fn open(dir: &Path, max_bytes: u64) -> std::io::Result<Arc<ArtifactCache>> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let mut state = State::default();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_sha256(&name) && entry.file_type()?.is_dir() {
                let bytes = folder_bytes(&entry.path());
                state.entries.insert(
                    name,
                    Entry {
                        bytes,
                        used: 0,
                        pins: 0,
                    },
                );
            } else {
                remove_tree(&entry.path())?;
            }
        }
        Ok(Arc::new(ArtifactCache {
            dir: dir.to_owned(),
            max_bytes,
            state: Mutex::new(state),
        }))
    }

    /// How many artifacts were fetched from the server since the cache opened.
    pub fn fetched(&self) -> u64 {
        self.state.lock().map_or(0, |s| s.fetched)
    }

    /// The folder of artifact `sha256`, fetched from the server if it is not
    /// here: its bytes must hash to `sha256`, else nothing is unpacked.
    ///
    /// # Errors
    /// Not a hash, the server cannot give it, or what it gave is not it.
    pub async fn folder(self: &Arc<Self>, client: &mut Api, sha256: &str) -> Result<Pinned, WorkerError> {
        if !is_sha256(sha256) {
            return Err(WorkerError::Artifact(format!("{sha256:?} is not a SHA-256")));
        }
        if let Some(p) = self.pin(sha256) {
            crate::metrics::WorkerMetrics::count(&crate::metrics::worker().artifacts, "cache_hit", 1);
            return Ok(p);
        }
        crate::metrics::WorkerMetrics::count(&crate::metrics::worker().artifacts, "fetched", 1);
        let bytes = fetch(client, sha256).await?;
        let this = self.clone();
        let sha = sha256.to_owned();
        tokio::task::spawn_blocking(move || this.insert(&sha, &bytes))
            .await
            .map_err(|e| WorkerError::Task(e.to_string()))?
    }

    /// Unpacks `bytes`, which must hash to `sha256`, into the cache (once).
    ///
    /// # Errors
    /// The hash differs, the archive is refused, or the file system.
    pub fn insert(self: &Arc<Self>, sha256: &str, bytes: &[u8]) -> Result<Pinned, WorkerError> {
        if let Some(p) = self.pin(sha256) {
            return Ok(p);
        }
        let tree = checked_tree("artifact", sha256, bytes, "run")?;
        self.unpack_whole(sha256, &tree)?;
        {
            let mut s = self
                .state
                .lock()
                .map_err(|_| WorkerError::Task("the cache's lock".into()))?;
            s.fetched += 1;
            s.entries.entry(sha256.to_owned()).or_insert(Entry {
                bytes: tree.content_bytes(),
                used: 0,
                pins: 0,
            });
        }
        let pinned = self
            .pin(sha256)
            .ok_or_else(|| WorkerError::Artifact(format!("artifact {sha256} vanished")))?;
        self.evict();
        Ok(pinned)
    }

    /// Unpacks `tree` as the folder of `sha256`: beside it first, then renamed
    /// into place, so a folder under its hash is always whole.
    fn unpack_whole(&self, sha256: &str, tree: &Tree) -> Result<(), WorkerError> {
        let io = |e: std::io::Error| WorkerError::Io {
            path: self.dir.clone(),
            source: e,
        };
        let partial = self
            .dir
            .join(format!(".partial-{sha256}-{:x}", referee::seed::os_seed()));
        std::fs::create_dir(&partial).map_err(io)?;
        if let Err(e) = tree.unpack_into(&partial) {
            let _ = remove_tree(&partial);
            return Err(io(e));
        }
        let dir = self.dir.join(sha256);
        if let Err(e) = std::fs::rename(&partial, &dir) {
            let _ = remove_tree(&partial);
            if !dir.is_dir() {
                return Err(io(e));
            }
        }
        Ok(())
    }

    /// The folder of `sha256` if it is here, pinned and marked used.
    fn pin(self: &Arc<Self>, sha256: &str) -> Option<Pinned> {
        let mut s = self.state.lock().ok()?;
        s.clock += 1;
        let now = s.clock;
        let e = s.entries.get_mut(sha256)?;
        e.used = now;
        e.pins += 1;
        Some(Pinned {
            cache: self.clone(),
            sha256: sha256.to_owned(),
            dir: self.dir.join(sha256),
        })
    }

    /// Drops the least recently used folders not in use until the rest fit.
    fn evict(&self) {
        let Ok(mut s) = self.state.lock() else { return };
        let mut total: u64 = s.entries.values().map(|e| e.bytes).sum();
        while total > self.max_bytes {
            let Some(oldest) = s
                .entries
                .iter()
                .filter(|(_, e)| e.pins == 0)
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                return;
            };
            if let Some(e) = s.entries.remove(&oldest) {
                total -= e.bytes;
            }
            if let Err(e) = remove_tree(&self.dir.join(&oldest)) {
                tracing::warn!("cannot remove {oldest} from the cache: {e}");
            }
        }
    }

    /// The artifacts in the cache now.
    pub fn held(&self) -> Vec<String> {
        self.state
            .lock()
            .map(|s| s.entries.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// An artifact's bytes from the server, streamed, at most [`MAX_ARTIFACT_BYTES`].
///
/// # Errors
/// The server refuses or fails, or sends more than the most a worker takes.
pub async fn fetch(client: &mut Api, sha256: &str) -> Result<Vec<u8>, WorkerError> {
    client
        .fetch_artifact(sha256, MAX_ARTIFACT_BYTES)
        .await
        .map_err(|e| WorkerError::Artifact(format!("fetching {sha256}: {e}")))
}

/// The archive `bytes` named `what sha256` (an artifact, an upload), read
/// within a worker's limits once its bytes hash to its name; what is refused
/// is never `done` (run, built).
///
/// # Errors
/// The bytes hash otherwise, or the archive is refused.
pub(super) fn checked_tree(what: &str, sha256: &str, bytes: &[u8], done: &str) -> Result<Tree, WorkerError> {
    let got = sha256_hex(bytes);
    if got != sha256 {
        return Err(WorkerError::Artifact(format!(
            "{what} {sha256}: the bytes received hash to {got}: tampered with or cut short, so never {done}"
        )));
    }
    let limits = ArchiveLimits {
        packed_bytes: MAX_ARTIFACT_BYTES,
        unpacked_bytes: 4 * MAX_ARTIFACT_BYTES,
        entries: 1_000_000,
    };
    Tree::read(bytes, &limits).map_err(|e| WorkerError::Artifact(format!("{what} {sha256}: {e}")))
}

/// A folder's files' sizes, added up (what a previous run left in the cache).
fn folder_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => total += entry.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}
