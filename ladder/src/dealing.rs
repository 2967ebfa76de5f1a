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
    /// all, and would see in one game the dice of the next; processes of
    /// strangers' on one kernel, which keeps state that outlives a process).
    Independent,
}

/// Whose bot processes a group seats, as far as its dealing goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Processes {
    /// Programs someone else wrote (uploads, or whatever a server's host
    /// registered): on one kernel, a process of one rotation can leave word for
    /// a process of the next (the page cache outlives both), so their group's
    /// rotations are dealt apart.
    Strangers,
    /// The user's own programs, run by the user (`--sandbox none`, or
    /// `--trusted-bots`): mirrored as the competition says.
    Trusted,
}

/// Whose processes a local run (`ladder tournament`, `ladder sprt`) starts:
/// trusted at `--sandbox none` (the user's own programs) or when the user says
/// so, else strangers'.
pub fn processes_of(sandbox: &referee::sandbox::Sandbox, trusted_bots: bool) -> Processes {
    if trusted_bots || sandbox.level == referee::sandbox::Level::None {
        Processes::Trusted
    } else {
        Processes::Strangers
    }
}

impl Seeding {
    /// How a group of a competition dealt as `competition` is dealt, given its
    /// bots' specs: independently when any bot is a gRPC server (a live channel
    /// between its games that no sandbox closes), or a process of strangers'
    /// (all of a group's rotations are played on one kernel: a worker plays a
    /// leased group whole); else as the competition says. A season's finals
    /// keep their committed terms (see docs/security.md, "Mirrored groups").
    pub fn of_group<'a>(
        competition: Seeding,
        specs: impl IntoIterator<Item = &'a str>,
        processes: Processes,
    ) -> Seeding {
        let mut apart = false;
        for spec in specs {
            match referee::spec::BotSpec::parse(spec) {
                Ok(referee::spec::BotSpec::Grpc { .. }) => apart = true,
                Ok(referee::spec::BotSpec::Process { .. }) => apart |= processes == Processes::Strangers,
                _ => {}
            }
        }
        if apart { Seeding::Independent } else { competition }
    }

    /// The seed rotation `rotation` of a group with seed `group` plays.
    pub fn game_seed(self, group: u64, rotation: usize) -> u64 {
        match self {
            Seeding::Mirrored => group,
            Seeding::Independent => engine::rotation_seed(group, rotation as u64),
        }
    }
}
