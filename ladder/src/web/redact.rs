//! What the public pages never show: a bot's command line and environment.
//!
//! Records name each seat's spec, and the referee's fault details quote it (`cannot
//! start "python3 bot.py"`), as do suspension reasons that repeat such a detail.
//! Every page passes that text through a [`Redactor`] built from all registered
//! bots.

use crate::store::BotRow;
use referee::GameRecord;
use std::collections::HashSet;

/// What stands where a secret was.
pub const HIDDEN: &str = "[hidden]";

/// Replaces every bot's spec, each word of it and each environment value.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Longest first, so a spec goes before the words inside it.
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor of `bots`' specs and environments.
    pub fn new(bots: &[BotRow]) -> Redactor {
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
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` with every secret replaced by [`HIDDEN`].
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), HIDDEN);
            }
        }
        out
    }

    /// A record as the public may see it: no spec, and no secret in a seat's
    /// announced name or in a fault's detail. The moves and `info` lines are the
    /// bots' own words and stay.
    pub fn record(&self, rec: &mut GameRecord) {
        for seat in &mut rec.seats {
            seat.spec = HIDDEN.to_owned();
            seat.name = self.text(&seat.name);
        }
        for f in &mut rec.faults {
            f.detail = self.text(&f.detail);
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
        let r = Redactor::new(&[
            bot(
                "typo",
                "pyhton3 /srv/bots/nothing.py --key=s3cret",
                &[("TOKEN", "abcd-1234")],
            ),
            bot("mybot", "mybot", &[]),
        ]);
        let said = r
            .text(r#"cannot start "pyhton3 /srv/bots/nothing.py --key=s3cret": No such file; env abcd-1234; seat nothing.py"#);
        for secret in ["pyhton3", "nothing.py", "s3cret", "abcd-1234", "/srv/bots"] {
            assert!(!said.contains(secret), "{secret} in {said}");
        }
        assert!(said.contains("No such file"), "{said}");
        // A bot's public name is never hidden, though its spec is that word.
        assert_eq!(r.text("mybot timed out"), "mybot timed out");
    }
}
