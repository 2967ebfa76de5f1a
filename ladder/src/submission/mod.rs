//! A bot an author uploads: an archive of its folder, checked
//! ([`archive`]), its manifest `astragal.toml` ([`manifest`]), and the
//! canonical artifact the ladder keeps and workers run.

pub mod archive;
pub mod manifest;

pub use archive::{
    ArchiveError, ArchiveLimits, Artifact, Node, Tree, pack_folder, pack_folder_with_manifest,
};
pub use manifest::{Manifest, ManifestError, RUNTIMES};

/// The manifest's name in the bot's folder.
pub const MANIFEST: &str = "astragal.toml";

/// An upload that passed every check: what it says and what it holds.
#[derive(Debug, Clone)]
pub struct Submission {
    pub manifest: Manifest,
    pub tree: Tree,
    pub artifact: Artifact,
}

/// Why an upload was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmissionError {
    #[error("{0}")]
    Archive(#[from] ArchiveError),
    #[error("{0}")]
    Manifest(#[from] ManifestError),
    #[error("astragal.toml: `run` starts {0:?}, which is not a file in the archive")]
    NoProgram(String),
    #[error(
        "astragal.toml: `run` starts {0:?}, a name looked up on the worker's PATH (where a runtime's \
         programs are), but it is a file of your bot's folder{1}: did you mean `./{0}`?"
    )]
    BareProgram(String, &'static str),
}

impl Submission {
    /// Checks an upload: the archive under `limits`, then its manifest against
    /// the `runtimes` the host offers; packs what passed.
    ///
    /// # Errors
    /// The first problem, by name; nothing is kept of a refused upload.
    pub fn check(
        bytes: &[u8],
        limits: &ArchiveLimits,
        runtimes: &[String],
    ) -> Result<Submission, SubmissionError> {
        let tree = Tree::read(bytes, limits)?;
        let text = tree.file(MANIFEST).ok_or(ManifestError::Missing)?;
        let manifest = Manifest::parse(text, runtimes)?;
        if let Some(program) = manifest.bare_own_program() {
            let (word, made) = program;
            let here = matches!(tree.get(&word), Some(Node::File { .. } | Node::Link { .. }));
            if here || made {
                return Err(SubmissionError::BareProgram(
                    word,
                    if here { "" } else { " (its build makes it)" },
                ));
            }
        }
        if let Some(program) = manifest.run_program_path() {
            // A build may make it; without one it must be here now.
            if manifest.build.is_none()
                && !matches!(tree.get(&program), Some(Node::File { .. } | Node::Link { .. }))
            {
                return Err(SubmissionError::NoProgram(program));
            }
        }
        let artifact = tree.pack();
        Ok(Submission {
            manifest,
            tree,
            artifact,
        })
    }
}

/// Every runtime's name: what a host offers unless told otherwise.
pub fn all_runtimes() -> Vec<String> {
    RUNTIMES.iter().map(|r| r.name.to_owned()).collect()
}

#[cfg(test)]
mod tests;
