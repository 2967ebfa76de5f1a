//! What the public pages never show.
//!
//! Records name each seat by its bot's public name and keep only the public part
//! of each fault ([`referee::fault::Fault`]): no command line, environment value,
//! host path or bot stderr reaches them in the first place, so no page has a bot's
//! spec to hide. Two things remain:
//! - the host's own secrets, which a bot may have read somewhere and written on an
//!   `info` line: the admin token, and any worker's token (known only by its
//!   SHA-256, so every 64-hex-digit word in a text is hashed and hidden if it is
//!   one), shown as `[hidden]`;
//! - `info` lines, which only the bot's author reads (in records stored before
//!   they were kept apart, `server::logs`);
//! - records stored before seats were named that way (their seats carry a spec):
//!   the public copy drops the specs, and those seats' faults show their kind
//!   without a detail.

use referee::GameRecord;
use std::collections::HashSet;

/// What stands where a secret was.
pub const HIDDEN: &str = "[hidden]";

/// The host's secrets that no page may show.
#[derive(Debug, Clone, Default)]
pub struct HostSecrets {
    /// The admin token.
    pub admin_token: Option<String>,
    /// The SHA-256 (hex) of every worker's token, revoked ones too.
    pub token_hashes: HashSet<String>,
}

/// Hides the host's tokens in text, and makes the public copy of a record.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    host: HostSecrets,
}

/// How many hex digits a worker token has (`server::new_token`).
const TOKEN_HEX: usize = 64;

impl Redactor {
    /// A redactor of the host's secrets.
    pub fn new(host: HostSecrets) -> Redactor {
        Redactor { host }
    }

    /// `text` with the admin token and every worker's token replaced by [`HIDDEN`].
    pub fn text(&self, text: &str) -> String {
        let out = match self.host.admin_token.as_deref() {
            Some(admin) if !admin.is_empty() && text.contains(admin) => text.replace(admin, HIDDEN),
            _ => text.to_owned(),
        };
        self.hide_tokens(out)
    }

    /// `text` with every run of exactly [`TOKEN_HEX`] hex digits that is a
    /// worker's token replaced by [`HIDDEN`].
    fn hide_tokens(&self, text: String) -> String {
        if self.host.token_hashes.is_empty() || text.len() < TOKEN_HEX {
            return text;
        }
        let bytes = text.as_bytes();
        let mut found: Vec<(usize, usize)> = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if !bytes[i].is_ascii_hexdigit() {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
                i += 1;
            }
            if i - start == TOKEN_HEX
                && self
                    .host
                    .token_hashes
                    .contains(&crate::app::token_hash(&text[start..i]))
            {
                found.push((start, i));
            }
        }
        if found.is_empty() {
            return text;
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for (a, b) in found {
            out.push_str(&text[last..a]);
            out.push_str(HIDDEN);
            last = b;
        }
        out.push_str(&text[last..]);
        out
    }

    /// A record as the public may see it: no host token in a seat's announced
    /// name or a fault's detail (a bot may have read one and written it there);
    /// no `info` line, which is its author's alone (a record stored before they
    /// were kept apart still has them); and for a record stored before seats were
    /// named by their bots, no spec, and those seats' faults by kind alone. The
    /// moves are the game's own notation.
    pub fn record(&self, rec: &mut GameRecord) {
        let mut legacy = Vec::with_capacity(rec.seats.len());
        for seat in &mut rec.seats {
            legacy.push(!seat.spec.is_empty());
            seat.spec.clear();
            seat.name = self.text(&seat.name);
        }
        for f in &mut rec.faults {
            if legacy.get(f.seat).copied().unwrap_or(true) {
                f.detail.clear();
            } else {
                f.detail = self.text(&f.detail);
            }
        }
        for m in &mut rec.moves {
            m.info.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_tokens_are_hidden_wherever_a_bot_wrote_them() {
        let worker = "ab".repeat(32);
        let other = "cd".repeat(32);
        let host = HostSecrets {
            admin_token: Some("admin-secret-0123456789".into()),
            token_hashes: [crate::app::token_hash(&worker)].into(),
        };
        let r = Redactor::new(host);
        let said = r.text(&format!(
            "read {worker}; admin admin-secret-0123456789; x{worker}y"
        ));
        assert!(
            !said.contains(&worker) && !said.contains("admin-secret"),
            "{said}"
        );
        // A run of the same length that is no token, and a longer run, stay.
        let plain = format!("hash {other} and {worker}0");
        assert_eq!(r.text(&plain), plain);
    }

    /// Text that only looked like a spec's words stays as written: nothing is
    /// hidden but tokens.
    #[test]
    fn words_that_no_token_is_stay_as_written() {
        let r = Redactor::new(HostSecrets {
            admin_token: Some("admin-secret-0123456789".into()),
            token_hashes: HashSet::new(),
        });
        for said in [
            "the bots' PATH",
            "spartan-python",
            "replaced by spartan@2",
            r#"--key="abc def""#,
        ] {
            assert_eq!(r.text(said), said);
        }
    }

    /// A record from before seats were named by their bots loses its specs and
    /// those seats' fault details; a record of today keeps its public details.
    #[test]
    fn a_legacy_record_shows_its_faults_by_kind_alone() {
        let mut rec: GameRecord = serde_json::from_value(serde_json::json!({
            "schema": 1, "engine": "0", "game": "ur", "options": [], "seed": 1,
            "seats": [
                {"name": "a", "spec": "python3 /srv/secret/a.py"},
                {"name": "b", "entrant": "b"}
            ],
            "moves": [],
            "faults": [
                {"seat": 0, "kind": "spawn", "detail": "cannot start \"python3 /srv/secret/a.py\"", "at_move": 0},
                {"seat": 1, "kind": "crash", "detail": "the bot closed its output (exit status 1)", "at_move": 0}
            ],
            "termination": "forfeit",
            "outcome": {"ranks": [2, 1], "scores": [0, 1], "capped": false},
            "final_position": ""
        }))
        .unwrap();
        Redactor::default().record(&mut rec);
        let shown = serde_json::to_string(&rec).unwrap();
        assert!(!shown.contains("/srv/secret"), "{shown}");
        assert_eq!(rec.faults[0].detail, "");
        assert_eq!(rec.faults[1].detail, "the bot closed its output (exit status 1)");
    }
}
