//! An uploaded bot's files. An archive (tar, plain or gzip) is read entry by
//! entry and refused at the first thing that could reach outside the bot's
//! folder or exhaust the host; what is taken is a [`Tree`], written back in one
//! canonical form ([`Tree::pack`]) whose SHA-256 names it, and unpacked
//! read-only on a worker ([`Tree::unpack_into`]).
//!
//! Nothing here trusts the archive's own claims: sizes are counted as the bytes
//! arrive (a header that claims less than it holds, or a gzip stream that
//! inflates a thousandfold, stops at the limit), paths are taken only in one
//! spelling, and a link is followed through the archive's own tree, links
//! inside it included, to where it really leads.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// What a host takes in one upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// The archive as uploaded.
    pub packed_bytes: u64,
    /// The files' contents, added up.
    pub unpacked_bytes: u64,
    /// Entries: files, folders and links.
    pub entries: u64,
}

impl Default for ArchiveLimits {
    /// 64 MiB packed, 256 MiB unpacked, 10,000 entries.
    fn default() -> ArchiveLimits {
        ArchiveLimits {
            packed_bytes: 64 << 20,
            unpacked_bytes: 256 << 20,
            entries: 10_000,
        }
    }
}

/// Why an archive was refused. Each names the entry at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArchiveError {
    #[error("the archive is {size} bytes; this ladder takes at most {limit} bytes packed")]
    PackedTooLarge { size: u64, limit: u64 },
    #[error(
        "the archive unpacks to more than {limit} bytes, the most this ladder takes (a compression bomb, or a bot too large)"
    )]
    UnpackedTooLarge { limit: u64 },
    #[error("the archive holds more than {limit} entries, the most this ladder takes")]
    TooManyEntries { limit: u64 },
    #[error("not a tar archive (plain or gzip): {0}")]
    Unreadable(String),
    #[error("the archive holds no files")]
    Empty,
    #[error("{path:?}: an absolute path; every entry must be relative to the bot's folder")]
    AbsolutePath { path: String },
    #[error("{path:?}: `..` in a path; every entry must stay inside the bot's folder")]
    ParentDir { path: String },
    #[error("{path:?}: {why}")]
    BadPath { path: String, why: &'static str },
    #[error("{path:?}: a link to {target:?}, which leads out of the bot's folder")]
    LinkLeaves { path: String, target: String },
    #[error("{path:?}: a link in a loop of links")]
    LinkLoop { path: String },
    #[error("{path:?}: a hard link; pack the file itself")]
    HardLink { path: String },
    #[error("{path:?}: a device file")]
    Device { path: String },
    #[error("{path:?}: a {kind}; only files, folders and links inside the folder are taken")]
    Unsupported { path: String, kind: &'static str },
    #[error("{path:?}: mode {mode:o} sets the setuid, setgid or sticky bit")]
    SpecialBits { path: String, mode: u32 },
    #[error("{path:?}: in the archive twice")]
    Duplicate { path: String },
    #[error("{path:?}: inside {parent:?}, which is not a folder")]
    NotInAFolder { path: String, parent: String },
}

/// One entry of a [`Tree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Folder,
    File {
        executable: bool,
        data: Vec<u8>,
    },
    /// A symbolic link, relative, that leads somewhere inside the tree.
    Link {
        target: String,
    },
}

/// A bot's files as checked: every path relative, in one spelling (`a/b`, no
/// `.`, no `..`, no trailing `/`), every folder listed, every link leading
/// inside; sorted, so a parent comes before what it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    nodes: BTreeMap<String, Node>,
}

/// The longest path taken, in bytes, and the deepest.
const MAX_PATH_BYTES: usize = 1024;
const MAX_DEPTH: usize = 64;
/// Links followed to resolve one link, as the kernel's own limit.
const MAX_LINK_HOPS: u32 = 40;

/// A reader that fails once more than `left` bytes have come through it, and
/// says so in `exceeded` (the tar reader wraps the error it is given).
struct Budget<R> {
    inner: R,
    left: u64,
    exceeded: std::rc::Rc<std::cell::Cell<bool>>,
}

impl<R: Read> Read for Budget<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        match self.left.checked_sub(n as u64) {
            Some(left) => {
                self.left = left;
                Ok(n)
            }
            None => {
                self.exceeded.set(true);
                Err(std::io::Error::other("over the unpacked limit"))
            }
        }
    }
}

impl Tree {
    /// Reads and checks an archive: tar, or tar in gzip (told by its first bytes).
    /// A single top-level folder holding `astragal.toml` (as `git archive
    /// --prefix` and release tarballs make) is taken as the bot's folder.
    ///
    /// # Errors
    /// The first entry that breaks a rule, or a limit passed.
    pub fn read(bytes: &[u8], limits: &ArchiveLimits) -> Result<Tree, ArchiveError> {
        if bytes.len() as u64 > limits.packed_bytes {
            return Err(ArchiveError::PackedTooLarge {
                size: bytes.len() as u64,
                limit: limits.packed_bytes,
            });
        }
        let source: Box<dyn Read + '_> = if bytes.starts_with(&[0x1f, 0x8b]) {
            Box::new(flate2::read::GzDecoder::new(bytes))
        } else {
            Box::new(bytes)
        };
        Tree::read_tar(source, limits)
    }

    /// Reads and checks a plain tar as it arrives (a build's folder, packed in
    /// its sandbox): the same rules as [`Tree::read`], and the stream is read no
    /// further than the limits allow, so nothing larger is ever held.
    ///
    /// # Errors
    /// As [`Tree::read`].
    pub fn read_stream(stream: impl Read, limits: &ArchiveLimits) -> Result<Tree, ArchiveError> {
        Tree::read_tar(stream, limits)
    }

    fn read_tar(source: impl Read, limits: &ArchiveLimits) -> Result<Tree, ArchiveError> {
        let exceeded = std::rc::Rc::new(std::cell::Cell::new(false));
        // The stream holds a 512-byte header per entry (more for long names) and
        // pads each file to 512 bytes: allowed for on top of the contents.
        let overhead = limits
            .entries
            .saturating_add(2)
            .saturating_mul(2048)
            .saturating_add(1 << 20);
        let stream = Budget {
            inner: source,
            left: limits.unpacked_bytes.saturating_add(overhead),
            exceeded: exceeded.clone(),
        };
        let too_large = ArchiveError::UnpackedTooLarge {
            limit: limits.unpacked_bytes,
        };
        let unreadable = |e: std::io::Error| {
            if exceeded.get() {
                too_large.clone()
            } else {
                ArchiveError::Unreadable(e.to_string())
            }
        };
        let mut archive = tar::Archive::new(stream);
        let mut tree = Tree::default();
        let (mut entries, mut contents) = (0u64, 0u64);
        for entry in archive.entries().map_err(unreadable)? {
            let mut entry = entry.map_err(unreadable)?;
            let raw_path = entry.path_bytes().into_owned();
            let shown = String::from_utf8_lossy(&raw_path).into_owned();
            let kind = entry.header().entry_type();
            if kind.is_pax_global_extensions() {
                // `git archive` writes its commit here: nothing about any file.
                continue;
            }
            entries += 1;
            if entries > limits.entries {
                return Err(ArchiveError::TooManyEntries {
                    limit: limits.entries,
                });
            }
            let Some(path) = normalize(&raw_path, &shown)? else {
                // The archive's own root (`./`): the bot's folder itself.
                if kind.is_dir() {
                    continue;
                }
                return Err(ArchiveError::BadPath {
                    path: shown,
                    why: "a file at the folder's own path",
                });
            };
            let mode = entry
                .header()
                .mode()
                .map_err(|e| ArchiveError::Unreadable(format!("{shown:?}: {e}")))?;
            if mode & 0o7000 != 0 {
                return Err(ArchiveError::SpecialBits { path: shown, mode });
            }
            let node = if kind.is_file() {
                let size = entry.size();
                contents = contents.saturating_add(size);
                if contents > limits.unpacked_bytes {
                    return Err(too_large);
                }
                let mut data = Vec::with_capacity(size.min(1 << 20) as usize);
                entry.read_to_end(&mut data).map_err(unreadable)?;
                if data.len() as u64 != size {
                    return Err(ArchiveError::Unreadable(format!("{shown:?}: cut short")));
                }
                Node::File {
                    executable: mode & 0o111 != 0,
                    data,
                }
            } else if kind.is_dir() {
                Node::Folder
            } else if kind.is_symlink() {
                let target = entry
                    .link_name_bytes()
                    .map(|t| String::from_utf8(t.into_owned()))
                    .transpose()
                    .map_err(|_| ArchiveError::BadPath {
                        path: shown.clone(),
                        why: "a link whose target is not UTF-8",
                    })?
                    .unwrap_or_default();
                if target.is_empty() || target.contains('\0') {
                    return Err(ArchiveError::BadPath {
                        path: shown,
                        why: "a link with no target",
                    });
                }
                Node::Link { target }
            } else if kind.is_hard_link() {
                return Err(ArchiveError::HardLink { path: shown });
            } else if kind.is_character_special() || kind.is_block_special() {
                return Err(ArchiveError::Device { path: shown });
            } else {
                let kind = if kind.is_fifo() {
                    "named pipe (FIFO)"
                } else if kind.is_gnu_sparse() {
                    "sparse file"
                } else if kind.is_contiguous() {
                    "contiguous file"
                } else {
                    "special entry"
                };
                return Err(ArchiveError::Unsupported { path: shown, kind });
            };
            if tree.nodes.insert(path.clone(), node).is_some() {
                return Err(ArchiveError::Duplicate { path });
            }
        }
        tree.complete()?;
        Ok(tree)
    }

    /// Lists every folder the entries are in, refuses an entry inside a file or
    /// a link, and follows every link to where it leads.
    fn complete(&mut self) -> Result<(), ArchiveError> {
        if !self.nodes.values().any(|n| matches!(n, Node::File { .. })) {
            return Err(ArchiveError::Empty);
        }
        let mut parents = Vec::new();
        for path in self.nodes.keys() {
            let mut at = path.as_str();
            while let Some((parent, _)) = at.rsplit_once('/') {
                match self.nodes.get(parent) {
                    Some(Node::Folder) => {}
                    Some(_) => {
                        return Err(ArchiveError::NotInAFolder {
                            path: path.clone(),
                            parent: parent.to_owned(),
                        });
                    }
                    None => parents.push(parent.to_owned()),
                }
                at = parent;
            }
        }
        for parent in parents {
            self.nodes.insert(parent, Node::Folder);
        }
        // Links are followed in the tree that is kept: `top/up -> ..` stays inside
        // before the top folder is taken away and leaves after.
        self.strip_single_folder();
        for (path, node) in &self.nodes {
            if let Node::Link { target } = node {
                let mut hops = 0;
                self.resolve(path, target, &mut hops)?;
            }
        }
        Ok(())
    }

    /// Where the link at `path` to `target` leads, as components from the root,
    /// following links inside the tree as the kernel would.
    fn resolve(&self, path: &str, target: &str, hops: &mut u32) -> Result<Vec<String>, ArchiveError> {
        let leaves = || ArchiveError::LinkLeaves {
            path: path.to_owned(),
            target: target.to_owned(),
        };
        *hops += 1;
        if *hops > MAX_LINK_HOPS {
            return Err(ArchiveError::LinkLoop {
                path: path.to_owned(),
            });
        }
        if target.starts_with('/') {
            return Err(leaves());
        }
        let mut at: Vec<String> = path.split('/').map(str::to_owned).collect();
        at.pop();
        for part in target.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    at.pop().ok_or_else(leaves)?;
                }
                name => {
                    at.push(name.to_owned());
                    let here = at.join("/");
                    if let Some(Node::Link { target: next }) = self.nodes.get(&here) {
                        at = self.resolve(&here, next, hops).map_err(|e| match e {
                            ArchiveError::LinkLeaves { .. } => leaves(),
                            other => other,
                        })?;
                    }
                }
            }
        }
        Ok(at)
    }

    /// An archive of one folder that holds the manifest is that folder's contents.
    fn strip_single_folder(&mut self) {
        if self.nodes.contains_key(super::MANIFEST) {
            return;
        }
        let mut tops = self.nodes.keys().filter(|p| !p.contains('/'));
        let (Some(top), None) = (tops.next(), tops.next()) else {
            return;
        };
        let top = top.clone();
        if self.nodes.get(&top) != Some(&Node::Folder)
            || !self.nodes.contains_key(&format!("{top}/{}", super::MANIFEST))
        {
            return;
        }
        let prefix = format!("{top}/");
        self.nodes = std::mem::take(&mut self.nodes)
            .into_iter()
            .filter_map(|(p, n)| p.strip_prefix(&prefix).map(|rest| (rest.to_owned(), n)))
            .collect();
    }

    /// A file's contents, by its path.
    pub fn file(&self, path: &str) -> Option<&[u8]> {
        match self.nodes.get(path) {
            Some(Node::File { data, .. }) => Some(data),
            _ => None,
        }
    }

    /// The entry at a path.
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// Every entry, parents first.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.nodes.iter().map(|(p, n)| (p.as_str(), n))
    }

    /// The files' contents, added up.
    pub fn content_bytes(&self) -> u64 {
        self.nodes
            .values()
            .map(|n| match n {
                Node::File { data, .. } => data.len() as u64,
                _ => 0,
            })
            .sum()
    }

    /// The tree as one canonical tar in gzip: entries sorted, owner 0, time 0,
    /// modes 755 or 644, so the same files always give the same bytes (with this
    /// build's compressor) and the same [`Artifact`] hash.
    pub fn pack(&self) -> Artifact {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        let mut out = tar::Builder::new(gz);
        out.mode(tar::HeaderMode::Deterministic);
        for (path, node) in &self.nodes {
            let mut header = tar::Header::new_gnu();
            header.set_mtime(0);
            header.set_uid(0);
            header.set_gid(0);
            // Writing into memory cannot fail but for a path tar cannot carry,
            // which `read` never takes.
            let written = match node {
                Node::Folder => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(0o755);
                    header.set_size(0);
                    out.append_data(&mut header, path, std::io::empty())
                }
                Node::File { executable, data } => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(if *executable { 0o755 } else { 0o644 });
                    header.set_size(data.len() as u64);
                    out.append_data(&mut header, path, data.as_slice())
                }
                Node::Link { target } => {
                    header.set_entry_type(tar::EntryType::Symlink);
                    header.set_mode(0o777);
                    header.set_size(0);
                    out.append_link(&mut header, path, target)
                }
            };
            debug_assert!(written.is_ok(), "{path}: {written:?}");
        }
        let bytes = out
            .into_inner()
            .and_then(flate2::write::GzEncoder::finish)
            .unwrap_or_default();
        Artifact::new(bytes)
    }

    /// Writes the tree into `dir`, which must be empty, then makes it read-only.
    /// No entry passes through a link (`read` refuses that) and every file is
    /// created new, so nothing is written outside `dir`.
    ///
    /// # Errors
    /// The file system.
    pub fn unpack_into(&self, dir: &Path) -> std::io::Result<()> {
        self.unpack(dir, false)
    }

    /// [`Tree::unpack_into`], left writable by anyone: a copy for a build, which
    /// may run as another user.
    ///
    /// # Errors
    /// The file system.
    pub fn unpack_writable(&self, dir: &Path) -> std::io::Result<()> {
        self.unpack(dir, true)
    }

    fn unpack(&self, dir: &Path, writable: bool) -> std::io::Result<()> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        for (path, node) in &self.nodes {
            let at = dir.join(path);
            match node {
                Node::Folder => std::fs::create_dir(&at)?,
                Node::File { executable, data } => {
                    let mut file = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(if *executable { 0o755 } else { 0o644 })
                        .open(&at)?;
                    std::io::Write::write_all(&mut file, data)?;
                }
                Node::Link { .. } => {}
            }
        }
        for (path, node) in &self.nodes {
            if let Node::Link { target } = node {
                std::os::unix::fs::symlink(target, dir.join(path))?;
            }
        }
        // Read-only: 555 folders, 444 or 555 files. Writable: the same with
        // every write bit.
        let extra = if writable { 0o222 } else { 0 };
        for (path, node) in self.nodes.iter().rev() {
            let mode = match node {
                Node::Folder => 0o555,
                Node::File { executable: true, .. } => 0o555,
                Node::File { .. } => 0o444,
                Node::Link { .. } => continue,
            };
            std::fs::set_permissions(dir.join(path), std::fs::Permissions::from_mode(mode | extra))?;
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555 | extra))
    }
}

/// An entry's path in its one spelling, or `None` for the archive's root.
fn normalize(raw: &[u8], shown: &str) -> Result<Option<String>, ArchiveError> {
    let bad = |why| ArchiveError::BadPath {
        path: shown.to_owned(),
        why,
    };
    let text = std::str::from_utf8(raw).map_err(|_| bad("a path that is not UTF-8"))?;
    if text.contains('\0') {
        return Err(bad("a path with a NUL byte"));
    }
    if text.starts_with('/') {
        return Err(ArchiveError::AbsolutePath {
            path: shown.to_owned(),
        });
    }
    if text.len() > MAX_PATH_BYTES {
        return Err(bad("a path longer than 1024 bytes"));
    }
    let mut rest = text;
    while let Some(r) = rest.strip_prefix("./") {
        rest = r;
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() || rest == "." {
        return Ok(None);
    }
    let mut depth = 0;
    for part in rest.split('/') {
        match part {
            ".." => {
                return Err(ArchiveError::ParentDir {
                    path: shown.to_owned(),
                });
            }
            "" => return Err(bad("an empty step in a path (`//`)")),
            "." => return Err(bad("`.` inside a path")),
            _ => depth += 1,
        }
    }
    if depth > MAX_DEPTH {
        return Err(bad("a path more than 64 folders deep"));
    }
    Ok(Some(rest.to_owned()))
}

/// Packs a bot's folder as its author has it: a tar in gzip of everything in
/// it but `.git`, links kept as links (the ladder's check decides about them).
///
/// # Errors
/// The folder cannot be read.
pub fn pack_folder(dir: &Path) -> std::io::Result<Vec<u8>> {
    pack_folder_with_manifest(dir, None)
}

/// [`pack_folder`], with `manifest` as its astragal.toml instead of the
/// folder's own (one folder, several bots: `ladder submit --manifest`).
///
/// # Errors
/// The folder cannot be read.
pub fn pack_folder_with_manifest(dir: &Path, manifest: Option<&[u8]>) -> std::io::Result<Vec<u8>> {
    fn walk(
        out: &mut tar::Builder<flate2::write::GzEncoder<Vec<u8>>>,
        dir: &Path,
        prefix: &Path,
        manifest: Option<&[u8]>,
    ) -> std::io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<std::io::Result<_>>()?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let name = prefix.join(entry.file_name());
            if let Some(text) = manifest.filter(|_| name == Path::new(super::MANIFEST)) {
                append_file(out, &name, text)?;
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                if entry.file_name() == ".git" {
                    continue;
                }
                out.append_dir(&name, entry.path())?;
                walk(out, &entry.path(), &name, None)?;
            } else {
                out.append_path_with_name(entry.path(), &name)?;
            }
        }
        Ok(())
    }
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    let mut out = tar::Builder::new(gz);
    out.follow_symlinks(false);
    walk(&mut out, dir, Path::new(""), manifest)?;
    if let Some(text) = manifest.filter(|_| !dir.join(super::MANIFEST).exists()) {
        append_file(&mut out, Path::new(super::MANIFEST), text)?;
    }
    out.into_inner()?.finish()
}

/// A plain file of `text` at `name` in the archive.
fn append_file<W: std::io::Write>(
    out: &mut tar::Builder<W>,
    name: &Path,
    text: &[u8],
) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(text.len() as u64);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    out.append_data(&mut header, name, text)
}

/// A packed tree and its name: the SHA-256 of its bytes, in hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub sha256: String,
    pub bytes: Vec<u8>,
}

impl Artifact {
    /// Names `bytes` by their hash.
    pub fn new(bytes: Vec<u8>) -> Artifact {
        Artifact {
            sha256: sha256_hex(&bytes),
            bytes,
        }
    }
}

/// The SHA-256 of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
