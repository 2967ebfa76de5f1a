//! A season: a ladder with a beginning and an end, and finals anyone can check.
//!
//! *Open*: the ladder plays as any ladder does, until the deadline. *Frozen*: at
//! the deadline each author's entry is fixed — the version they chose before it,
//! else their newest active one uploaded before it (a host's bot is its own
//! entry); versions uploaded later take no part. *Finals*: the top entries by the
//! ladder's standings play a schedule the host chose, in a competition of their
//! own whose every seed derives from a master seed committed to before the first
//! game ([`seal`]). *Closed*: the final standings are fixed and published, and the
//! master seed is revealed, so anyone can re-derive every seed, replay every game
//! and recompute the standings from the public download ([`verify`]).
//!
//! This module holds what does not depend on a transport: the plan, the
//! schedule, the public file's lines and the check; [`advance`] moves seasons on
//! by the store's clock.

pub mod seal;
pub mod verify;

use crate::dealing::Seeding;
use serde::{Deserialize, Serialize};

/// Where a season stands; it only moves forward ([`crate::app::seasons`] moves it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Submissions open: the ladder plays as any ladder does.
    Open,
    /// Past the deadline: each author's entry is fixed; the finals are being set.
    Frozen,
    /// The finals are being played among the top entries.
    Finals,
    /// Final standings fixed and published, the master seed revealed.
    Closed,
}

/// The finals' competition's name for a season's.
pub fn finals_name(season: &str) -> String {
    format!("{season}-finals")
}

/// The finals a host chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalsPlan {
    /// How many entries go to the finals (the top of the ladder's standings).
    pub top: u32,
    /// Groups each set of finalists plays a round (each group is one game per
    /// seat rotation).
    pub groups: u32,
    /// Another round follows while the top places' 95% intervals overlap…
    pub until_separated: bool,
    /// …as long as it would not pass this many games (0: no cap).
    pub max_games: u64,
}

impl FinalsPlan {
    /// Checks the plan against the competition's seats.
    ///
    /// # Errors
    /// Fewer finalists than seats, no groups, or a cap below one round.
    pub fn check(&self, seats: u32) -> Result<(), PlanError> {
        if self.top < seats.max(2) {
            return Err(PlanError(format!(
                "the finals need at least {} finalists for {seats}-seat games, not {}",
                seats.max(2),
                self.top
            )));
        }
        if self.top > MAX_FINALISTS {
            return Err(PlanError(format!(
                "at most {MAX_FINALISTS} finalists, not {}",
                self.top
            )));
        }
        if self.groups == 0 {
            return Err(PlanError(
                "the finals need at least one group per set of finalists".into(),
            ));
        }
        if self.until_separated && self.max_games == 0 {
            // Finalists that never separate (two that always draw) would play for ever.
            return Err(PlanError(
                "finals until separated need a cap on games (finals_max_games)".into(),
            ));
        }
        let round = self.round_games(self.top as usize, seats as usize);
        if self.max_games > 0 && self.max_games < round {
            return Err(PlanError(format!(
                "a cap of {} games is less than one round of the finals ({round} games)",
                self.max_games
            )));
        }
        Ok(())
    }

    /// Games in one round with `finalists` of `seats`-seat games.
    pub fn round_games(&self, finalists: usize, seats: usize) -> u64 {
        sets(finalists, seats).len() as u64 * u64::from(self.groups) * seats as u64
    }
}

/// Most finalists: every set of them plays, and their number grows fast.
pub const MAX_FINALISTS: u32 = 16;

/// Whether the finals stop after a round that left these standings with this
/// many games: one round unless the plan plays until separated; then once the
/// top three (or fewer) have intervals apart, or another round would pass the
/// cap. The server and `verify` both ask this, so a record with a round more or
/// less than the rule gives does not verify.
pub fn finals_stop(plan: &FinalsPlan, st: &FinalStandings, finalists: usize, seats: usize) -> bool {
    if !plan.until_separated {
        return true;
    }
    let room = plan.max_games == 0 || st.games + plan.round_games(finalists, seats) <= plan.max_games;
    !room || separated(st)
}

/// Whether the top places (the first three, or fewer) have intervals apart (a
/// separated finalist's bound counts as apart; an unrated one never does).
pub fn separated(st: &FinalStandings) -> bool {
    let top: Vec<_> = st.rows.iter().take(3).collect();
    top.windows(2).all(|w| match (w[0].elo, w[1].elo) {
        (Some(a), Some(b)) => a - w[0].ci95.unwrap_or(0.0) > b + w[1].ci95.unwrap_or(0.0),
        _ => false,
    })
}

/// Every set of `seats` of `n` finalists (indices into the finalists in seed
/// order), in lexicographic order: the order the finals' groups follow.
pub fn sets(n: usize, seats: usize) -> Vec<Vec<usize>> {
    fn walk(start: usize, n: usize, seats: usize, set: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if set.len() == seats {
            out.push(set.clone());
            return;
        }
        for i in start..n {
            set.push(i);
            walk(i + 1, n, seats, set, out);
            set.pop();
        }
    }
    let mut out = Vec::new();
    if seats > 0 && seats <= n {
        walk(0, n, seats, &mut Vec::with_capacity(seats), &mut out);
    }
    out
}

/// The finalists (indices in seed order) group `group_no` seats, seat 0 first,
/// in its rotation 0: group numbers run through every set, `groups` each, round
/// after round.
pub fn group_set(sets: &[Vec<usize>], groups: u32, group_no: u64) -> &[usize] {
    let per_round = sets.len() as u64 * u64::from(groups);
    let in_round = group_no % per_round.max(1);
    &sets[(in_round / u64::from(groups.max(1))) as usize]
}

/// The public record of a season's finals, a JSON object per line
/// (`/competitions/{name}/season.jsonl`): the season first, then every finals
/// game by group and rotation, then — once closed — the final standings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SeasonLine {
    /// What was promised before the finals, and the seed once revealed.
    Season(SeasonHeader),
    /// One finals game.
    Game(FinalsGame),
    /// The final standings as published at the close.
    Standings(FinalStandings),
}

/// The first line of the public record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeasonHeader {
    /// The season's competition.
    pub competition: String,
    /// The finals' competition.
    pub finals: String,
    /// Game id and options, seats per game.
    pub game: String,
    pub options: Vec<String>,
    pub seats: u32,
    /// How groups are dealt (a group with a remote finalist: each game its own seed).
    pub seeding: Seeding,
    /// The deadline, in milliseconds since the Unix epoch and in UTC words.
    pub deadline_ms: i64,
    pub deadline_utc: String,
    pub phase: Phase,
    pub plan: FinalsPlan,
    /// The finalists in seed order (their ladder ranks at the freeze): each
    /// version's name and the SHA-256 of the files it runs.
    pub finalists: Vec<seal::SealedEntry>,
    /// [`seal::entries_digest`] of the finalists, hex.
    pub entries_digest: String,
    /// [`seal::commitment`], published when the finals started.
    pub commitment: String,
    /// The master seed, hex: only once the season is closed.
    pub master_seed: Option<String>,
}

/// A finals game as the public record keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalsGame {
    /// The group's number in the finals (from 0).
    pub group: u64,
    /// How many times the group was dealt before the deal this game played.
    pub deal: u64,
    /// Whether the group's games share its seed or each has its own.
    pub seeding: Seeding,
    /// The game as the referee recorded it (`referee replay` plays it).
    pub record: referee::GameRecord,
}

/// The final standings as fixed at the close.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalStandings {
    /// Finals groups played.
    pub groups: u64,
    /// Finals games played.
    pub games: u64,
    pub rows: Vec<FinalRow>,
}

/// One finalist's line in the final standings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalRow {
    pub rank: u32,
    pub name: String,
    /// Elo to a tenth (a bound for a separated finalist; none when unrated).
    pub elo: Option<f64>,
    /// Half-width of the 95% interval to a tenth (none when separated or unrated).
    pub ci95: Option<f64>,
    /// `at_least` or `at_most` for a separated finalist.
    pub bound: Option<String>,
    pub games: u64,
    /// Points per game, percent, to a tenth.
    pub score: f64,
    /// Probability this finalist is stronger than the next, percent to a tenth
    /// (none on the last line, or when either is unrated).
    pub los_next: Option<f64>,
}

/// Rounds to a tenth, so two machines that differ in the last bits agree.
fn tenth(x: f64) -> Option<f64> {
    x.is_finite().then(|| (x * 10.0).round() / 10.0)
}

/// The final rows from standings fit on the finals' games alone.
pub fn final_rows(st: &rating::standings::Standings) -> Vec<FinalRow> {
    let rows = &st.rows;
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let los_next = rows.get(i + 1).and_then(|next| los(st, r, next));
            FinalRow {
                rank: r.rank as u32,
                name: r.name.clone(),
                elo: tenth(r.elo),
                ci95: if r.separated.is_some() {
                    None
                } else {
                    tenth(r.ci95)
                },
                bound: r.separated.map(|s| match s {
                    rating::separation::Separation::NeverLost => "at_least".to_owned(),
                    rating::separation::Separation::NeverWon => "at_most".to_owned(),
                }),
                games: r.games,
                score: tenth(r.score).unwrap_or(0.0),
                los_next,
            }
        })
        .collect()
}

/// LOS of `a` over `b`, percent: the fit's own for two-seat games; otherwise
/// from the two intervals as if independent (an approximation the page says).
fn los(
    st: &rating::standings::Standings,
    a: &rating::standings::Standing,
    b: &rating::standings::Standing,
) -> Option<f64> {
    if a.unrated || b.unrated {
        return None;
    }
    if let Some(p) = st.pairs.iter().find(|p| p.a == a.name && p.b == b.name) {
        return tenth(100.0 * p.los);
    }
    if let Some(p) = st.pairs.iter().find(|p| p.a == b.name && p.b == a.name) {
        return tenth(100.0 * (1.0 - p.los));
    }
    let se = ((a.ci95 / 1.959964).powi(2) + (b.ci95 / 1.959964).powi(2)).sqrt();
    if !se.is_finite() || se == 0.0 {
        return None;
    }
    tenth(100.0 * rating::elo::normal_cdf((a.elo - b.elo) / se))
}

/// A game's result for the standings: the finalists are numbered by seed order.
pub fn result_of(index: i64, game: &FinalsGame, finalists: &[usize]) -> rating::GameResult {
    let rec = &game.record;
    rating::GameResult {
        id: index,
        group_id: game.group as i64,
        rotation: rec.pairing.map_or(0, |p| p.rotation as i64),
        bots: finalists.iter().map(|&i| i as i64).collect(),
        ranks: rec.outcome.ranks.iter().map(|&r| u32::from(r)).collect(),
        forfeit: rec.termination == referee::Termination::Forfeit,
    }
}

/// Final standings from the finals' games (each with its finalists by seat,
/// as indices in seed order), fit exactly as [`verify`] fits them.
///
/// # Errors
/// The fit refused the results.
pub fn final_standings(
    finalists: &[String],
    seats: usize,
    games: &[(FinalsGame, Vec<usize>)],
) -> Result<FinalStandings, rating::standings::StandingsError> {
    let bots: Vec<(i64, String)> = finalists
        .iter()
        .enumerate()
        .map(|(i, n)| (i as i64, n.clone()))
        .collect();
    let results: Vec<rating::GameResult> = games
        .iter()
        .enumerate()
        .map(|(k, (g, by_seat))| result_of(k as i64, g, by_seat))
        .collect();
    let st = rating::standings::compute(&bots, &results, seats, None)?;
    let groups: std::collections::BTreeSet<u64> = games.iter().map(|(g, _)| g.group).collect();
    Ok(FinalStandings {
        groups: groups.len() as u64,
        games: games.len() as u64,
        rows: final_rows(&st),
    })
}

/// A time in milliseconds since the Unix epoch, in UTC words
/// (`2026-12-01 12:00:00 UTC`).
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A text that is not a UTC time [`parse_utc`] reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a UTC time: write 2026-12-01T12:00:00Z, 2026-12-01 12:00 or 2026-12-01")]
pub struct NotUtc(pub String);

/// A finals plan that cannot be played (the reason, for the host).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// A UTC time (`2026-12-01T12:00:00Z`, `2026-12-01 12:00`, or `2026-12-01`) in
/// milliseconds since the Unix epoch.
///
/// # Errors
/// Not such a time ([`NotUtc`]).
pub fn parse_utc(text: &str) -> Result<i64, NotUtc> {
    let bad = || NotUtc(text.to_owned());
    let t = text.trim().trim_end_matches('Z').trim_end_matches(" UTC");
    let (date, time) = t.split_once(['T', ' ']).unwrap_or((t, "00:00"));
    let num = |s: &str| s.parse::<i64>().map_err(|_| bad());
    let d: Vec<&str> = date.split('-').collect();
    let tm: Vec<&str> = time.split(':').collect();
    if d.len() != 3 || !(2..=3).contains(&tm.len()) {
        return Err(bad());
    }
    let (y, mo, da) = (num(d[0])?, num(d[1])?, num(d[2])?);
    let (h, mi) = (num(tm[0])?, num(tm[1])?);
    let s = tm.get(2).map_or(Ok(0), |s| num(s))?;
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || s > 59 {
        return Err(bad());
    }
    let days = days_from_civil(y, mo, da);
    if civil_from_days(days) != (y, mo, da) {
        return Err(bad());
    }
    Ok((days * 86_400 + h * 3600 + mi * 60 + s) * 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// well-known algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// "3 d 4 h", "2 h 5 min", "40 s": how long until a moment, for a countdown.
pub fn countdown(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    let (d, h, m) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60);
    if d > 0 {
        format!("{d} d {h} h")
    } else if h > 0 {
        format!("{h} h {m} min")
    } else if m > 0 {
        format!("{m} min {} s", s % 60)
    } else {
        format!("{s} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_every_combination_in_order_and_groups_walk_them() {
        assert_eq!(
            sets(4, 2),
            vec![
                vec![0, 1],
                vec![0, 2],
                vec![0, 3],
                vec![1, 2],
                vec![1, 3],
                vec![2, 3]
            ]
        );
        assert_eq!(sets(4, 4), vec![vec![0, 1, 2, 3]]);
        assert_eq!(sets(5, 3).len(), 10);
        assert!(sets(2, 3).is_empty());
        let s = sets(3, 2);
        let walked: Vec<&[usize]> = (0..8).map(|g| group_set(&s, 2, g)).collect();
        assert_eq!(
            walked,
            [
                &[0, 1][..],
                &[0, 1],
                &[0, 2],
                &[0, 2],
                &[1, 2],
                &[1, 2],
                &[0, 1],
                &[0, 1]
            ]
        );
    }

    #[test]
    fn a_plan_is_checked_against_the_seats() {
        let plan = FinalsPlan {
            top: 4,
            groups: 2,
            until_separated: true,
            max_games: 0,
        };
        assert!(
            FinalsPlan {
                until_separated: false,
                ..plan
            }
            .check(2)
            .is_ok()
        );
        assert_eq!(plan.round_games(4, 2), 6 * 2 * 2);
        assert!(
            FinalsPlan { top: 3, ..plan }
                .check(4)
                .unwrap_err()
                .0
                .contains("at least 4 finalists")
        );
        assert!(FinalsPlan { groups: 0, ..plan }.check(2).is_err());
        assert!(
            FinalsPlan {
                max_games: 10,
                ..plan
            }
            .check(2)
            .unwrap_err()
            .0
            .contains("less than one round")
        );
        assert!(plan.check(2).unwrap_err().0.contains("need a cap"));
        assert!(
            FinalsPlan {
                max_games: 100,
                ..plan
            }
            .check(2)
            .is_ok()
        );
    }

    #[test]
    fn utc_times_round_trip_and_bad_ones_are_named() {
        let t = parse_utc("2026-12-01T12:30:05Z").unwrap();
        assert_eq!(utc(t), "2026-12-01 12:30:05 UTC");
        assert_eq!(parse_utc("2026-12-01 12:30:05 UTC").unwrap(), t);
        assert_eq!(parse_utc("1970-01-01").unwrap(), 0);
        assert_eq!(parse_utc("2000-03-01").unwrap(), 951_868_800_000);
        for bad in ["2026-02-30", "tomorrow", "2026-13-01", "2026-12-01T25:00"] {
            assert_eq!(parse_utc(bad).unwrap_err(), NotUtc(bad.to_owned()), "{bad}");
            assert!(
                parse_utc(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("is not a UTC time"),
                "{bad}"
            );
        }
        assert_eq!(countdown(90_061_000), "1 d 1 h");
        assert_eq!(countdown(65_000), "1 min 5 s");
        assert_eq!(countdown(-5), "0 s");
    }
}
