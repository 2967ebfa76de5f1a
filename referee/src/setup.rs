//! What a game is set up from: the game, who sits where, where logs go.

use crate::record::Pairing;
use crate::spec::BotSpec;
use engine::{AnyGame, SetupError};
use std::path::PathBuf;

/// Which game to play.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameSetup {
    /// Game id.
    pub game: String,
    /// Options, `key=value` each.
    pub options: Vec<String>,
    /// Seed.
    pub seed: u64,
    /// A starting position in the game's notation.
    pub position: Option<String>,
    /// Place in a mirrored match.
    pub pairing: Option<Pairing>,
}

/// Who plays a seat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatSetup {
    /// How to reach the bot.
    pub spec: BotSpec,
    /// Bot options to set.
    pub options: Vec<(String, String)>,
    /// Environment variables for a bot process, on top of the fixed ones
    /// (`--bot-env N:KEY=VALUE`): the only way anything of the host's reaches it.
    pub env: Vec<(String, String)>,
    /// This seat's own time control, instead of the match's (`--bot-tc N:...`).
    pub tc: Option<crate::clock::TimeControl>,
    /// The public name the seat is shown by (a ladder's entrant), where its spec is
    /// the host's: then the record names the seat by it and carries neither the
    /// spec nor any fault's private part ([`crate::fault::Fault`]), and a bot that
    /// announces no name is named by it. `None`: the spec is the caller's own, and
    /// shows.
    pub shown_as: Option<String>,
    /// A program's own folder (an uploaded bot's): its command is resolved and
    /// run there rather than in the referee's directory.
    pub home: Option<crate::sandbox::Home>,
    /// What the files in `home` are (their archive's SHA-256), named in the
    /// record's seat.
    pub artifact: Option<String>,
    /// Where a gRPC seat may be dialled: anywhere for the host's own bots; only
    /// at public addresses when a stranger named it.
    pub dial: crate::dial::Dial,
}

impl SeatSetup {
    /// A seat with no options.
    pub fn new(spec: BotSpec) -> SeatSetup {
        SeatSetup {
            spec,
            options: Vec::new(),
            env: Vec::new(),
            tc: None,
            shown_as: None,
            home: None,
            artifact: None,
            dial: crate::dial::Dial::Anywhere,
        }
    }

    /// Whether the seat is a program the referee starts: the one kind of seat
    /// that could carry a rotation's dice into the next on this machine (see
    /// [`crate::sandbox::RotationGate`]).
    pub fn is_process(&self) -> bool {
        matches!(self.spec, BotSpec::Process { .. })
    }

    /// The name of a seat whose bot announced none: its public name, else its
    /// spec's short name.
    pub fn unannounced_name(&self) -> String {
        self.shown_as.clone().unwrap_or_else(|| self.spec.short_name())
    }
}

/// Where to put each bot's stderr log, if anywhere: `dir/<tag>seat<N>-<name>.stderr.log`
/// (`dir/<tag>seat<N>.stderr.log` without names).
#[derive(Debug, Clone, Default)]
pub struct LogPlace {
    /// Directory.
    pub dir: Option<PathBuf>,
    /// File name prefix for this game.
    pub tag: String,
    /// Each seat's bot, by seat, for the file names (so a host finds a bot's logs by
    /// its name); empty when the seats have no names to give.
    pub names: Vec<String>,
    /// How many bytes of the end of each seat's stderr to keep for its author
    /// ([`crate::record::SeatPrivateLog`]); 0 keeps none.
    pub author_tail: usize,
}

/// Creates the game a setup describes, for `seats` seats.
///
/// # Errors
/// Unknown game, bad options or position, or a seat count the game does not take.
pub fn create_game(setup: &GameSetup, seats: usize) -> Result<Box<dyn AnyGame>, SetupError> {
    match &setup.position {
        None => engine::new_game(&setup.game, &setup.options, Some(seats), setup.seed),
        Some(pos) => {
            let game = engine::game_from_position(&setup.game, &setup.options, pos, setup.seed)?;
            if game.seats() != seats {
                let info = game.info();
                return Err(SetupError::Seats {
                    game: info.id,
                    min: game.seats(),
                    max: game.seats(),
                    given: seats,
                });
            }
            Ok(game)
        }
    }
}

impl LogPlace {
    /// Where `seat`'s stderr goes in this game: its log file, and a new tail for its
    /// author when one is kept.
    pub fn stderr_to(&self, seat: usize) -> crate::transport::StderrTo {
        crate::transport::StderrTo {
            file: self.for_seat(seat),
            tail: (self.author_tail > 0).then(|| crate::transport::StderrTail::shared(self.author_tail)),
        }
    }

    /// The stderr log of `seat` in this game, if logs are kept.
    pub fn for_seat(&self, seat: usize) -> Option<PathBuf> {
        let name = match self.names.get(seat) {
            // Only what is safe in a file name: a name cannot reach another folder.
            Some(n) => format!(
                "-{}",
                n.chars()
                    .map(|c| if c.is_ascii_alphanumeric() || "._@+".contains(c) {
                        c
                    } else {
                        '_'
                    })
                    .collect::<String>()
                    .trim_start_matches('.')
            ),
            None => String::new(),
        };
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{}seat{seat}{name}.stderr.log", self.tag)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bot_name_cannot_lead_its_log_out_of_the_log_folder() {
        let logs = LogPlace {
            dir: Some(PathBuf::from("/logs")),
            tag: "main-g1r0-".into(),
            names: vec!["../../etc/passwd".into(), "nice@2".into(), ".hidden".into()],
            author_tail: 0,
        };
        for seat in 0..3 {
            let path = logs.for_seat(seat).unwrap();
            assert_eq!(path.parent(), Some(std::path::Path::new("/logs")), "{path:?}");
        }
        assert_eq!(
            logs.for_seat(0).unwrap(),
            PathBuf::from("/logs/main-g1r0-seat0-_.._etc_passwd.stderr.log")
        );
        assert_eq!(
            logs.for_seat(1).unwrap(),
            PathBuf::from("/logs/main-g1r0-seat1-nice@2.stderr.log")
        );
        // Without names, the old form.
        let plain = LogPlace {
            names: Vec::new(),
            ..logs
        };
        assert_eq!(
            plain.for_seat(2).unwrap(),
            PathBuf::from("/logs/main-g1r0-seat2.stderr.log")
        );
    }
}
