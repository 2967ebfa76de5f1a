//! Fuzz target: no upload makes the archive reader or the manifest parser panic
//! or pass a limit, and every archive taken keeps its promises (paths in one
//! spelling, links inside, the canonical form reads back to the same tree).
//!
//! Run with `cargo +nightly fuzz run uploads` from `ladder/`. Seed the corpus
//! with real archives (`tar czf corpus/uploads/bot.tgz -C bots/python .`).
#![no_main]

use ladder::submission::{ArchiveLimits, Manifest, Node, Submission, Tree, all_runtimes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = ArchiveLimits {
        packed_bytes: 1 << 20,
        unpacked_bytes: 4 << 20,
        entries: 200,
    };
    let _ = Manifest::parse(data, &all_runtimes());
    let _ = Submission::check(data, &limits, &all_runtimes());
    if let Ok(tree) = Tree::read(data, &limits) {
        assert!(tree.content_bytes() <= limits.unpacked_bytes);
        assert!(tree.entries().count() as u64 <= 2 * limits.entries);
        for (path, node) in tree.entries() {
            assert!(!path.starts_with('/'), "{path:?}");
            assert!(!path.split('/').any(|p| p.is_empty() || p == "." || p == ".."), "{path:?}");
            if let Node::Link { target } = node {
                assert!(!target.starts_with('/'), "{path:?} -> {target:?}");
            }
        }
        // Reading the canonical form again follows every link in the tree as
        // stored: one that leaves only once the single top folder is taken away
        // (`top/up -> ..`) fails here.
        let packed = tree.pack();
        assert_eq!(Tree::read(&packed.bytes, &ArchiveLimits::default()).as_ref(), Ok(&tree));
    }
});
