//! Bots' files in an object store (`ladder serve --artifacts`): a directory, or
//! any service `object_store` reaches by URL (`s3://bucket/prefix`, with the
//! usual `AWS_*` variables; an S3-compatible service by `AWS_ENDPOINT`). Each
//! artifact is one object named by its SHA-256; the store keeps its name and
//! size, and a worker checks the bytes against the name, wherever they were.

use object_store::ObjectStore;
use object_store::path::Path;
use std::sync::Arc;

/// An object store and the prefix artifacts go under.
pub struct ObjectArtifacts {
    objects: Arc<dyn ObjectStore>,
    prefix: Path,
    /// Where, as given (for the log).
    pub place: String,
}

impl std::fmt::Debug for ObjectArtifacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectArtifacts")
            .field("place", &self.place)
            .finish_non_exhaustive()
    }
}

/// Why the object store did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ObjectsError {
    /// `--artifacts` names neither a folder that can be made nor a URL an
    /// object store takes.
    #[error("{place:?}: {why}")]
    Place {
        /// The place, as given.
        place: String,
        /// Why it cannot be used.
        why: String,
    },
    /// The object store failed on an artifact.
    #[error("{doing} artifact {sha256} in {place}: {source}")]
    Object {
        /// What was being done: keeping, removing, reading.
        doing: &'static str,
        /// The artifact.
        sha256: String,
        /// Where, as given.
        place: String,
        /// The object store's error.
        source: Box<object_store::Error>,
    },
}

impl ObjectArtifacts {
    /// Opens `place`: a directory path (made if missing), or a URL.
    ///
    /// # Errors
    /// A directory that cannot be made, or a URL no object store takes.
    pub fn open(place: &str) -> Result<ObjectArtifacts, ObjectsError> {
        let refused = |why: String| ObjectsError::Place {
            place: place.to_owned(),
            why,
        };
        let (objects, prefix): (Arc<dyn ObjectStore>, Path) = if place.contains("://") {
            let url = url::Url::parse(place).map_err(|e| refused(e.to_string()))?;
            let (store, path) =
                object_store::parse_url_opts(&url, std::env::vars()).map_err(|e| refused(e.to_string()))?;
            (Arc::from(store), path)
        } else {
            std::fs::create_dir_all(place).map_err(|e| refused(format!("cannot make it: {e}")))?;
            let dir = std::fs::canonicalize(place).map_err(|e| refused(e.to_string()))?;
            let local = object_store::local::LocalFileSystem::new_with_prefix(&dir)
                .map_err(|e| refused(e.to_string()))?;
            (Arc::new(local), Path::default())
        };
        Ok(ObjectArtifacts {
            objects,
            prefix,
            place: place.to_owned(),
        })
    }

    fn path(&self, sha256: &str) -> Path {
        self.prefix.child(sha256)
    }

    fn failed(&self, doing: &'static str, sha256: &str) -> impl FnOnce(object_store::Error) -> ObjectsError {
        let (sha256, place) = (sha256.to_owned(), self.place.clone());
        move |source| ObjectsError::Object {
            doing,
            sha256,
            place,
            source: Box::new(source),
        }
    }

    /// Keeps `bytes` under `sha256` (again is harmless: the same name, the same bytes).
    ///
    /// # Errors
    /// The object store.
    pub async fn put(&self, sha256: &str, bytes: &[u8]) -> Result<(), ObjectsError> {
        self.objects
            .put(&self.path(sha256), bytes.to_vec().into())
            .await
            .map(drop)
            .map_err(self.failed("keeping", sha256))
    }

    /// Removes what is kept under `sha256` (not there is fine).
    ///
    /// # Errors
    /// The object store.
    pub async fn delete(&self, sha256: &str) -> Result<(), ObjectsError> {
        match self.objects.delete(&self.path(sha256)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.failed("removing", sha256)(e)),
        }
    }

    /// The bytes kept under `sha256`.
    ///
    /// # Errors
    /// Not there, or the object store.
    pub async fn get(&self, sha256: &str) -> Result<Vec<u8>, ObjectsError> {
        let got = self
            .objects
            .get(&self.path(sha256))
            .await
            .map_err(self.failed("reading", sha256))?;
        Ok(got
            .bytes()
            .await
            .map_err(self.failed("reading", sha256))?
            .to_vec())
    }
}
