//! The finals' commit–reveal: a master seed drawn when the finals start, its
//! commitment published at once, every group's seed derived from it, and the
//! seed itself revealed at the close.
//!
//! What the commitment binds: the master seed, the entries (each entry's name
//! and the SHA-256 of the files it runs) and the terms (game, options, seats,
//! plan). Every group's seed also derives
//! from both, so an entry changed after the start changes every die of the
//! finals, and a record dealt any other dice fails its check.

use sha2::{Digest, Sha256};

/// Domain tags: a hash made for one purpose never stands in for another.
const COMMITMENT_TAG: &[u8] = b"astragal finals commitment v1\0";
const GROUP_SEED_TAG: &[u8] = b"astragal finals group seed v1\0";

/// The finals' secret: 256 bits from the operating system, so that no one can
/// find it from its commitment by trying seeds.
#[derive(Clone, PartialEq, Eq)]
pub struct MasterSeed([u8; 32]);

impl std::fmt::Debug for MasterSeed {
    // A log line must not reveal it before the close.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterSeed(..)")
    }
}

/// A text that should be a master seed or a digest and is not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} should be 64 hexadecimal digits, not {text:?}")]
pub struct BadHex {
    what: &'static str,
    text: String,
}

fn hex32(what: &'static str, text: &str) -> Result<[u8; 32], BadHex> {
    let bad = || BadHex {
        what,
        text: text.chars().take(80).collect(),
    };
    let bytes = hex::decode(text).map_err(|_| bad())?;
    bytes.try_into().map_err(|_| bad())
}

impl MasterSeed {
    /// A new seed from the operating system's random source.
    ///
    /// # Errors
    /// The random source failed.
    pub fn draw() -> Result<MasterSeed, getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        Ok(MasterSeed(bytes))
    }

    /// The seed as 64 hexadecimal digits (what the page reveals at the close).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// A seed from its 64 hexadecimal digits.
    ///
    /// # Errors
    /// Not 64 hexadecimal digits.
    pub fn from_hex(text: &str) -> Result<MasterSeed, BadHex> {
        hex32("a master seed", text).map(MasterSeed)
    }
}

/// One entry as the commitment binds it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SealedEntry {
    /// The version's name (`name` or `name@N`).
    pub name: String,
    /// The SHA-256 of the files it runs; none for a bot the host registered by
    /// its command.
    pub artifact_sha256: Option<String>,
    /// Played over gRPC (`grpc://`, `grpcs://`): its groups' games each get their
    /// own seed, as any group with such a bot does, and the program behind the
    /// address is its author's, not fixed by any file.
    #[serde(default)]
    pub remote: bool,
}

/// The SHA-256 of the finalists in seed order (the order fixes which finalist
/// sits in which group): a line `seed<TAB>name<TAB>artifact` each, seeds from
/// 1, `-` for no artifact.
pub fn entries_digest(entries: &[SealedEntry]) -> [u8; 32] {
    let mut h = Sha256::new();
    for (i, e) in entries.iter().enumerate() {
        h.update((i + 1).to_string().as_bytes());
        h.update(b"\t");
        h.update(e.name.as_bytes());
        h.update(b"\t");
        h.update(e.artifact_sha256.as_deref().unwrap_or("-").as_bytes());
        if e.remote {
            h.update(b"\tremote");
        }
        h.update(b"\n");
    }
    h.finalize().into()
}

/// Parses a digest written as 64 hexadecimal digits.
///
/// # Errors
/// Not 64 hexadecimal digits.
pub fn digest_from_hex(text: &str) -> Result<[u8; 32], BadHex> {
    hex32("an entries digest", text)
}

/// The finals' terms as the commitment binds them: the game, its options, the
/// seats, how groups are dealt and the plan, one line each (`game`, options
/// joined by spaces, seats, `mirrored` or `independent`, then `top groups
/// until_separated max_games`).
pub fn terms(game: &str, options: &[String], seats: u32, seeding: &str, plan: &super::FinalsPlan) -> String {
    format!(
        "{game}\n{}\n{seats}\n{seeding}\n{} {} {} {}\n",
        options.join(" "),
        plan.top,
        plan.groups,
        u8::from(plan.until_separated),
        plan.max_games
    )
}

/// The commitment published before the finals: SHA-256 of a tag, the master
/// seed, the entries' digest and the terms' SHA-256, as 64 hexadecimal digits.
pub fn commitment(master: &MasterSeed, digest: &[u8; 32], terms: &str) -> String {
    let mut h = Sha256::new();
    h.update(COMMITMENT_TAG);
    h.update(master.0);
    h.update(digest);
    h.update(Sha256::digest(terms.as_bytes()));
    hex::encode(h.finalize())
}

/// What the finals are sealed with: the master seed (kept until the close),
/// the entries' digest and the commitment made of them and the terms.
#[derive(Debug, Clone)]
pub struct Seal {
    pub master: MasterSeed,
    pub digest: [u8; 32],
    pub commitment: String,
}

impl Seal {
    /// Seals `entries` under `master` and `terms`.
    pub fn new(master: MasterSeed, entries: &[SealedEntry], terms: &str) -> Seal {
        let digest = entries_digest(entries);
        let commitment = commitment(&master, &digest, terms);
        Seal {
            master,
            digest,
            commitment,
        }
    }
}

/// The seed finals group `group_no` is dealt the `deal`-th time (0 first; a
/// group is dealt again when its lease ran out or was given back, since its
/// worker saw the earlier dice): the first 8 bytes, little-endian, of SHA-256
/// over a tag, the master seed, the entries' digest, the group's number and
/// the deal.
pub fn group_seed(master: &MasterSeed, digest: &[u8; 32], group_no: u64, deal: u64) -> u64 {
    let mut h = Sha256::new();
    h.update(GROUP_SEED_TAG);
    h.update(master.0);
    h.update(digest);
    h.update(group_no.to_le_bytes());
    h.update(deal.to_le_bytes());
    let out = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&out[..8]);
    u64::from_le_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<SealedEntry> {
        vec![
            SealedEntry {
                name: "zeta@2".into(),
                artifact_sha256: Some("ab".repeat(32)),
                remote: false,
            },
            SealedEntry {
                name: "first".into(),
                artifact_sha256: None,
                remote: false,
            },
        ]
    }

    #[test]
    fn the_digest_sees_the_seed_order_and_every_name_and_artifact() {
        let e = entries();
        let mut reversed = e.clone();
        reversed.reverse();
        // Who is seed 1 decides who sits where: the order is bound.
        assert_ne!(entries_digest(&e), entries_digest(&reversed));
        let mut renamed = e.clone();
        renamed[0].name = "zeta@3".into();
        assert_ne!(entries_digest(&e), entries_digest(&renamed));
        let mut other_files = e.clone();
        other_files[0].artifact_sha256 = Some("cd".repeat(32));
        assert_ne!(entries_digest(&e), entries_digest(&other_files));
        // A name cannot borrow the next line's separator.
        let glued = vec![SealedEntry {
            name: "zeta@2\tab\n2\tfirst".into(),
            artifact_sha256: None,
            remote: false,
        }];
        let mut remote = e.clone();
        remote[1].remote = true;
        assert_ne!(entries_digest(&e), entries_digest(&remote));
        assert_ne!(entries_digest(&e), entries_digest(&glued));
    }

    #[test]
    fn seeds_and_commitment_are_pinned_and_each_input_moves_them() {
        let master = MasterSeed::from_hex(&"07".repeat(32)).unwrap();
        let digest = entries_digest(&entries());
        // Pinned: a verifier on any machine must derive these same figures.
        assert_eq!(
            (
                group_seed(&master, &digest, 0, 0),
                group_seed(&master, &digest, 5, 1)
            ),
            (PINNED_SEEDS[0], PINNED_SEEDS[1])
        );
        let plan = super::super::FinalsPlan {
            top: 4,
            groups: 10,
            until_separated: false,
            max_games: 0,
        };
        let terms = terms("ur", &["rules=finkel".to_owned()], 2, "mirrored", &plan);
        assert_eq!(terms, "ur\nrules=finkel\n2\nmirrored\n4 10 0 0\n");
        assert_eq!(commitment(&master, &digest, &terms), PINNED_COMMITMENT);
        let other = MasterSeed::from_hex(&"08".repeat(32)).unwrap();
        assert_ne!(
            commitment(&master, &digest, &terms),
            commitment(&other, &digest, &terms)
        );
        let more_groups = super::terms(
            "ur",
            &["rules=finkel".to_owned()],
            2,
            "mirrored",
            &super::super::FinalsPlan { groups: 11, ..plan },
        );
        let independent = super::terms("ur", &["rules=finkel".to_owned()], 2, "independent", &plan);
        assert_ne!(
            commitment(&master, &digest, &terms),
            commitment(&master, &digest, &independent)
        );
        assert_ne!(
            commitment(&master, &digest, &terms),
            commitment(&master, &digest, &more_groups)
        );
        let seeds: std::collections::HashSet<u64> = (0..50)
            .flat_map(|g| (0..3).map(move |d| (g, d)))
            .map(|(g, d)| group_seed(&master, &digest, g, d))
            .collect();
        assert_eq!(seeds.len(), 150, "every group and deal its own seed");
        assert_ne!(
            group_seed(&master, &digest, 3, 0),
            group_seed(&master, &[0; 32], 3, 0)
        );
    }

    #[test]
    fn hex_round_trips_and_bad_hex_is_named() {
        let m = MasterSeed::draw().unwrap();
        assert_eq!(MasterSeed::from_hex(&m.to_hex()).unwrap(), m);
        assert_ne!(MasterSeed::draw().unwrap(), m);
        let e = MasterSeed::from_hex("12zz").unwrap_err();
        assert!(e.to_string().contains("a master seed should be 64"), "{e}");
        assert!(digest_from_hex(&"00".repeat(31)).is_err());
        assert!(!format!("{m:?}").contains(&m.to_hex()[..8]));
    }

    // Worked out apart from this code, with Python's hashlib (docs/hosting.md
    // shows the same few lines for entrants who want to check by hand).
    const PINNED_SEEDS: [u64; 2] = [971_744_887_443_178_302, 8_759_026_822_904_819_216];
    const PINNED_COMMITMENT: &str = "8d9a486f5b79012d81ff4ccc7c0ce0a74981ee32249fb7c20c4801ab03b76cd7";
}
