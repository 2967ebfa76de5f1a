//! Each refusal is an attack: an archive built by hand the way a hostile
//! author would, which must be refused with its reason and nothing kept.

use super::*;
use rand_core::{Rng, SeedableRng};

/// One entry of a hand-built archive, written without the tar crate's own
/// checks of paths (which would refuse the attacks before they reach us).
struct Raw<'a> {
    kind: tar::EntryType,
    path: &'a [u8],
    mode: u32,
    data: &'a [u8],
    link: &'a [u8],
}

fn file<'a>(path: &'a str, data: &'a [u8]) -> Raw<'a> {
    Raw {
        kind: tar::EntryType::Regular,
        path: path.as_bytes(),
        mode: 0o644,
        data,
        link: b"",
    }
}

fn folder(path: &str) -> Raw<'_> {
    Raw {
        kind: tar::EntryType::Directory,
        path: path.as_bytes(),
        mode: 0o755,
        data: b"",
        link: b"",
    }
}

fn link<'a>(path: &'a str, target: &'a str) -> Raw<'a> {
    Raw {
        kind: tar::EntryType::Symlink,
        path: path.as_bytes(),
        mode: 0o777,
        data: b"",
        link: target.as_bytes(),
    }
}

fn tar_of(entries: &[Raw<'_>]) -> Vec<u8> {
    let mut out = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        let name = &mut h.as_old_mut().name;
        name[..e.path.len()].copy_from_slice(e.path);
        let linkname = &mut h.as_old_mut().linkname;
        linkname[..e.link.len()].copy_from_slice(e.link);
        h.set_entry_type(e.kind);
        h.set_mode(e.mode);
        h.set_size(e.data.len() as u64);
        h.set_cksum();
        out.append(&h, e.data).unwrap();
    }
    out.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, bytes).unwrap();
    gz.finish().unwrap()
}

const MANIFEST_TEXT: &[u8] =
    b"name = \"lucky\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n";

fn runtimes() -> Vec<String> {
    all_runtimes()
}

fn read(entries: &[Raw<'_>]) -> Result<Tree, ArchiveError> {
    Tree::read(&tar_of(entries), &ArchiveLimits::default())
}

fn a_bot() -> Vec<Raw<'static>> {
    vec![
        file("astragal.toml", MANIFEST_TEXT),
        file("bot.py", b"print('ready')\n"),
        Raw {
            mode: 0o755,
            ..file("lib/run.sh", b"#!/bin/sh\n")
        },
        link("lib/main.py", "../bot.py"),
    ]
}

#[test]
fn a_bots_folder_reads_packs_and_reads_back_the_same() {
    let tree = read(&a_bot()).unwrap();
    let paths: Vec<&str> = tree.entries().map(|(p, _)| p).collect();
    assert_eq!(
        paths,
        ["astragal.toml", "bot.py", "lib", "lib/main.py", "lib/run.sh"]
    );
    assert_eq!(
        tree.get("lib/run.sh"),
        Some(&Node::File {
            executable: true,
            data: b"#!/bin/sh\n".to_vec()
        })
    );
    let artifact = tree.pack();
    assert_eq!(artifact.sha256, archive::sha256_hex(&artifact.bytes));
    let again = Tree::read(&artifact.bytes, &ArchiveLimits::default()).unwrap();
    assert_eq!(again, tree);
    assert_eq!(again.pack(), artifact, "the canonical form is one set of bytes");
    // The same files in another order and spelling are the same artifact.
    let mut other = a_bot();
    other.reverse();
    other[0].path = b"./lib/main.py";
    let gz = gzip(&tar_of(&other));
    assert_eq!(
        Tree::read(&gz, &ArchiveLimits::default()).unwrap().pack(),
        artifact
    );
}

#[test]
fn a_single_top_folder_holding_the_manifest_is_the_bots_folder() {
    let tree = read(&[
        folder("lucky-1.0/"),
        file("lucky-1.0/astragal.toml", MANIFEST_TEXT),
        file("lucky-1.0/bot.py", b""),
    ])
    .unwrap();
    assert!(tree.file("astragal.toml").is_some() && tree.file("bot.py").is_some());
    // Two top folders: nothing is stripped, and there is no manifest.
    let two = read(&[file("a/astragal.toml", MANIFEST_TEXT), file("b/bot.py", b"")]).unwrap();
    assert!(two.file("a/astragal.toml").is_some());
    let err = Submission::check(
        &tar_of(&[file("a/astragal.toml", MANIFEST_TEXT), file("b/bot.py", b"")]),
        &ArchiveLimits::default(),
        &runtimes(),
    )
    .unwrap_err();
    assert_eq!(err, SubmissionError::Manifest(ManifestError::Missing));
}

#[test]
fn unpacking_writes_the_tree_read_only_and_nothing_else() {
    let tree = read(&a_bot()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let into = dir.path().join("bot");
    std::fs::create_dir(&into).unwrap();
    tree.unpack_into(&into).unwrap();
    assert_eq!(
        std::fs::read(into.join("lib/main.py")).unwrap(),
        b"print('ready')\n"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| {
        std::fs::symlink_metadata(into.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(
        (mode("bot.py"), mode("lib/run.sh"), mode("lib")),
        (0o444, 0o555, 0o555)
    );
    assert!(std::fs::write(into.join("new"), b"x").is_err() || nix::unistd::geteuid().is_root());
    let mut seen: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    seen.sort();
    assert_eq!(seen, ["bot"]);
    // Unpacking again into a folder that is not empty refuses, rather than
    // writing through what is there.
    let again = dir.path().join("again");
    std::fs::create_dir(&again).unwrap();
    std::os::unix::fs::symlink("/tmp", again.join("lib")).unwrap();
    assert!(tree.unpack_into(&again).is_err());
}

/// Every way out of the folder, and every way to exhaust the host, refused by name.
#[test]
fn hostile_archives_are_refused_naming_the_problem() {
    let m = |path: &'static str, mode: u32| Raw {
        mode,
        ..file(path, b"")
    };
    let kind = |k: tar::EntryType, path: &'static str| Raw {
        kind: k,
        ..file(path, b"")
    };
    let cases: Vec<(&str, Vec<Raw<'_>>, ArchiveError)> = vec![
        (
            "absolute path",
            vec![file("/etc/cron.d/x", b"")],
            ArchiveError::AbsolutePath {
                path: "/etc/cron.d/x".into(),
            },
        ),
        (
            "parent dir",
            vec![file("../../x", b"")],
            ArchiveError::ParentDir {
                path: "../../x".into(),
            },
        ),
        (
            "parent dir inside",
            vec![file("a/../../x", b"")],
            ArchiveError::ParentDir {
                path: "a/../../x".into(),
            },
        ),
        (
            "absolute link",
            vec![link("etc", "/etc")],
            ArchiveError::LinkLeaves {
                path: "etc".into(),
                target: "/etc".into(),
            },
        ),
        (
            "link up",
            vec![folder("a"), link("a/up", "../..")],
            ArchiveError::LinkLeaves {
                path: "a/up".into(),
                target: "../..".into(),
            },
        ),
        (
            "link through a link to the root",
            vec![link("r", "."), link("t", "r/../secret")],
            ArchiveError::LinkLeaves {
                path: "t".into(),
                target: "r/../secret".into(),
            },
        ),
        (
            "link through a deeper link",
            vec![
                folder("a"),
                folder("a/b"),
                link("a/b/c", "../.."),
                link("x", "a/b/c/.."),
            ],
            ArchiveError::LinkLeaves {
                path: "x".into(),
                target: "a/b/c/..".into(),
            },
        ),
        (
            "link loop",
            vec![link("p", "q"), link("q", "p")],
            ArchiveError::LinkLoop { path: "p".into() },
        ),
        (
            "a file written through a link",
            vec![link("l", "sub"), folder("sub"), file("l/x", b"")],
            ArchiveError::NotInAFolder {
                path: "l/x".into(),
                parent: "l".into(),
            },
        ),
        (
            "a file inside a file",
            vec![file("f", b""), file("f/x", b"")],
            ArchiveError::NotInAFolder {
                path: "f/x".into(),
                parent: "f".into(),
            },
        ),
        (
            "hard link",
            vec![Raw {
                link: b"astragal.toml",
                ..kind(tar::EntryType::Link, "h")
            }],
            ArchiveError::HardLink { path: "h".into() },
        ),
        (
            "character device",
            vec![kind(tar::EntryType::Char, "null")],
            ArchiveError::Device { path: "null".into() },
        ),
        (
            "block device",
            vec![kind(tar::EntryType::Block, "sda")],
            ArchiveError::Device { path: "sda".into() },
        ),
        (
            "fifo",
            vec![kind(tar::EntryType::Fifo, "p")],
            ArchiveError::Unsupported {
                path: "p".into(),
                kind: "named pipe (FIFO)",
            },
        ),
        (
            "setuid",
            vec![m("su", 0o4755)],
            ArchiveError::SpecialBits {
                path: "su".into(),
                mode: 0o4755,
            },
        ),
        (
            "setgid",
            vec![m("sg", 0o2755)],
            ArchiveError::SpecialBits {
                path: "sg".into(),
                mode: 0o2755,
            },
        ),
        (
            "sticky folder",
            vec![Raw {
                mode: 0o1777,
                ..folder("t/")
            }],
            ArchiveError::SpecialBits {
                path: "t/".into(),
                mode: 0o1777,
            },
        ),
        (
            "duplicate",
            vec![file("bot.py", b"1"), file("./bot.py", b"2")],
            ArchiveError::Duplicate {
                path: "bot.py".into(),
            },
        ),
        (
            "not UTF-8",
            vec![Raw {
                path: b"bot\xff.py",
                ..file("", b"")
            }],
            ArchiveError::BadPath {
                path: "bot\u{fffd}.py".into(),
                why: "a path that is not UTF-8",
            },
        ),
        (
            "double slash",
            vec![file("a//b", b"")],
            ArchiveError::BadPath {
                path: "a//b".into(),
                why: "an empty step in a path (`//`)",
            },
        ),
    ];
    for (what, mut entries, expected) in cases {
        entries.insert(0, file("astragal.toml", MANIFEST_TEXT));
        let got = read(&entries);
        assert_eq!(got.as_ref().err(), Some(&expected), "{what}: {got:?}");
        // And as an upload: refused with the same words.
        let err =
            Submission::check(&gzip(&tar_of(&entries)), &ArchiveLimits::default(), &runtimes()).unwrap_err();
        assert_eq!(err.to_string(), expected.to_string(), "{what}");
    }
    assert_eq!(read(&[folder("empty")]), Err(ArchiveError::Empty));
    assert!(matches!(
        Tree::read(b"<html>not an archive</html>", &ArchiveLimits::default()),
        Err(ArchiveError::Unreadable(_))
    ));
}

#[test]
fn links_are_checked_in_the_tree_that_is_kept_after_the_top_folder_goes() {
    // Followed before the single top folder was taken away, these stayed inside
    // and were stored; every worker then refused to unpack them.
    let cases: Vec<(&str, Vec<Raw<'_>>, ArchiveError)> = vec![
        (
            "a link that leaves once the single top folder is taken away",
            vec![
                folder("top"),
                file("top/astragal.toml", MANIFEST_TEXT),
                link("top/up", ".."),
            ],
            ArchiveError::LinkLeaves {
                path: "up".into(),
                target: "..".into(),
            },
        ),
        (
            "a link into the top folder by its name, which is gone once taken away",
            vec![
                folder("top"),
                file("top/astragal.toml", MANIFEST_TEXT),
                link("top/m", "../top/astragal.toml"),
            ],
            ArchiveError::LinkLeaves {
                path: "m".into(),
                target: "../top/astragal.toml".into(),
            },
        ),
    ];
    for (what, entries, expected) in cases {
        let got = read(&entries);
        assert_eq!(got.as_ref().err(), Some(&expected), "{what}: {got:?}");
        let err =
            Submission::check(&gzip(&tar_of(&entries)), &ArchiveLimits::default(), &runtimes()).unwrap_err();
        assert_eq!(err.to_string(), expected.to_string(), "{what}");
    }
    // A link inside the top folder to a file beside it is fine either way.
    let kept = read(&[
        folder("top"),
        file("top/astragal.toml", MANIFEST_TEXT),
        link("top/m", "astragal.toml"),
    ])
    .unwrap();
    assert!(matches!(kept.get("m"), Some(Node::Link { .. })));
}

#[test]
fn limits_stop_an_archive_as_its_bytes_arrive() {
    let small = ArchiveLimits {
        packed_bytes: 4096,
        unpacked_bytes: 64 << 10,
        entries: 5,
    };
    let big = vec![0u8; 8192];
    let packed = tar_of(&[file("big", &big)]);
    let err = Tree::read(&packed, &small).unwrap_err();
    assert_eq!(
        err,
        ArchiveError::PackedTooLarge {
            size: packed.len() as u64,
            limit: 4096
        }
    );
    // A compression bomb: 64 MiB of zeros in about 64 KiB of gzip. Refused when
    // the contents pass the limit, long before 64 MiB are inflated.
    let zeros = vec![0u8; 64 << 20];
    let bomb = gzip(&tar_of(&[
        file("astragal.toml", MANIFEST_TEXT),
        file("zeros", &zeros),
    ]));
    assert!(bomb.len() < 4 << 20, "{}", bomb.len());
    let limits = ArchiveLimits {
        packed_bytes: 4 << 20,
        ..small
    };
    assert_eq!(
        Tree::read(&bomb, &limits),
        Err(ArchiveError::UnpackedTooLarge { limit: 64 << 10 })
    );
    // Bytes that are no file's contents: a GNU long name of 8 MiB, which the
    // tar reader would hold in memory. Stopped as the stream passes the limit.
    let name = vec![b'n'; 8 << 20];
    let long = gzip(&tar_of(&[
        Raw {
            kind: tar::EntryType::GNULongName,
            ..file("././@LongLink", &name)
        },
        file("x", b""),
    ]));
    assert_eq!(
        Tree::read(&long, &limits),
        Err(ArchiveError::UnpackedTooLarge { limit: 64 << 10 })
    );
    // Many small files that add up.
    let chunk = vec![7u8; 20 << 10];
    let many: Vec<Raw<'_>> = ["a", "b", "c", "d"].iter().map(|p| file(p, &chunk)).collect();
    assert_eq!(
        Tree::read(
            &tar_of(&many),
            &ArchiveLimits {
                packed_bytes: 1 << 20,
                ..small
            }
        ),
        Err(ArchiveError::UnpackedTooLarge { limit: 64 << 10 })
    );
    // Too many entries, even empty ones.
    let names: Vec<String> = (0..6).map(|i| format!("f{i}")).collect();
    let entries: Vec<Raw<'_>> = names.iter().map(|n| file(n, b"")).collect();
    assert_eq!(
        Tree::read(
            &tar_of(&entries),
            &ArchiveLimits {
                packed_bytes: 1 << 20,
                ..small
            }
        ),
        Err(ArchiveError::TooManyEntries { limit: 5 })
    );
}

#[test]
fn manifests_are_refused_naming_the_problem() {
    let check = |text: &str| Manifest::parse(text.as_bytes(), &runtimes());
    let base = "games = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n";
    assert_eq!(check(&format!("name = \"lucky\"\n{base}")).unwrap().name, "lucky");
    let cases = [
        (format!("name = \"lucky bot\"\n{base}"), "name \"lucky bot\""),
        (format!("name = \"lucky@2\"\n{base}"), "name \"lucky@2\""),
        (format!("name = \"{}\"\n{base}", "x".repeat(41)), "use 1 to 40"),
        (
            format!("name = \"a\"\n{base}colour = \"red\"\n"),
            "unknown field `colour`",
        ),
        (
            "name = \"a\"\ngames = [\"chess\"]\nruntime = \"python3\"\nrun = \"x\"".into(),
            "unknown game \"chess\"",
        ),
        (
            "name = \"a\"\ngames = [\"ur\", \"ur\"]\nruntime = \"python3\"\nrun = \"x\"".into(),
            "listed twice",
        ),
        (
            "name = \"a\"\ngames = []\nruntime = \"python3\"\nrun = \"x\"".into(),
            "`games` is empty",
        ),
        (
            "name = \"a\"\ngames = [\"ur\"]\nruntime = \"cobol\"\nrun = \"x\"".into(),
            "unknown runtime \"cobol\"",
        ),
        (
            "name = \"a\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"/usr/bin/python3 bot.py\"".into(),
            "absolute program",
        ),
        (
            "name = \"a\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 ../other/bot.py\"".into(),
            "`..` in a path",
        ),
        (
            "name = \"a\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 'bot.py\"".into(),
            "bad quoting",
        ),
        (
            "name = \"a\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py /proc /run/postgresql\"".into(),
            "\"/proc\" names a path outside the bot's folder",
        ),
        (
            "name = \"a\"\ngames = [\"ur\"]\nruntime = \"cc\"\nrun = \"./bot\"\nbuild = \"make -C /\"".into(),
            "\"/\" names a path outside the bot's folder",
        ),
        (
            "name = \"a\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"\"".into(),
            "`run`: empty",
        ),
        (
            "name = \"a\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"x\"\nbuild = \"make\\nrm -rf /\""
                .into(),
            "`build`: a control character",
        ),
        (
            "name = \"a\"\ngames = \"ur\"\nruntime = \"python3\"\nrun = \"x\"".into(),
            "astragal.toml: ",
        ),
        ("name = [".into(), "astragal.toml: "),
    ];
    for (text, words) in cases {
        let err = check(&text).expect_err(&text).to_string();
        assert!(err.contains(words), "{text:?}: {err}");
    }
    // A host that offers fewer runtimes refuses the others.
    let only_node = vec!["node".to_owned()];
    let err = Manifest::parse(format!("name = \"a\"\n{base}").as_bytes(), &only_node).unwrap_err();
    assert_eq!(
        err.to_string(),
        "astragal.toml: unknown runtime \"python3\"; this ladder offers node"
    );
    // A program in the folder must be there unless a build makes it.
    let run_missing = b"name = \"a\"\ngames = [\"ur\"]\nruntime = \"native\"\nrun = \"./bot\"\n";
    let err = Submission::check(
        &tar_of(&[file("astragal.toml", run_missing)]),
        &ArchiveLimits::default(),
        &runtimes(),
    )
    .unwrap_err();
    assert_eq!(err, SubmissionError::NoProgram("bot".into()));
    let built =
        b"name = \"a\"\ngames = [\"ur\"]\nruntime = \"cc\"\nrun = \"./bot\"\nbuild = \"cc -o bot bot.c\"\n";
    Submission::check(
        &tar_of(&[file("astragal.toml", built), file("bot.c", b"")]),
        &ArchiveLimits::default(),
        &runtimes(),
    )
    .unwrap();
    // `run = "bot"` would be looked up on the worker's PATH, not in the folder:
    // said at upload, with what was meant, whether the file is there or built.
    let bare = b"name = \"a\"\ngames = [\"ur\"]\nruntime = \"native\"\nrun = \"bot\"\n";
    let err = Submission::check(
        &tar_of(&[file("astragal.toml", bare), file("bot", b"")]),
        &ArchiveLimits::default(),
        &runtimes(),
    )
    .unwrap_err();
    assert_eq!(err, SubmissionError::BareProgram("bot".into(), ""));
    assert!(err.to_string().contains("did you mean `./bot`?"), "{err}");
    let bare_built =
        b"name = \"a\"\ngames = [\"ur\"]\nruntime = \"cc\"\nrun = \"bot\"\nbuild = \"cc -o bot bot.c\"\n";
    let err = Submission::check(
        &tar_of(&[file("astragal.toml", bare_built), file("bot.c", b"")]),
        &ArchiveLimits::default(),
        &runtimes(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("(its build makes it): did you mean `./bot`?"),
        "{err}"
    );
    // A runtime's own program is fine.
    let runtime_program =
        b"name = \"a\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n";
    Submission::check(
        &tar_of(&[file("astragal.toml", runtime_program), file("bot.py", b"")]),
        &ArchiveLimits::default(),
        &runtimes(),
    )
    .unwrap();
}

/// Random damage to real archives, plain and gzip: every result is either a
/// refusal or a tree that keeps every promise; nothing panics or hangs.
#[test]
fn damaged_archives_never_panic_and_what_passes_keeps_its_promises() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(34);
    let plain = tar_of(&a_bot());
    // And a bot in a single top folder with links beside its files, where a
    // mutated link may lead out only once the top folder is taken away.
    let topped = tar_of(&[
        folder("top"),
        file("top/astragal.toml", MANIFEST_TEXT),
        folder("top/sub"),
        file("top/sub/bot.py", b"print(1)"),
        link("top/sub/up", "../astragal.toml"),
    ]);
    let bases = [
        plain.clone(),
        gzip(&plain),
        read(&a_bot()).unwrap().pack().bytes,
        topped,
    ];
    let (mut taken, mut refused) = (0, 0);
    for i in 0..3000 {
        let mut bytes = bases[i % bases.len()].clone();
        for _ in 0..1 + rng.next_u32() % 8 {
            let at = rng.next_u32() as usize % bytes.len();
            match rng.next_u32() % 4 {
                0 => bytes[at] = rng.next_u32() as u8,
                1 => bytes[at] ^= 1 << (rng.next_u32() % 8),
                2 => bytes.truncate(at.max(1)),
                _ => bytes[at] = b"./\0/."[rng.next_u32() as usize % 5],
            }
        }
        match Tree::read(&bytes, &ArchiveLimits::default()) {
            Err(_) => refused += 1,
            Ok(tree) => {
                taken += 1;
                for (path, node) in tree.entries() {
                    assert!(
                        !path.starts_with('/')
                            && !path.split('/').any(|p| p.is_empty() || p == "." || p == ".."),
                        "{path:?}"
                    );
                    if let Node::Link { target } = node {
                        assert!(!target.starts_with('/'), "{path} -> {target}");
                    }
                }
                assert_eq!(
                    Tree::read(&tree.pack().bytes, &ArchiveLimits::default()).unwrap(),
                    tree
                );
            }
        }
    }
    assert!(taken > 0 && refused > 0, "taken {taken}, refused {refused}");
}

/// The starter kits ship a manifest: each kit's folder, packed as `ladder
/// submit` packs it, is an upload the ladder takes as it is.
#[test]
fn the_starter_kits_can_be_submitted_as_they_are() {
    let kits = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bots/starters");
    for (kit, runtime) in [
        ("python", "python3"),
        ("javascript", "node"),
        ("cpp", "cc"),
        ("java", "java"),
    ] {
        let packed = pack_folder(&kits.join(kit)).unwrap();
        let s = Submission::check(&packed, &ArchiveLimits::default(), &runtimes()).unwrap();
        assert_eq!(s.manifest.runtime, runtime, "{kit}");
        assert_eq!(s.manifest.games.len(), engine::GAME_IDS.len(), "{kit}");
        assert!(s.tree.file("check.sh").is_some(), "{kit}");
    }
}
