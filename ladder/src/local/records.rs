//! Standings from game records alone, for `ladder ratings --from-records` and for
//! checking the server's standings: no store needed.

use rating::GameResult;
use rating::standings::{Standings, compute};
use std::collections::HashMap;

/// Standings computed from game records alone: entrants are the records' entrant
/// names (or the names the bots announced), mirrored groups their seed and group.
///
/// # Errors
/// A record the fit refuses.
pub fn standings_from_records(
    records: &[referee::GameRecord],
    anchor: Option<(&str, f64)>,
) -> Result<Standings, rating::standings::StandingsError> {
    let mut names: Vec<String> = Vec::new();
    let mut groups: HashMap<(u64, u64), i64> = HashMap::new();
    let mut results = Vec::with_capacity(records.len());
    for (i, rec) in records.iter().enumerate() {
        let bots = rec
            .seats
            .iter()
            .map(|s| {
                let name = s.entrant.as_ref().unwrap_or(&s.name);
                match names.iter().position(|n| n == name) {
                    Some(k) => k as i64,
                    None => {
                        names.push(name.clone());
                        names.len() as i64 - 1
                    }
                }
            })
            .collect();
        let next = groups.len() as i64;
        // Only a mirrored group's games pair up; each game dealt its own seed
        // stands alone.
        let group_id = match rec.pairing {
            Some(p) if p.mirrored => *groups.entry((rec.seed, p.group)).or_insert(next),
            _ => -(i as i64) - 1,
        };
        results.push(GameResult {
            id: i as i64 + 1,
            group_id,
            rotation: rec.pairing.map_or(0, |p| p.rotation as i64),
            bots,
            ranks: rec.outcome.ranks.iter().map(|&r| u32::from(r)).collect(),
            forfeit: rec.termination == referee::Termination::Forfeit,
        });
    }
    let seats = records.iter().map(|r| r.seats.len()).max().unwrap_or(2);
    let bots: Vec<(i64, String)> = names
        .into_iter()
        .enumerate()
        .map(|(i, n)| (i as i64, n))
        .collect();
    compute(&bots, &results, seats, anchor)
}
