//! How a group's games are dealt from its seed: the same dice for every seat
//! in turn (mirrored), or a seed of each rotation's own. A leaf: the store keeps
//! it, the scheduler, the worker and a season's finals read it.

use serde::{Deserialize, Serialize};

/// How the games of a group are dealt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seeding {
    /// Every rotation plays the group's seed with the seats rotated: the same dice
    /// for every bot, which cancels most of the luck.
    #[default]
    Mirrored,
    /// Each rotation plays its own seed ([`engine::rotation_seed`]): for bots that
    /// cannot be held apart across the group's games (one gRPC server plays them
    /// all, and would see in one game the dice of the next).
    Independent,
}

impl Seeding {
    /// How a group of a competition dealt as `competition` is dealt, given its
    /// bots' specs: independently when any bot is a gRPC server (a live channel
    /// between its games that no sandbox closes).
    pub fn of_group<'a>(competition: Seeding, specs: impl IntoIterator<Item = &'a str>) -> Seeding {
        let remote = specs.into_iter().any(|spec| {
            matches!(
                referee::spec::BotSpec::parse(spec),
                Ok(referee::spec::BotSpec::Grpc { .. })
            )
        });
        if remote { Seeding::Independent } else { competition }
    }

    /// The seed rotation `rotation` of a group with seed `group` plays.
    pub fn game_seed(self, group: u64, rotation: usize) -> u64 {
        match self {
            Seeding::Mirrored => group,
            Seeding::Independent => engine::rotation_seed(group, rotation as u64),
        }
    }
}
