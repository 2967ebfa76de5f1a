//! The engine versions that changed what a game does: a record made before such a
//! change may not replay on this engine, and the replay then names the engine
//! version it needs.

/// One change to the rules or the notation, as of an engine version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RulesChange {
    /// The first engine version with the change.
    pub since: &'static str,
    /// The game it changed (`*`: every game).
    pub game: &'static str,
    /// Only games with this option (`key=value`) changed; `None`: every game of
    /// that id.
    pub only_with: Option<&'static str>,
    /// What changed, for people.
    pub what: &'static str,
}

/// Every change so far, oldest first.
pub const RULES_CHANGES: &[RulesChange] = &[
    RulesChange {
        since: "0.2.0",
        game: "*",
        only_with: None,
        what: "a start position must be a state the rules can reach, and numbers and moves are read only as the engine writes them",
    },
    RulesChange {
        since: "0.2.0",
        game: "ur",
        only_with: Some("rules=finkel"),
        what: "a turn is all of a player's rolls (a rosette's extra roll no longer counts as a turn), so max_turns counts turns",
    },
    RulesChange {
        since: "0.2.0",
        game: "spartan",
        only_with: None,
        what: "both armies are asked at every reroll step, even one whose only move is to stand",
    },
    RulesChange {
        since: "0.2.0",
        game: "uptick",
        only_with: None,
        what: "when the game's own end and the max_turns cap come on the same move, the game's own end decides",
    },
];

/// The changes since engine version `made_by` (a record's `engine` field) that
/// may make game `id` with `options` (canonical `key=value`) play differently now.
/// An unreadable version counts as older than every change.
pub fn changes_since<S: AsRef<str>>(made_by: &str, id: &str, options: &[S]) -> Vec<&'static RulesChange> {
    let made = parse_version(made_by);
    RULES_CHANGES
        .iter()
        .filter(|c| c.game == id || c.game == "*")
        .filter(|c| made.is_none_or(|m| m < parse_version(c.since).unwrap_or_default()))
        .filter(|c| {
            c.only_with
                .is_none_or(|o| options.iter().any(|given| given.as_ref() == o))
        })
        .collect()
}

/// The last engine version before `change`: the one a record made before it needs.
pub fn version_before(change: &RulesChange) -> String {
    match parse_version(change.since) {
        Some((major, minor, _)) if minor > 0 => format!("{major}.{}.x", minor - 1),
        Some((major, _, _)) if major > 0 => format!("{}.x", major - 1),
        _ => "an earlier engine".to_owned(),
    }
}

fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let core = text.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
    let v = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_older_than_a_change_to_its_game_and_options_sees_it() {
        let game_changes = |v, id, o: &[&str]| {
            changes_since(v, id, o)
                .into_iter()
                .filter(|c| c.game != "*")
                .count()
        };
        assert_eq!(game_changes("0.1.0", "ur", &["rules=finkel"]), 1);
        assert_eq!(game_changes("0.1.0", "ur", &["rules=tablet"]), 0);
        assert_eq!(
            changes_since("0.1.0", "ur", &["rules=tablet"]).len(),
            1,
            "the notation changed for all"
        );
        assert!(changes_since("0.2.0", "ur", &["rules=finkel"]).is_empty());
        assert!(
            changes_since("0.10.0", "uptick", &[] as &[&str]).is_empty(),
            "0.10 is after 0.2"
        );
        assert_eq!(game_changes("0.1.9", "uptick", &[]), 1);
        assert_eq!(game_changes("garbage", "uptick", &[]), 1);
        assert_eq!(game_changes("0.1.0", "spartan", &[]), 1);
        assert_eq!(game_changes("0.1.0", "cuatto", &[]), 0);
        assert_eq!(version_before(&RULES_CHANGES[0]), "0.1.x");
    }
}
