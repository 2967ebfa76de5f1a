//! Standings: ratings, scores and mirrored-pair statistics from stored results.

use crate::fit::{Anchor, Ratings, Results, Separation};
use crate::shape::GroupShape;
use crate::sprt::{EloEstimate, Pentanomial};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;

/// One game's result, as the standings count it: who sat where, in which places,
/// and whether a fault ended it. Groups are the unit that is independent: mirrored
/// games share their dice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameResult {
    /// Game key (named in errors).
    pub id: i64,
    /// Group key; games of one mirrored group share it.
    pub group_id: i64,
    /// Rotation within the group.
    pub rotation: i64,
    /// Bot ids by seat.
    pub bots: Vec<i64>,
    /// Places by seat (1 = first; ties share a place).
    pub ranks: Vec<u32>,
    /// A seat's fault ended the game (the faulted seat is placed last).
    pub forfeit: bool,
}

impl AsRef<GameResult> for GameResult {
    fn as_ref(&self) -> &GameResult {
        self
    }
}

/// One bot's line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standing {
    /// Place by rating, from 1.
    pub rank: usize,
    /// Bot name.
    pub name: String,
    /// Elo.
    pub elo: f64,
    /// Half-width of the 95% interval.
    pub ci95: f64,
    /// Games played.
    pub games: u64,
    /// Points per game, as a percentage (first 1, last 0, shared places split).
    pub score: f64,
    /// Games alone in first place.
    pub wins: u64,
    /// Games sharing first place.
    pub draws: u64,
    /// Other games.
    pub losses: u64,
    /// Average place.
    pub avg_rank: f64,
    /// Games this bot lost by a fault.
    pub forfeits: u64,
    /// Set when the results separate the bot from the rest (it never lost, or
    /// never won): `elo` is then a one-sided 97.5% bound and `ci95` is infinite
    /// (`null` in JSON).
    pub separated: Option<Separation>,
    /// Set when the bot played only bots that have no finite rating themselves
    /// (it lost only to a bot that never lost, say): nothing rates it against
    /// the field, so it has no `elo` (`null` in JSON) and ranks last.
    pub unrated: bool,
}

/// A rating and its interval as shown: `+120` and `45`, or for a separated bot its
/// bound (`≥ +471`) and a dash.
pub fn elo_cells(elo: f64, ci95: f64, separated: Option<Separation>) -> (String, String) {
    if elo.is_nan() {
        // Not rated against the field (see `Standing::unrated`).
        return ("unrated".into(), "—".into());
    }
    match separated {
        Some(Separation::NeverLost) => (format!("≥ {}", signed(elo)), "—".into()),
        Some(Separation::NeverWon) => (format!("≤ {}", signed(elo)), "—".into()),
        None => (format!("{elo:.0}"), format!("{ci95:.0}")),
    }
}

pub use crate::elo::signed;

/// Two bots' mirrored pairs (two-seat games).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairStanding {
    /// First bot.
    pub a: String,
    /// Second bot.
    pub b: String,
    /// Pairs scored 0, ½, 1, 1½, 2 points by `a`.
    pub pentanomial: Pentanomial,
    /// `a - b` from the pairs alone.
    pub pairs_elo: EloEstimate,
    /// `a - b` from the rating fit over all games, with its standard error.
    pub fit_elo: f64,
    /// Standard error of `fit_elo`; infinite (`null`) when either bot is separated,
    /// and `fit_elo` is then a bound (see `fit_bound`).
    pub fit_se: f64,
    /// For a separated bot: whether `fit_elo` is a lower bound (`"at_least"`) or an
    /// upper one (`"at_most"`), or no bound at all (`"none"`: both unbounded the same
    /// way).
    pub fit_bound: Option<&'static str>,
    /// Probability that `a` is stronger than `b`, from the fit: the confidence
    /// at which the one-sided bound on `a - b` reaches zero, as everywhere on the
    /// ladder. `null` when either bot is unrated.
    pub los: f64,
}

/// A competition's standings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standings {
    /// Seats per game.
    pub seats: usize,
    /// Games counted.
    pub games: u64,
    /// Bots by rating.
    pub rows: Vec<Standing>,
    /// Pairwise statistics (two-seat games only).
    pub pairs: Vec<PairStanding>,
    /// Where the scale is pinned, in words.
    pub anchor: String,
}

/// Why standings could not be computed from what was counted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StandingsError {
    /// A game (`what`: `game 12`, `a group of shape …`) names a bot that is
    /// not among the entrants.
    #[error("{what} names bot id {id}, not an entrant")]
    NotAnEntrant { what: String, id: i64 },
    /// The fit refused a game's result (seats and ranks that do not match).
    #[error("{what}: {source}")]
    Refused {
        what: String,
        #[source]
        source: crate::fit::ResultError,
    },
    /// The anchor names no entrant.
    #[error("anchor {0:?} is not an entrant")]
    UnknownAnchor(String),
}

/// Computes standings for `bots` (id, name) from results.
///
/// # Errors
/// A result naming a bot not in `bots`, or one the fit refuses.
pub fn compute<R: AsRef<GameResult>>(
    bots: &[(i64, String)],
    results: &[R],
    seats: usize,
    anchor: Option<(&str, f64)>,
) -> Result<Standings, StandingsError> {
    let mut counts = Counts::new(bots, seats);
    for r in results {
        counts.add_game(r.as_ref())?;
    }
    counts.standings(anchor)
}

/// What the standings count, added a game at a time or as finished groups
/// counted by their shape ([`GroupShape`]): both give the same standings, to
/// rounding.
#[derive(Debug)]
pub struct Counts<'a> {
    /// The entrants by name (then id): the order they were stored in changes
    /// nothing but the rounding.
    bots: Vec<(i64, String)>,
    entrants: std::marker::PhantomData<&'a ()>,
    seats: usize,
    index: HashMap<i64, usize>,
    fit_input: Results,
    rows: Vec<Standing>,
    points: Vec<f64>,
    rank_sum: Vec<u64>,
    /// group -> (bot a, half-points of a, games seen); a is the lower index.
    pair_groups: HashMap<i64, (usize, usize, usize, u32)>,
    /// Mirrored pairs of groups added by shape.
    counted_pairs: HashMap<(usize, usize), Pentanomial>,
    games: u64,
    players: Vec<u32>,
}

impl<'a> Counts<'a> {
    /// Nothing counted yet, among `bots` (id, name), of `seats`-seat games.
    pub fn new(bots: &'a [(i64, String)], seats: usize) -> Counts<'a> {
        let mut bots = bots.to_vec();
        bots.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        let rows = bots
            .iter()
            .map(|(_, name)| Standing {
                rank: 0,
                name: name.clone(),
                elo: 0.0,
                ci95: 0.0,
                games: 0,
                score: 0.0,
                wins: 0,
                draws: 0,
                losses: 0,
                avg_rank: 0.0,
                forfeits: 0,
                separated: None,
                unrated: false,
            })
            .collect();
        Counts {
            entrants: std::marker::PhantomData,
            seats,
            index: bots.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect(),
            fit_input: Results::new(bots.len()),
            rows,
            points: vec![0.0; bots.len()],
            rank_sum: vec![0; bots.len()],
            bots,
            pair_groups: HashMap::new(),
            counted_pairs: HashMap::new(),
            games: 0,
            players: Vec::with_capacity(seats),
        }
    }

    /// Bot ids as indices into `bots`.
    fn players_of(
        &self,
        ids: impl Iterator<Item = i64>,
        what: impl Fn() -> String,
    ) -> Result<Vec<u32>, StandingsError> {
        ids.map(|id| {
            self.index
                .get(&id)
                .map(|&i| i as u32)
                .ok_or_else(|| StandingsError::NotAnEntrant { what: what(), id })
        })
        .collect()
    }

    /// Counts one game.
    ///
    /// # Errors
    /// It names a bot not in `bots`, or the fit refuses it.
    pub fn add_game(&mut self, r: &GameResult) -> Result<(), StandingsError> {
        let mut players = std::mem::take(&mut self.players);
        players.clear();
        for id in &r.bots {
            let &i = self.index.get(id).ok_or_else(|| StandingsError::NotAnEntrant {
                what: format!("game {}", r.id),
                id: *id,
            })?;
            players.push(i as u32);
        }
        self.fit_input
            .add_in_group(r.group_id, &players, &r.ranks)
            .map_err(|source| StandingsError::Refused {
                what: format!("game {}", r.id),
                source,
            })?;
        self.count_places(&players, &r.ranks, r.forfeit, 1);
        if r.ranks.len() == 2 {
            let (a, b) = (
                players[0].min(players[1]) as usize,
                players[0].max(players[1]) as usize,
            );
            let half = Self::half_points_of(a, &players, &r.ranks);
            let e = self.pair_groups.entry(r.group_id).or_insert((a, b, 0, 0));
            e.2 += half;
            e.3 += 1;
        }
        self.players = players;
        Ok(())
    }

    /// Counts `count` finished groups of one shape.
    ///
    /// # Errors
    /// It names a bot not in `bots`, or the fit refuses one of its games.
    pub fn add_groups(&mut self, shape: &GroupShape, count: u64) -> Result<(), StandingsError> {
        let games: Vec<(Vec<u32>, Vec<u32>, bool)> = shape
            .games
            .iter()
            .map(|g| {
                let players = self.players_of(g.seats.iter().map(|s| s.0), || {
                    format!("a group of shape {shape}")
                })?;
                Ok((players, g.seats.iter().map(|s| s.1).collect(), g.forfeit))
            })
            .collect::<Result<_, StandingsError>>()?;
        let fit_games: Vec<(&[u32], &[u32])> = games.iter().map(|(p, r, _)| (&p[..], &r[..])).collect();
        self.fit_input
            .add_groups(&fit_games, count)
            .map_err(|source| StandingsError::Refused {
                what: format!("a group of shape {shape}"),
                source,
            })?;
        for (players, ranks, forfeit) in &games {
            self.count_places(players, ranks, *forfeit, count);
        }
        if let [(p0, r0, _), (p1, r1, _)] = &games[..]
            && r0.len() == 2
        {
            let (a, b) = (p0[0].min(p0[1]) as usize, p0[0].max(p0[1]) as usize);
            if (p1[0].min(p1[1]) as usize, p1[0].max(p1[1]) as usize) == (a, b) {
                let half = Self::half_points_of(a, p0, r0) + Self::half_points_of(a, p1, r1);
                self.counted_pairs.entry((a, b)).or_default().counts[half] += count;
            }
        }
        Ok(())
    }

    /// Half-points of player `a` in a two-seat game.
    fn half_points_of(a: usize, players: &[u32], ranks: &[u32]) -> usize {
        let a_seat = usize::from(players[0] as usize != a);
        match ranks[a_seat].cmp(&ranks[1 - a_seat]) {
            std::cmp::Ordering::Less => 2,
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Greater => 0,
        }
    }

    /// Counts a game's places `times` times.
    fn count_places(&mut self, players: &[u32], ranks: &[u32], forfeit: bool, times: u64) {
        let m = ranks.len();
        let firsts = ranks.iter().filter(|&&x| x == 1).count();
        self.games += times;
        for (s, &p) in players.iter().enumerate() {
            let p = p as usize;
            let rank = ranks[s];
            let row = &mut self.rows[p];
            row.games += times;
            match (rank, firsts) {
                (1, 1) => row.wins += times,
                (1, _) => row.draws += times,
                _ => row.losses += times,
            }
            self.rank_sum[p] += u64::from(rank) * times;
            // Places shared by a tie are split: the average of the places they cover.
            let tied = ranks.iter().filter(|&&x| x == rank).count();
            let place = f64::from(rank) + (tied as f64 - 1.0) / 2.0;
            self.points[p] += times as f64 * (m as f64 - place) / (m as f64 - 1.0);
            if forfeit && rank as usize == m {
                row.forfeits += times;
            }
        }
    }

    /// The standings of what was counted.
    ///
    /// # Errors
    /// An anchor that is not an entrant.
    pub fn standings(self, anchor: Option<(&str, f64)>) -> Result<Standings, StandingsError> {
        let Counts {
            bots,
            seats,
            fit_input,
            mut rows,
            points,
            rank_sum,
            pair_groups,
            counted_pairs,
            games,
            ..
        } = self;
        let anchor_spec = match anchor {
            None => (Anchor::Mean(0.0), "the average rating is 0".to_owned()),
            Some((name, elo)) => {
                let i = bots
                    .iter()
                    .position(|(_, n)| n == name)
                    .ok_or_else(|| StandingsError::UnknownAnchor(name.to_owned()))?;
                (Anchor::Player(i, elo), format!("{name} is fixed at {elo}"))
            }
        };
        let fit: Ratings = fit_input.fit(anchor_spec.0);
        let mut anchor_spec = anchor_spec;
        if let Anchor::Player(i, elo) = anchor_spec.0 {
            if fit.separated[i].is_some() {
                // A separated bot has no rating to fix: its bound is what is placed there.
                anchor_spec.1 = format!("the bound of {} is fixed at {elo}", bots[i].1);
            } else if fit.unconnected[i] {
                anchor_spec.1 = format!(
                    "{} is not rated against the field, so the average rating is {elo}",
                    bots[i].1
                );
            }
        }
        for (i, row) in rows.iter_mut().enumerate() {
            row.elo = fit.elo[i];
            row.ci95 = fit.interval95(i);
            row.separated = fit.separated[i];
            row.unrated = fit.unconnected[i];
            row.score = 100.0 * points[i] / row.games.max(1) as f64;
            row.avg_rank = rank_sum[i] as f64 / row.games.max(1) as f64;
        }
        let mut pentas: HashMap<(usize, usize), Pentanomial> = counted_pairs;
        for &(a, b, half, count) in pair_groups.values() {
            if count == 2 {
                pentas.entry((a, b)).or_default().add(half);
            }
        }
        let mut pair_keys: Vec<(usize, usize)> = pentas.keys().copied().collect();
        pair_keys.sort_unstable();
        let ranked = fit.order();
        let pairs = pair_keys
            .into_iter()
            .map(|(a, b)| {
                let p = pentas[&(a, b)];
                // Show the stronger side first.
                let place = |i: usize| ranked.iter().position(|&r| r == i);
                let (a, b, p) = if place(a) <= place(b) {
                    (a, b, p)
                } else {
                    (b, a, p.reversed())
                };
                let (d, se) = fit.difference(a, b);
                let side = |i: usize| match fit.separated[i] {
                    Some(Separation::NeverLost) => 1,
                    Some(Separation::NeverWon) => -1,
                    None => 0,
                };
                let fit_bound = match (se.is_finite(), side(a) - side(b)) {
                    (true, _) => None,
                    _ if fit.unconnected[a] || fit.unconnected[b] => Some("none"),
                    (false, s) if s > 0 => Some("at_least"),
                    (false, s) if s < 0 => Some("at_most"),
                    (false, _) => Some("none"),
                };
                PairStanding {
                    a: bots[a].1.clone(),
                    b: bots[b].1.clone(),
                    pentanomial: p,
                    pairs_elo: p.elo(),
                    fit_elo: d,
                    fit_se: se,
                    fit_bound,
                    los: fit.los(a, b),
                }
            })
            .collect();
        let mut order: Vec<usize> = fit.order();
        order.retain(|&i| rows[i].games > 0);
        let rows: Vec<Standing> = order
            .iter()
            .enumerate()
            .map(|(k, &i)| Standing {
                rank: k + 1,
                ..rows[i].clone()
            })
            .collect();
        Ok(Standings {
            seats,
            games,
            rows,
            pairs,
            anchor: anchor_spec.1,
        })
    }
}

impl Standings {
    /// The standings as a text table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let last = if self.seats == 2 { "W/D/L" } else { "avg.rank" };
        let _ = writeln!(
            s,
            "{:>4}  {:<24} {:>7} {:>6} {:>7} {:>7}  {}",
            "rank", "bot", "Elo", "±95%", "games", "score", last
        );
        for r in &self.rows {
            let tail = if self.seats == 2 {
                format!("{}/{}/{}", r.wins, r.draws, r.losses)
            } else {
                format!("{:.2}", r.avg_rank)
            };
            let (elo, ci) = elo_cells(r.elo, r.ci95, r.separated);
            let _ = writeln!(
                s,
                "{:>4}  {:<24} {:>7} {:>6} {:>7} {:>6.1}%  {}",
                r.rank, r.name, elo, ci, r.games, r.score, tail
            );
        }
        let _ = writeln!(
            s,
            "{} games; Elo is maximum likelihood ({}), ±95% intervals clustered by mirrored group",
            self.games, self.anchor
        );
        if self.rows.iter().any(|r| r.unrated) {
            let _ = writeln!(
                s,
                "unrated: not yet rated against the field (it played only bots with no finite rating themselves), ranked last"
            );
        }
        if self.rows.iter().any(|r| r.separated.is_some()) {
            let _ = writeln!(
                s,
                "≥ / ≤: never lost / never won against the rest, so no finite estimate: the exact 97.5% bound (what it did had a 2.5% chance there); ranked where it had an even chance, so that the order agrees with LOS"
            );
        }
        if !self.pairs.is_empty() {
            let _ = writeln!(
                s,
                "\n{:<36} {:>6}  {:<22} {:>14} {:>14} {:>6}",
                "mirrored pairs", "pairs", "pentanomial 0-½-1-1½-2", "Elo (pairs)", "Elo (fit)", "LOS"
            );
            for p in &self.pairs {
                let c = p.pentanomial.counts;
                let _ = writeln!(
                    s,
                    "{:<36} {:>6}  {:<22} {:>14} {:>14} {:>6}",
                    format!("{} vs {}", p.a, p.b),
                    p.pentanomial.pairs(),
                    format!("{}-{}-{}-{}-{}", c[0], c[1], c[2], c[3], c[4]),
                    match p.pentanomial.sweep().zip(p.pentanomial.sweep_bound()) {
                        // A clean sweep has no finite estimate: quote its bound, on
                        // the side of whoever swept (a short sweep's bound can be
                        // below zero: "≥ -15" after 5-0).
                        Some((true, b)) => format!("swept: ≥ {}", signed(b)),
                        Some((false, b)) => format!("swept: ≤ {}", signed(b)),
                        None => p.pairs_elo.text(),
                    },
                    match p.fit_bound {
                        None => format!("{} ± {:.0}", signed(p.fit_elo), 1.959964 * p.fit_se),
                        Some("at_least") => format!("≥ {}", signed(p.fit_elo)),
                        Some("at_most") => format!("≤ {}", signed(p.fit_elo)),
                        Some(_) => "unbounded".to_owned(),
                    },
                    if p.los.is_nan() {
                        "—".to_owned()
                    } else {
                        format!("{:.1}%", 100.0 * p.los)
                    }
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: i64, group: i64, bots: [i64; 2], ranks: [u32; 2]) -> GameResult {
        GameResult {
            id,
            group_id: group,
            rotation: id % 2,
            bots: bots.to_vec(),
            ranks: ranks.to_vec(),
            forfeit: false,
        }
    }

    /// Random groups of `seats`-seat games among `bots`: ties, faults, some
    /// groups unfinished (fewer games than seats).
    /// With `loser`, bot 100 never wins.
    fn random_groups(
        seed: u64,
        groups: usize,
        bots: usize,
        seats: usize,
        loser: bool,
    ) -> Vec<Vec<GameResult>> {
        use rand_chacha::ChaCha8Rng;
        use rand_chacha::rand_core::{Rng, SeedableRng};
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut id = 0;
        (0..groups as i64)
            .map(|group| {
                let mut pool: Vec<i64> = (0..bots as i64).map(|b| 100 + b).collect();
                let chosen: Vec<i64> = (0..seats)
                    .map(|_| pool.remove((rng.next_u32() as usize) % pool.len()))
                    .collect();
                // Bot 100 + b is stronger with b: places drawn by strength and chance.
                let games = if rng.next_u32() % 10 == 0 { 1 } else { seats };
                (0..games)
                    .map(|rotation| {
                        id += 1;
                        let bots = referee_seated(&chosen, rotation);
                        let mut keyed: Vec<(u32, usize)> = bots
                            .iter()
                            .enumerate()
                            .map(|(s, &b)| match (loser, b) {
                                (true, 100) => (0, s),
                                _ => (1 + (rng.next_u32() % 100) / 20 + (b as u32 - 100) / 3, s),
                            })
                            .collect();
                        keyed.sort_unstable_by(|x, y| y.cmp(x));
                        let mut ranks = vec![0u32; seats];
                        for (k, &(score, s)) in keyed.iter().enumerate() {
                            // A tie when the scores match.
                            let place = keyed[..k]
                                .iter()
                                .position(|e| e.0 == score)
                                .map_or(k + 1, |f| f + 1);
                            ranks[s] = place as u32;
                        }
                        GameResult {
                            id,
                            group_id: group,
                            rotation: rotation as i64,
                            bots,
                            ranks,
                            forfeit: rng.next_u32() % 30 == 0,
                        }
                    })
                    .collect()
            })
            .collect()
    }

    fn referee_seated(group: &[i64], rotation: usize) -> Vec<i64> {
        (0..group.len())
            .map(|s| group[(s + rotation) % group.len()])
            .collect()
    }

    fn assert_close(a: &Standings, b: &Standings) {
        assert_eq!(a.games, b.games);
        assert_eq!(a.rows.len(), b.rows.len());
        let close =
            |x: f64, y: f64| x == y || x.is_nan() && y.is_nan() || (x - y).abs() <= 1e-9 * x.abs().max(1.0);
        for (x, y) in a.rows.iter().zip(&b.rows) {
            assert_eq!(
                (
                    &x.name,
                    x.games,
                    x.wins,
                    x.draws,
                    x.losses,
                    x.forfeits,
                    x.separated
                ),
                (
                    &y.name,
                    y.games,
                    y.wins,
                    y.draws,
                    y.losses,
                    y.forfeits,
                    y.separated
                )
            );
            for (u, v) in [
                (x.elo, y.elo),
                (x.ci95, y.ci95),
                (x.score, y.score),
                (x.avg_rank, y.avg_rank),
            ] {
                assert!(close(u, v), "{} {u} against {v}", x.name);
            }
        }
        assert_eq!(a.pairs.len(), b.pairs.len());
        for (x, y) in a.pairs.iter().zip(&b.pairs) {
            assert_eq!((&x.a, &x.b, x.pentanomial), (&y.a, &y.b, y.pentanomial));
            assert!(
                close(x.fit_elo, y.fit_elo) && close(x.fit_se, y.fit_se),
                "{x:?} against {y:?}"
            );
        }
    }

    #[test]
    fn finished_groups_counted_by_shape_give_the_standings_of_their_games() {
        for (seed, seats, bots, loser) in [
            (1, 2, 6, false),
            (2, 3, 7, false),
            (3, 4, 5, false),
            (4, 2, 12, false),
            (5, 2, 6, true),
            (6, 3, 6, true),
        ] {
            let groups = random_groups(seed, 1500, bots, seats, loser);
            let names: Vec<(i64, String)> = (0..bots as i64).map(|b| (100 + b, format!("b{b}"))).collect();
            let all: Vec<&GameResult> = groups.iter().flatten().collect();
            let from_games = compute(&names, &all, seats, None).unwrap();
            // Finished groups by shape, counted; unfinished ones game by game.
            let mut shapes: HashMap<GroupShape, u64> = HashMap::new();
            let mut counts = Counts::new(&names, seats);
            for g in &groups {
                if g.len() == seats {
                    let shape = GroupShape::of(g.iter().map(|r| (&r.bots[..], &r.ranks[..], r.forfeit)));
                    *shapes.entry(shape).or_default() += 1;
                } else {
                    g.iter().for_each(|r| counts.add_game(r).unwrap());
                }
            }
            assert!(shapes.len() < groups.len(), "shapes repeat");
            for (shape, n) in &shapes {
                counts.add_groups(shape, *n).unwrap();
            }
            let from_shapes = counts.standings(None).unwrap();
            assert_close(&from_games, &from_shapes);
            if seats == 2 {
                assert!(!from_games.pairs.is_empty());
            }
            let separated = from_shapes.rows.iter().filter(|r| r.separated.is_some()).count();
            assert_eq!(separated, usize::from(loser), "{:?}", from_shapes.rows);
        }
    }

    /// Mirrored pairs among named bots with edges in them: a core of five that
    /// trade results at random, a group of two (top, mid) above it that only
    /// lost to each other, a bot (x) that never lost, one (y) that only lost to
    /// x, and one (z) that never won.
    fn edgy_pairs(rng: &mut rand_chacha::ChaCha8Rng) -> Vec<GameResult> {
        use rand_chacha::rand_core::Rng;
        let mut out = Vec::new();
        let mut group = 0;
        let mut pair = |a: i64, b: i64, a_points: u32, out: &mut Vec<GameResult>| {
            group += 1;
            let first = if a_points >= 2 { [1, 2] } else { [2, 1] };
            let second = if a_points == 4 { [2, 1] } else { [1, 2] };
            out.push(result(2 * group, group, [a, b], first));
            out.push(result(2 * group + 1, group, [b, a], second));
        };
        for _ in 0..60 {
            let a = 1 + i64::from(rng.next_u32() % 5);
            let b = 1 + (a + i64::from(rng.next_u32() % 4)) % 5;
            pair(a, b, [0, 2, 4][rng.next_u32() as usize % 3], &mut out);
        }
        for k in 0..(3 + rng.next_u32() % 4) {
            // Top wins the first: it is above mid, alone or with it.
            pair(
                10,
                11,
                if k == 0 {
                    4
                } else {
                    [4, 4, 0][rng.next_u32() as usize % 3]
                },
                &mut out,
            );
            pair(11, 1 + i64::from(rng.next_u32() % 5), 4, &mut out);
            pair(12, 1 + i64::from(rng.next_u32() % 5), 4, &mut out);
            pair(1 + i64::from(rng.next_u32() % 5), 14, 4, &mut out);
        }
        pair(12, 13, 4, &mut out);
        out
    }

    #[test]
    fn standings_do_not_depend_on_the_order_of_bots_or_of_groups() {
        use rand_chacha::ChaCha8Rng;
        use rand_chacha::rand_core::{Rng, SeedableRng};
        let mut rng = ChaCha8Rng::seed_from_u64(62);
        let names: Vec<(i64, String)> = [1, 2, 3, 4, 5, 10, 11, 12, 13, 14]
            .iter()
            .map(|&i| (i, format!("bot{i}")))
            .collect();
        fn shuffle<T>(v: &mut [T], rng: &mut ChaCha8Rng) {
            for i in (1..v.len()).rev() {
                v.swap(i, rng.next_u32() as usize % (i + 1));
            }
        }
        for round in 0..40 {
            let games = edgy_pairs(&mut rng);
            let base = compute(&names, &games, 2, None).unwrap();
            let sep = |n: &str| {
                base.rows
                    .iter()
                    .find(|r| r.name == n)
                    .map(|r| (r.separated, r.unrated))
            };
            assert_eq!(sep("bot10"), Some((Some(Separation::NeverLost), false)));
            assert_eq!(sep("bot13"), Some((None, true)));
            assert_eq!(sep("bot14"), Some((Some(Separation::NeverWon), false)));
            assert!(
                base.rows.iter().all(|r| r.unrated || r.elo.is_finite()),
                "{}",
                base.table()
            );
            for _ in 0..3 {
                let mut bots = names.clone();
                shuffle(&mut bots, &mut rng);
                // Groups in another order (each group's games together).
                let mut groups: Vec<Vec<GameResult>> = games.chunks(2).map(<[GameResult]>::to_vec).collect();
                shuffle(&mut groups, &mut rng);
                let shuffled: Vec<GameResult> = groups.into_iter().flatten().collect();
                let other = compute(&bots, &shuffled, 2, None).unwrap();
                assert_eq!(base.table(), other.table(), "round {round}");
                // The same to rounding: sums in another order.
                let same = |x: f64, y: f64| x == y || x.is_nan() && y.is_nan() || (x - y).abs() < 1e-6;
                for (x, y) in base.rows.iter().zip(&other.rows) {
                    assert_eq!(
                        (&x.name, x.separated, x.unrated),
                        (&y.name, y.separated, y.unrated)
                    );
                    assert!(same(x.elo, y.elo) && same(x.ci95, y.ci95), "{x:?} against {y:?}");
                }
                for (x, y) in base.pairs.iter().zip(&other.pairs) {
                    assert_eq!(
                        (&x.a, &x.b, x.pentanomial, x.fit_bound),
                        (&y.a, &y.b, y.pentanomial, y.fit_bound)
                    );
                    assert!(
                        same(x.fit_elo, y.fit_elo) && same(x.fit_se, y.fit_se) && same(x.los, y.los),
                        "{x:?} against {y:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_shape_naming_a_stranger_is_refused() {
        let names = vec![(1, "a".to_owned()), (2, "b".to_owned())];
        let mut counts = Counts::new(&names, 2);
        let shape: GroupShape = "1:1,3:2".parse().unwrap();
        let e = counts.add_groups(&shape, 4).unwrap_err();
        assert_eq!(
            e,
            StandingsError::NotAnEntrant {
                what: "a group of shape 1:1,3:2".into(),
                id: 3
            }
        );
        assert!(e.to_string().contains("bot id 3, not an entrant"), "{e}");
    }

    #[test]
    fn standings_count_games_scores_and_pentanomials() {
        let bots = vec![(10, "a".to_owned()), (20, "b".to_owned())];
        // Group 1: a wins both (2 points); group 2: split (1 point); group 3: a wins
        // one, draws one (1.5 points).
        let results = vec![
            result(1, 1, [10, 20], [1, 2]),
            result(2, 1, [20, 10], [2, 1]),
            result(3, 2, [10, 20], [1, 2]),
            result(4, 2, [20, 10], [1, 2]),
            result(5, 3, [10, 20], [1, 2]),
            result(6, 3, [20, 10], [1, 1]),
        ];
        let st = compute(&bots, &results, 2, None).unwrap();
        assert_eq!(st.rows[0].name, "a");
        assert_eq!((st.rows[0].wins, st.rows[0].draws, st.rows[0].losses), (4, 1, 1));
        assert!((st.rows[0].score - 100.0 * 4.5 / 6.0).abs() < 1e-9);
        assert!((st.rows[0].elo + st.rows[1].elo).abs() < 1e-6);
        assert_eq!(st.pairs.len(), 1);
        assert_eq!(st.pairs[0].pentanomial.counts, [0, 0, 1, 1, 1]);
        assert!(st.table().contains("0-0-1-1-1"));
        let err = compute(&bots[..1], &results, 2, None).unwrap_err();
        assert!(
            matches!(err, StandingsError::NotAnEntrant { id: 20, .. }),
            "{err}"
        );
        let err = compute(&bots, &results, 2, Some(("zed", 1500.0))).unwrap_err();
        assert_eq!(err, StandingsError::UnknownAnchor("zed".into()));
    }

    /// Bots a (id 10) and b (20).
    fn two_bots() -> Vec<(i64, String)> {
        vec![(10, "a".to_owned()), (20, "b".to_owned())]
    }

    /// `groups` mirrored pairs of a and b: a wins the first game of each, and the
    /// second ends with `second` (seats b, a).
    fn pairs_of_two(groups: i64, second: [u32; 2]) -> Vec<GameResult> {
        (0..groups)
            .flat_map(|g| {
                [
                    result(2 * g, g, [10, 20], [1, 2]),
                    result(2 * g + 1, g, [20, 10], second),
                ]
            })
            .collect()
    }

    pub(super) fn sweep(groups: i64) -> Standings {
        compute(&two_bots(), &pairs_of_two(groups, [2, 1]), 2, None).unwrap()
    }

    #[test]
    fn a_sweep_reads_as_bounds_on_the_side_of_whoever_swept() {
        let st = sweep(100);
        let table = st.table();
        assert_eq!(st.rows[0].name, "a");
        assert_eq!(st.rows[1].separated, Some(Separation::NeverWon));
        assert!(st.rows[1].ci95.is_infinite());
        let p = &st.pairs[0];
        assert_eq!((p.a.as_str(), p.pentanomial.counts), ("a", [0, 0, 0, 0, 100]));
        assert!(p.los > 0.999, "{}", p.los);
        assert_eq!(p.fit_bound, Some("at_least"));
        assert!(table.contains("swept: ≥ +"), "{table}");
        assert!(table.contains(&format!("≥ {:+.0}", p.fit_elo)), "{table}");
        assert!(table.contains("≤ -"), "{table}");
        assert!(!table.contains(" ± 1"), "no prior-sized interval: {table}");
        // Five straight pairs: the exact bound is below zero, still a lower bound.
        let table = sweep(5).table();
        assert!(table.contains("swept: ≥ -15"), "{table}");
        let json = serde_json::to_value(sweep(5)).unwrap();
        assert_eq!(json["rows"][1]["separated"], "never_won");
        assert!(json["rows"][1]["ci95"].is_null());
    }

    #[test]
    fn a_sweep_shows_one_bound_in_every_column() {
        // 74 mirrored pairs, every one won by a: 0.025^(1/74) per pair, +516.6 Elo,
        // both from the pairs and from the fit.
        let st = sweep(74);
        let p = &st.pairs[0];
        let pairs_bound = p.pentanomial.sweep_bound().unwrap();
        assert!((pairs_bound - 516.6).abs() < 0.1, "{pairs_bound}");
        assert!(
            (p.fit_elo - pairs_bound).abs() < 0.05,
            "fit {} pairs {pairs_bound}",
            p.fit_elo
        );
        let table = st.table();
        assert!(
            table.contains("swept: ≥ +517") && table.contains("≥ +517"),
            "{table}"
        );
        assert!(table.contains("≤ -517"), "{table}");
    }

    #[test]
    fn a_separated_bot_can_be_the_anchor() {
        let st = compute(&two_bots(), &pairs_of_two(20, [2, 1]), 2, Some(("b", 1500.0))).unwrap();
        let by_name = |n: &str| st.rows.iter().find(|r| r.name == n).unwrap().clone();
        // b lost 20 pairs: its bound sits at 1500, a 277 above it.
        assert_eq!(by_name("b").separated, Some(Separation::NeverWon));
        assert!((by_name("b").elo - 1500.0).abs() < 1e-6);
        assert!((by_name("a").elo - 1777.4).abs() < 0.1, "{}", st.table());
        assert!(
            st.table().contains("the bound of b is fixed at 1500"),
            "{}",
            st.table()
        );
    }

    #[test]
    fn pairs_that_all_split_show_their_exact_range() {
        let st = compute(&two_bots(), &pairs_of_two(17, [1, 2]), 2, None).unwrap();
        let table = st.table();
        assert!(table.contains("+0 ± 69"), "{table}");
        assert!(!table.contains("± 0 "), "{table}");
        // The fit cannot measure how alike such groups are: no zero-width interval.
        assert!(st.rows.iter().all(|r| r.ci95 > 50.0), "{table}");
    }

    #[test]
    fn shared_places_split_the_points() {
        let bots: Vec<(i64, String)> = (0..3).map(|i| (i, format!("p{i}"))).collect();
        let r = GameResult {
            id: 1,
            group_id: 1,
            rotation: 0,
            bots: vec![0, 1, 2],
            ranks: vec![1, 1, 3],
            forfeit: false,
        };
        let st = compute(&bots, &[r], 3, Some(("p2", 0.0))).unwrap();
        let by_name = |n: &str| st.rows.iter().find(|r| r.name == n).unwrap().clone();
        // Two share places 1-2: each gets (1 + 0.5)/2 = 0.75 of a point.
        assert!((by_name("p0").score - 75.0).abs() < 1e-9);
        assert!((by_name("p2").score - 0.0).abs() < 1e-9);
        assert_eq!(by_name("p0").draws, 1);
        assert!(by_name("p2").elo.abs() < 1e-9);
    }
}
