//! `ladder verify`: checks a closed season's public record from its text alone.
//!
//! In order: the revealed master seed and the finalists give the published
//! digest and commitment (and the one the entrant noted before the finals, if
//! given); every game is a rotation of the group its number places, seated with
//! the finalists that group's set names, running the files the commitment
//! binds, dealt the seed derived from the master seed, the group's number and
//! its deal; every game replays to its recorded end; every group of every round
//! played is whole; and the standings fit on those games are the ones
//! published. The first thing that differs is named.

use super::seal::{self, MasterSeed};
use super::{FinalStandings, FinalsGame, Phase, SeasonHeader, SeasonLine};
use std::collections::BTreeMap;

/// Most seats a record may claim (no game of the engine has more).
const MAX_SEATS: u32 = 16;

/// What a verified record holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub competition: String,
    pub groups: u64,
    pub games: u64,
    /// Groups dealt again (a lease that ran out or was given back): visible, as
    /// each such deal is a draw of new dice.
    pub redeals: u64,
    /// Deals beyond each group's first, in all, and the most any group had.
    pub extra_deals: u64,
    pub most_deals: u64,
    /// Games that ended by a seat's fault (a forfeit: the record's moves show
    /// only where it ended, not why).
    pub forfeits: u64,
    pub rounds: u64,
    pub winner: String,
}

/// Why a record does not verify: the first thing found that differs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("line {line}: {why}")]
    Unreadable { line: usize, why: String },
    #[error("the record is not of a closed season: {0}")]
    NotClosed(String),
    #[error("the commitment does not hold: {0}")]
    Commitment(String),
    #[error("game on line {line} (group {group}, rotation {rotation}): {why}")]
    Game {
        line: usize,
        group: u64,
        rotation: usize,
        why: String,
    },
    #[error("the finals are not whole: {0}")]
    Missing(String),
    #[error("the published standings differ from the games: {0}")]
    Standings(String),
    /// The games name a seat the fit cannot place (a game of no finalist).
    #[error("the finals' games cannot be fit: {0}")]
    Unfit(#[from] rating::standings::StandingsError),
}

/// Checks a season's public record (its JSON Lines text). `noted` is the
/// commitment the entrant saw on the page before the finals, if they kept it.
///
/// # Errors
/// The first thing that does not hold.
pub fn verify(text: &str, noted: Option<&str>) -> Result<Verified, VerifyError> {
    let (header, games, standings) = read(text)?;
    let sealed = check_commitment(&header, noted)?;
    let (n, seats) = (header.finalists.len(), header.seats as usize);
    let sets = super::sets(n, seats);
    if sets.is_empty() {
        return Err(VerifyError::Commitment(format!(
            "{n} finalists cannot fill {seats}-seat games"
        )));
    }
    let mut seen = GamesSeen::default();
    let mut games_of: Vec<(FinalsGame, Vec<usize>)> = Vec::with_capacity(games.len());
    for (line, g) in games {
        let by_seat = check_game(&header, &sealed, &sets, &mut seen, line, &g)?;
        games_of.push((g, by_seat));
    }
    let per_round = sets.len() as u64 * u64::from(header.plan.groups);
    let rounds = seen.whole_rounds(per_round)?;
    let Some(published) = standings else {
        return Err(VerifyError::Standings("the record has no standings line".into()));
    };
    let names: Vec<String> = header.finalists.iter().map(|e| e.name.clone()).collect();
    check_rounds(&header, &names, &games_of, rounds, per_round)?;
    let fit = super::final_standings(&names, seats, &games_of)?;
    compare(&fit, &published)?;
    let dealt = &seen.dealt;
    Ok(Verified {
        competition: header.competition,
        groups: fit.groups,
        games: fit.games,
        redeals: dealt.values().filter(|(d, _)| *d > 0).count() as u64,
        extra_deals: dealt.values().map(|(d, _)| d).sum(),
        most_deals: dealt.values().map(|(d, _)| d + 1).max().unwrap_or(0),
        forfeits: seen.forfeits,
        rounds,
        winner: fit.rows.first().map(|r| r.name.clone()).unwrap_or_default(),
    })
}

/// What a closed record commits to, once checked: the master seed and the
/// finalists' digest, from which every deal derives.
struct Sealed {
    master: MasterSeed,
    digest: [u8; 32],
}

/// That the record is of a closed season whose master seed, finalists and
/// terms make its commitment (and the one `noted`, if given), with finals of a
/// size the check can afford (a hostile record must not make it run away).
fn check_commitment(header: &SeasonHeader, noted: Option<&str>) -> Result<Sealed, VerifyError> {
    let Some(master_hex) = header.master_seed.as_deref() else {
        return Err(VerifyError::NotClosed(format!(
            "it is in its {} phase, and the master seed is revealed only at the close",
            header.phase
        )));
    };
    if header.phase != Phase::Closed {
        return Err(VerifyError::NotClosed(format!("its phase is {}", header.phase)));
    }
    let master = MasterSeed::from_hex(master_hex).map_err(|e| VerifyError::Commitment(e.to_string()))?;
    if header.finalists.len() > super::MAX_FINALISTS as usize || !(1..=MAX_SEATS).contains(&header.seats) {
        return Err(VerifyError::Commitment(format!(
            "{} finalists of {}-seat games: no finals are so made (at most {} finalists, {MAX_SEATS} seats)",
            header.finalists.len(),
            header.seats,
            super::MAX_FINALISTS
        )));
    }
    let digest = seal::entries_digest(&header.finalists);
    if hex::encode(digest) != header.entries_digest {
        return Err(VerifyError::Commitment(format!(
            "the finalists listed hash to {}, but the record's entries digest is {}",
            hex::encode(digest),
            header.entries_digest
        )));
    }
    let terms = seal::terms(
        &header.game,
        &header.options,
        header.seats,
        header.seeding.as_str(),
        &header.plan,
    );
    let made = seal::commitment(&master, &digest, &terms);
    if made != header.commitment {
        return Err(VerifyError::Commitment(format!(
            "the master seed, finalists and terms commit to {made}, but the record says {}",
            header.commitment
        )));
    }
    if let Some(noted) = noted
        && !noted.trim().eq_ignore_ascii_case(&made)
    {
        return Err(VerifyError::Commitment(format!(
            "the record commits to {made}, not to {} (the commitment you noted)",
            noted.trim()
        )));
    }
    Ok(Sealed { master, digest })
}

/// The games checked so far: each group's rotations seen, its one deal and
/// way of dealing (as its first game says), and the forfeits.
#[derive(Default)]
struct GamesSeen {
    rotations: BTreeMap<u64, Vec<bool>>,
    dealt: BTreeMap<u64, (u64, crate::dealing::Seeding)>,
    forfeits: u64,
}

impl GamesSeen {
    /// The rounds the games make, once every group of them is whole (every
    /// rotation of every group up to the last round's end); at least one.
    fn whole_rounds(&self, per_round: u64) -> Result<u64, VerifyError> {
        let groups = self.rotations.keys().next_back().map_or(0, |last| last + 1);
        let whole_rounds = groups.div_ceil(per_round.max(1)) * per_round;
        for group in 0..whole_rounds.max(per_round) {
            match self.rotations.get(&group) {
                None => {
                    return Err(VerifyError::Missing(format!(
                        "group {group} has no game (a round is {per_round} groups)"
                    )));
                }
                Some(r) => {
                    if let Some(rot) = r.iter().position(|s| !s) {
                        return Err(VerifyError::Missing(format!(
                            "group {group} rotation {rot} is missing"
                        )));
                    }
                }
            }
        }
        Ok(whole_rounds.max(per_round) / per_round.max(1))
    }
}

/// Checks the game on `line`: the finals' game and terms, the finalists the
/// schedule seats in its group and rotation, its group's one deal and the seed
/// it derives, its moves (replayed), and that it is there once. The finalists
/// by seat.
fn check_game(
    header: &SeasonHeader,
    sealed: &Sealed,
    sets: &[Vec<usize>],
    seen: &mut GamesSeen,
    line: usize,
    g: &FinalsGame,
) -> Result<Vec<usize>, VerifyError> {
    let seats = header.seats as usize;
    let rec = &g.record;
    let rotation = rec.pairing.map_or(usize::MAX, |p| p.rotation);
    let bad = |why: String| VerifyError::Game {
        line,
        group: g.group,
        rotation,
        why,
    };
    let pairing = rec
        .pairing
        .ok_or_else(|| bad("the record has no pairing".into()))?;
    if pairing.group != g.group || rotation >= seats {
        return Err(bad(format!(
            "its pairing says group {} rotation {}, not a rotation of group {} of {seats}-seat games",
            pairing.group, pairing.rotation, g.group
        )));
    }
    if rec.game != header.game || rec.options != header.options || rec.seats.len() != seats {
        return Err(bad(format!(
            "it is {} {:?} with {} seats, not the finals' {} {:?} with {seats}",
            rec.game,
            rec.options,
            rec.seats.len(),
            header.game,
            header.options
        )));
    }
    let set = super::group_set(sets, header.plan.groups, g.group);
    let by_seat = referee::seating::seated(set, rotation);
    for (s, &i) in by_seat.iter().enumerate() {
        let want = &header.finalists[i];
        let got = &rec.seats[s];
        if got.entrant.as_deref() != Some(want.name.as_str()) || got.artifact != want.artifact_sha256 {
            return Err(bad(format!(
                "seat {s} is {:?} running {:?}, but the schedule seats {} running {:?}",
                got.entrant, got.artifact, want.name, want.artifact_sha256
            )));
        }
    }
    // A group is dealt once for all its games, mirrored unless the terms
    // deal independently or a finalist in it plays over gRPC.
    let remote = set.iter().any(|&i| header.finalists[i].remote);
    let must = if remote {
        crate::dealing::Seeding::Independent
    } else {
        header.seeding
    };
    if g.seeding != must {
        return Err(bad(format!(
            "it was dealt {}, but this group is dealt {must}",
            g.seeding
        )));
    }
    let first = *seen.dealt.entry(g.group).or_insert((g.deal, g.seeding));
    if first != (g.deal, g.seeding) {
        return Err(bad(format!(
            "it was dealt deal {} {}, but another game of its group deal {} {}",
            g.deal, g.seeding, first.0, first.1
        )));
    }
    let group_seed = seal::group_seed(&sealed.master, &sealed.digest, g.group, g.deal);
    let seed = g.seeding.game_seed(group_seed, rotation);
    if rec.seed != seed {
        return Err(bad(format!(
            "it was dealt seed {}, but deal {} of the group derives seed {seed}",
            rec.seed, g.deal
        )));
    }
    referee::replay::replay(rec).map_err(|e| bad(format!("it does not replay: {e}")))?;
    let rotations = seen
        .rotations
        .entry(g.group)
        .or_insert_with(|| vec![false; seats]);
    if std::mem::replace(&mut rotations[rotation], true) {
        return Err(bad("the record holds this game twice".into()));
    }
    if rec.termination == referee::Termination::Forfeit {
        seen.forfeits += 1;
    }
    Ok(by_seat)
}

/// That the record holds as many rounds as the plan's rule gives, no more and
/// no fewer: after each round, the standings so far say whether the finals
/// stop there.
fn check_rounds(
    header: &SeasonHeader,
    names: &[String],
    games_of: &[(FinalsGame, Vec<usize>)],
    rounds: u64,
    per_round: u64,
) -> Result<(), VerifyError> {
    let (n, seats) = (header.finalists.len(), header.seats as usize);
    for r in 1..=rounds {
        let upto: Vec<(FinalsGame, Vec<usize>)> = games_of
            .iter()
            .filter(|(g, _)| g.group < r * per_round)
            .cloned()
            .collect();
        let so_far = super::final_standings(names, seats, &upto)?;
        let stop = super::finals_stop(&header.plan, &so_far, n, seats);
        if stop && r < rounds {
            return Err(VerifyError::Missing(format!(
                "the plan's rule stops the finals after round {r}, but the record holds {rounds} rounds"
            )));
        }
        if !stop && r == rounds {
            return Err(VerifyError::Missing(format!(
                "the plan's rule asks for a round after round {r}, and the record ends there"
            )));
        }
    }
    Ok(())
}

/// The record's lines: the season, its games (with their line numbers), its
/// standings.
type Lines = (SeasonHeader, Vec<(usize, FinalsGame)>, Option<FinalStandings>);

fn read(text: &str) -> Result<Lines, VerifyError> {
    let mut header = None;
    let mut games = Vec::new();
    let mut standings = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let unreadable = |why: String| VerifyError::Unreadable { line, why };
        let parsed: SeasonLine =
            serde_json::from_str(raw).map_err(|e| unreadable(format!("not a season line: {e}")))?;
        match parsed {
            SeasonLine::Season(h) if header.is_none() && line == 1 => header = Some(h),
            SeasonLine::Season(_) => return Err(unreadable("the season line comes first, once".into())),
            SeasonLine::Game(_) | SeasonLine::Standings(_) if header.is_none() => {
                return Err(unreadable("the season line comes first".into()));
            }
            SeasonLine::Game(_) if standings.is_some() => {
                return Err(unreadable("a game after the standings".into()));
            }
            SeasonLine::Game(g) => games.push((line, g)),
            SeasonLine::Standings(_) if standings.is_some() => {
                return Err(unreadable("the standings come once".into()));
            }
            SeasonLine::Standings(s) => standings = Some(s),
        }
    }
    let header = header.ok_or(VerifyError::Unreadable {
        line: 1,
        why: "the record is empty".into(),
    })?;
    Ok((header, games, standings))
}

fn compare(fit: &FinalStandings, published: &FinalStandings) -> Result<(), VerifyError> {
    let differ = |what: String| Err(VerifyError::Standings(what));
    if (fit.groups, fit.games) != (published.groups, published.games) {
        return differ(format!(
            "the games make {} groups and {} games, the standings say {} and {}",
            fit.groups, fit.games, published.groups, published.games
        ));
    }
    if fit.rows.len() != published.rows.len() {
        return differ(format!(
            "{} finalists fit, {} rows published",
            fit.rows.len(),
            published.rows.len()
        ));
    }
    // To a tenth either way: two machines' floating point may round a tenth apart.
    let near = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => (x - y).abs() <= 0.1 + 1e-9,
        (None, None) => true,
        _ => false,
    };
    for (a, b) in fit.rows.iter().zip(&published.rows) {
        let same = a.rank == b.rank
            && a.name == b.name
            && a.bound == b.bound
            && a.games == b.games
            && near(a.elo, b.elo)
            && near(a.ci95, b.ci95)
            && near(Some(a.score), Some(b.score))
            && near(a.los_next, b.los_next);
        if !same {
            return differ(format!(
                "rank {}: the games give {} Elo {:?} ±{:?} score {}%, the record says {} Elo {:?} ±{:?} score {}%",
                a.rank, a.name, a.elo, a.ci95, a.score, b.name, b.elo, b.ci95, b.score
            ));
        }
    }
    Ok(())
}
