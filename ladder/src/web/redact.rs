//! What the public pages never show: a bot's command line and environment.
//!
//! Records name each seat's spec, and the referee's fault details quote it (`cannot
//! start "python3 bot.py"`), as do suspension reasons that repeat such a detail.
//! Every page passes that text through a [`Redactor`] built from all registered
//! bots and the host's own secrets ([`HostSecrets`]): the admin token, and any
//! worker's token (known only by its SHA-256, so every 64-hex-digit word in a text
//! is hashed and hidden if it is one). A bot that read a token somewhere and wrote
//! it on an `info` line shows `[hidden]`.

use crate::store::BotRow;
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

/// Replaces every bot's spec, each word of it and each environment value, and
/// the host's tokens.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Longest first, so a spec goes before the words inside it.
    secrets: Vec<String>,
    /// Hashes of worker tokens.
    token_hashes: HashSet<String>,
}

/// How many hex digits a worker token has (`server::new_token`).
const TOKEN_HEX: usize = 64;

impl Redactor {
    /// A redactor of `bots`' specs and environments.
    pub fn new(bots: &[BotRow], host: &HostSecrets) -> Redactor {
        // A word that is some bot's public name is no secret (a program on PATH
        // named as its bot): hiding it would hide the name everywhere.
        let names: HashSet<&str> = bots.iter().map(|b| b.name.as_str()).collect();
        let mut secrets: Vec<String> = Vec::new();
        for b in bots {
            secrets.push(b.spec.clone());
            for word in b.spec.split_whitespace().map(|w| w.trim_matches(['"', '\''])) {
                secrets.push(word.to_owned());
                // A program's file name stands alone too (a seat that never said
                // its name is named after it), and so does each directory.
                secrets.extend(word.split('/').map(str::to_owned));
            }
            secrets.extend(b.env.iter().map(|(_, v)| v.clone()));
        }
        // Two letters are too common to hide (and say nothing of a command).
        secrets.retain(|s| s.chars().count() >= 3 && !names.contains(s.as_str()));
        secrets.extend(host.admin_token.iter().cloned());
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor {
            secrets,
            token_hashes: host.token_hashes.clone(),
        }
    }

    /// `text` with every secret replaced by [`HIDDEN`].
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), HIDDEN);
            }
        }
        self.hide_tokens(out)
    }

    /// `text` with every run of exactly [`TOKEN_HEX`] hex digits that is a
    /// worker's token replaced by [`HIDDEN`].
    fn hide_tokens(&self, text: String) -> String {
        if self.token_hashes.is_empty() || text.len() < TOKEN_HEX {
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
                    .token_hashes
                    .contains(&crate::server::token_hash(&text[start..i]))
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

    /// A record as the public may see it: no spec, and no secret in a seat's
    /// announced name, a fault's detail or an `info` line (a bot may have read a
    /// secret and written it there). The moves are the game's own notation.
    pub fn record(&self, rec: &mut GameRecord) {
        for seat in &mut rec.seats {
            seat.spec = HIDDEN.to_owned();
            seat.name = self.text(&seat.name);
        }
        for f in &mut rec.faults {
            f.detail = self.text(&f.detail);
        }
        for m in &mut rec.moves {
            for line in &mut m.info {
                *line = self.text(line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::BotStatus;

    fn bot(name: &str, spec: &str, env: &[(&str, &str)]) -> BotRow {
        BotRow {
            id: 1,
            name: name.into(),
            game: "ur".into(),
            spec: spec.into(),
            env: env.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            status: BotStatus::Active,
            status_reason: String::new(),
            start_failures: 0,
            version: 1,
            previous_id: None,
        }
    }

    #[test]
    fn specs_their_words_and_environment_values_are_hidden() {
        let r = Redactor::new(
            &[
                bot(
                    "typo",
                    "pyhton3 /srv/bots/nothing.py --key=s3cret",
                    &[("TOKEN", "abcd-1234")],
                ),
                bot("mybot", "mybot", &[]),
            ],
            &HostSecrets::default(),
        );
        let said = r
            .text(r#"cannot start "pyhton3 /srv/bots/nothing.py --key=s3cret": No such file; env abcd-1234; seat nothing.py"#);
        for secret in ["pyhton3", "nothing.py", "s3cret", "abcd-1234", "/srv/bots"] {
            assert!(!said.contains(secret), "{secret} in {said}");
        }
        assert!(said.contains("No such file"), "{said}");
        // A bot's public name is never hidden, though its spec is that word.
        assert_eq!(r.text("mybot timed out"), "mybot timed out");
    }

    #[test]
    fn the_hosts_tokens_are_hidden_wherever_a_bot_wrote_them() {
        let worker = "ab".repeat(32);
        let other = "cd".repeat(32);
        let host = HostSecrets {
            admin_token: Some("admin-secret-0123456789".into()),
            token_hashes: [crate::server::token_hash(&worker)].into(),
        };
        let r = Redactor::new(&[], &host);
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
}
