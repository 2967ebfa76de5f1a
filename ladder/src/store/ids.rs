//! The store's keys, one type per table: a bot's key cannot be passed where a
//! group's is meant. Each is stored as the table's `BIGINT` key and shown (in
//! pages, logs and JSON) as that number.

use serde::{Deserialize, Serialize};

macro_rules! key {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize, sqlx::Type,
        )]
        #[serde(transparent)]
        #[sqlx(transparent)]
        pub struct $name(pub i64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}

key! {
    /// A bot version's key (`bots.id`): each update of a bot is a new one.
    BotId;
    /// A competition's key (`competitions.id`).
    CompetitionId;
    /// A mirrored group's key (`match_groups.id`).
    GroupId;
    /// A stored game's key (`games.id`).
    GameId;
    /// A worker's key (`workers.id`).
    WorkerId;
    /// An author's key (`authors.id`).
    AuthorId;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages, the API and downloads show a key as the bare number, as they did
    /// before keys had types, and read one back from a query the same way.
    #[test]
    fn a_key_is_its_number_in_json_and_text() {
        assert_eq!(serde_json::to_string(&GameId(7)).unwrap(), "7");
        assert_eq!(serde_json::from_str::<BotId>("42").unwrap(), BotId(42));
        assert!(serde_json::from_str::<GroupId>("\"42\"").is_err());
        assert_eq!(CompetitionId(-3).to_string(), "-3");
        assert_eq!(
            serde_json::to_string(&[(WorkerId(1), GroupId(2))]).unwrap(),
            "[[1,2]]"
        );
    }
}
