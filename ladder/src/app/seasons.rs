//! Moving seasons on, by the store's clock: freeze at the deadline, start the
//! finals, add rounds, close. The server calls [`advance`] every second; each
//! step is one transaction guarded by the phase it expects, so it is safe to
//! call from several servers and after any crash.

use crate::season::seal::{self, MasterSeed, SealedEntry};
use crate::season::{FinalStandings, FinalsGame, FinalsPlan, Phase, finals_name};
use crate::store::{
    AuthorId, BotId, BotRow, Candidate, CompetitionFormat, CompetitionRow, GroupStatus, NewCompetition,
    SeasonRow, SeededGroup, Store, StoreError,
};
use std::collections::HashMap;

/// What one call of [`advance`] did, by competition name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Advanced {
    pub frozen: Vec<String>,
    pub finals_started: Vec<String>,
    pub rounds_added: Vec<String>,
    pub closed: Vec<String>,
    /// Past their deadline, waiting for versions uploaded before it to finish
    /// their build and check.
    pub waiting: Vec<String>,
}

/// Why a season could not move on.
#[derive(Debug, thiserror::Error)]
pub enum SeasonError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("season {season}: {why}")]
    Broken { season: String, why: String },
}

/// Why a season's finals could not move on (the caller names the season).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FinalsError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// What the store holds does not add up: the reason.
    #[error("{0}")]
    Broken(String),
}

impl From<String> for FinalsError {
    fn from(why: String) -> FinalsError {
        FinalsError::Broken(why)
    }
}

impl From<&str> for FinalsError {
    fn from(why: &str) -> FinalsError {
        FinalsError::Broken(why.to_owned())
    }
}

impl From<rating::standings::StandingsError> for FinalsError {
    fn from(e: rating::standings::StandingsError) -> FinalsError {
        FinalsError::Broken(format!("the standings: {e}"))
    }
}

impl From<serde_json::Error> for FinalsError {
    fn from(e: serde_json::Error) -> FinalsError {
        FinalsError::Broken(format!("the standings as JSON: {e}"))
    }
}

/// Moves every season on as far as the store's clock and the finals' games
/// allow.
///
/// # Errors
/// The store; a season whose stored state does not add up (named).
pub async fn advance(store: &Store) -> Result<Advanced, SeasonError> {
    let mut done = Advanced::default();
    let mut first_error = None;
    for season in store.seasons().seasons_in_play().await? {
        // One season that cannot move on holds up no other.
        if let Err(e) = advance_one(store, season, &mut done).await {
            tracing::warn!("a season could not move on (tried again): {e}");
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        Some(e) if done == Advanced::default() => Err(e),
        _ => Ok(done),
    }
}

/// How long after the deadline the freeze waits for versions uploaded by it to
/// finish their build and check; one still building then is not an entry (a
/// build no worker takes must not hold a season open).
pub const BUILD_WAIT_MS: i64 = 3_600_000;

async fn advance_one(store: &Store, season: SeasonRow, done: &mut Advanced) -> Result<(), SeasonError> {
    {
        let Some(c) = store
            .competitions()
            .competition_by_id(season.competition_id)
            .await?
        else {
            return Ok(());
        };
        let broken = |why: String| SeasonError::Broken {
            season: c.name.clone(),
            why,
        };
        let failed = |e: FinalsError| match e {
            FinalsError::Store(e) => SeasonError::Store(e),
            FinalsError::Broken(why) => broken(why),
        };
        let mut phase = season.phase;
        if phase == Phase::Open {
            if store.now_ms() < season.deadline_ms {
                return Ok(());
            }
            match freeze(store, &c, &season).await? {
                Some(true) => done.frozen.push(c.name.clone()),
                Some(false) => {}
                None => {
                    done.waiting.push(c.name.clone());
                    return Ok(());
                }
            }
            phase = Phase::Frozen;
        }
        if phase == Phase::Frozen {
            if start_finals(store, &c, &season).await.map_err(failed)? {
                done.finals_started.push(c.name.clone());
            }
            return Ok(());
        }
        if phase == Phase::Finals {
            let season = store
                .seasons()
                .season(c.id)
                .await?
                .ok_or_else(|| broken("vanished".into()))?;
            match finals_step(store, &c, &season).await.map_err(failed)? {
                Step::Playing => {}
                Step::RoundAdded => done.rounds_added.push(c.name.clone()),
                Step::Closed => done.closed.push(c.name.clone()),
            }
        }
    }
    Ok(())
}

/// Fixes the entries: per author, the version they chose, else their newest
/// version uploaded by the deadline that passed its check (in play, or
/// superseded by one uploaded after the deadline); each host bot alone. None while a
/// version uploaded by the deadline is still being built or checked.
async fn freeze(store: &Store, c: &CompetitionRow, season: &SeasonRow) -> Result<Option<bool>, SeasonError> {
    let (candidates, building) = store.seasons().entry_candidates(c, season.deadline_ms).await?;
    if building > 0 && store.now_ms() < season.deadline_ms + BUILD_WAIT_MS {
        return Ok(None);
    }
    let choices = store.seasons().entry_choices(c.id).await?;
    Ok(Some(
        store
            .seasons()
            .freeze_season(c.id, &entries(&candidates, &choices))
            .await?,
    ))
}

/// Each author's entry among `candidates`: the version they chose if it is
/// still a candidate (one the author or host took out of play since leaves them
/// their newest), else their newest; each host bot is its own entry. Sorted.
/// The one rule, for the freeze and for the page before it.
pub fn entries(candidates: &[Candidate], choices: &HashMap<AuthorId, BotId>) -> Vec<BotId> {
    let mut newest: HashMap<AuthorId, BotId> = HashMap::new();
    let mut entries = Vec::new();
    for cand in candidates {
        match cand.author {
            None => entries.push(cand.bot),
            Some(a) => {
                let n = newest.entry(a).or_insert(cand.bot);
                *n = (*n).max(cand.bot);
            }
        }
    }
    for (author, newest) in newest {
        let chosen = choices
            .get(&author)
            .filter(|b| candidates.iter().any(|c| c.bot == **b))
            .copied();
        entries.push(chosen.unwrap_or(newest));
    }
    entries.sort();
    entries
}

/// Each entry of season `season` of `c` as it stands: the ones fixed at the
/// freeze, or before it what the freeze would fix now; with the seed number of
/// each finalist.
///
/// # Errors
/// The store.
pub async fn current_entries(
    store: &Store,
    c: &CompetitionRow,
    season: &SeasonRow,
) -> Result<Vec<(BotId, Option<u32>)>, StoreError> {
    if season.phase != Phase::Open {
        return store.seasons().season_entries(c.id).await;
    }
    let (candidates, _) = store.seasons().entry_candidates(c, season.deadline_ms).await?;
    let choices = store.seasons().entry_choices(c.id).await?;
    Ok(entries(&candidates, &choices)
        .into_iter()
        .map(|b| (b, None))
        .collect())
}

/// A finalist as the commitment binds it.
fn sealed(b: &BotRow) -> SealedEntry {
    SealedEntry {
        name: b.name.clone(),
        artifact_sha256: b.artifact_sha256.clone(),
        remote: matches!(
            referee::spec::BotSpec::parse(&b.spec),
            Ok(referee::spec::BotSpec::Grpc { .. })
        ),
    }
}

/// Picks the finalists by the ladder's standings and starts the finals.
async fn start_finals(store: &Store, c: &CompetitionRow, season: &SeasonRow) -> Result<bool, FinalsError> {
    let entries: Vec<BotId> = store
        .seasons()
        .season_entries(c.id)
        .await?
        .into_iter()
        .map(|(b, _)| b)
        .collect();
    let bots = bots_by_id(store).await?;
    // The ladder's standings at the freeze place the entries; one with no
    // rated games goes after every rated one, by name.
    let ladder: Vec<(i64, String)> = store
        .competitions()
        .entrants(c.id)
        .await?
        .into_iter()
        .map(|b| (b.id.0, b.name))
        .collect();
    let tallied = store.shapes().tallied(c.id).await?;
    let seats = c.seats as usize;
    let st = tallied.standings(&ladder, seats, None)?;
    let place: HashMap<&str, (bool, usize)> = st
        .rows
        .iter()
        .map(|r| (r.name.as_str(), (r.unrated || r.games == 0, r.rank)))
        .collect();
    let mut ranked: Vec<&BotRow> = entries.iter().filter_map(|id| bots.get(id)).collect();
    ranked.sort_by_key(|b| {
        (
            place.get(b.name.as_str()).copied().unwrap_or((true, usize::MAX)),
            b.name.clone(),
        )
    });
    let k = (season.plan.top as usize).min(ranked.len());
    if k < seats {
        // Too few entries for a single game: the season closes with none.
        let empty = serde_json::to_string(&FinalStandings {
            groups: 0,
            games: 0,
            rows: Vec::new(),
        })?;
        tracing::warn!(season = %c.name, entries = ranked.len(), seats, "too few entries for the finals; closing");
        store
            .seasons()
            .close_season(c.id, None, &empty, Phase::Frozen)
            .await?;
        return Ok(false);
    }
    let finalists = &ranked[..k];
    let sealed: Vec<SealedEntry> = finalists.iter().map(|b| sealed(b)).collect();
    let master = MasterSeed::draw().map_err(|e| format!("the random source failed: {e}"))?;
    let terms = seal::terms(
        &c.game,
        &c.options,
        c.seats as u32,
        c.seeding.as_str(),
        &season.plan,
    );
    let seal = seal::Seal::new(master, &sealed, &terms);
    let ids: Vec<BotId> = finalists.iter().map(|b| b.id).collect();
    let groups = round(&seal.master, &seal.digest, &season.plan, &ids, seats, 0);
    let finals = NewCompetition {
        name: finals_name(&c.name),
        game: c.game.clone(),
        options: c.options.clone(),
        seats: c.seats,
        format: CompetitionFormat::Finals,
        // Unused: every finals group's seed derives from the master seed.
        seed: 0,
        max_games: 0,
        time: c.time,
        config: format!("finals of {}", c.name),
        seeding: c.seeding,
    };
    Ok(store
        .seasons()
        .start_finals(c.id, &finals, &ids, &seal, &groups)
        .await?)
}

/// Round `r`'s groups: every set of the finalists, `plan.groups` each.
fn round(
    master: &MasterSeed,
    digest: &[u8; 32],
    plan: &FinalsPlan,
    finalists: &[BotId],
    seats: usize,
    r: u64,
) -> Vec<SeededGroup> {
    let sets = crate::season::sets(finalists.len(), seats);
    let per_round = sets.len() as u64 * u64::from(plan.groups);
    (r * per_round..(r + 1) * per_round)
        .map(|no| SeededGroup {
            group_no: no as i64,
            bots: crate::season::group_set(&sets, plan.groups, no)
                .iter()
                .map(|&i| finalists[i])
                .collect(),
            seed: seal::group_seed(master, digest, no, 0),
        })
        .collect()
}

enum Step {
    Playing,
    RoundAdded,
    Closed,
}

/// Once every finals group is played: another round if the plan asks and
/// allows it, else the close.
async fn finals_step(store: &Store, c: &CompetitionRow, season: &SeasonRow) -> Result<Step, FinalsError> {
    let finals_id = season
        .finals_id
        .ok_or("in its finals without a finals competition")?;
    let groups = store.groups().of_competition(finals_id).await?;
    if groups.iter().any(|g| g.status != GroupStatus::Done) {
        return Ok(Step::Playing);
    }
    let finalists = finalists_in_seed_order(store, c).await?;
    let standings = standings_of(store, finals_id, &finalists, c.seats as usize).await?;
    let plan = season.plan;
    let seats = c.seats as usize;
    let next_round = groups.len() as u64
        / (crate::season::sets(finalists.len(), seats).len() as u64 * u64::from(plan.groups)).max(1);
    if !crate::season::finals_stop(&plan, &standings, finalists.len(), seats) {
        let master = season
            .master_seed
            .clone()
            .ok_or("a season in its finals without a master seed")?;
        let digest = seal::digest_from_hex(season.entries_digest.as_deref().unwrap_or_default())
            .map_err(|e| FinalsError::Broken(format!("its entries digest: {e}")))?;
        let ids: Vec<BotId> = finalists.iter().map(|(id, _)| *id).collect();
        let had = groups.len() as u64;
        let groups = round(&master, &digest, &plan, &ids, seats, next_round);
        store.seasons().add_finals_round(finals_id, had, &groups).await?;
        return Ok(Step::RoundAdded);
    }
    let json = serde_json::to_string(&standings)?;
    if !store
        .seasons()
        .close_season(c.id, Some(finals_id), &json, Phase::Finals)
        .await?
    {
        // Another server closed it, or a group came back unplayed meanwhile.
        return Ok(Step::Playing);
    }
    Ok(Step::Closed)
}

/// Every bot version, by key.
async fn bots_by_id(store: &Store) -> Result<HashMap<BotId, BotRow>, FinalsError> {
    let bots = store.bots().all().await?;
    Ok(bots.into_iter().map(|b| (b.id, b)).collect())
}

/// The finalists, in seed order (the order the commitment lists them).
pub(crate) async fn finalists_in_seed_order(
    store: &Store,
    c: &CompetitionRow,
) -> Result<Vec<(BotId, SealedEntry)>, FinalsError> {
    let bots = bots_by_id(store).await?;
    store
        .seasons()
        .season_entries(c.id)
        .await?
        .into_iter()
        .filter(|(_, seed)| seed.is_some())
        .map(|(id, _)| {
            let b = bots
                .get(&id)
                .ok_or_else(|| format!("finalist {id} is not a bot"))?;
            Ok((id, sealed(b)))
        })
        .collect()
}

/// The finals' games as the public record holds them, each with its
/// finalists by seat (indices in seed order).
pub(crate) async fn finals_games(
    store: &Store,
    finals_id: crate::store::CompetitionId,
    finalists: &[(BotId, SealedEntry)],
) -> Result<Vec<(FinalsGame, Vec<usize>)>, FinalsError> {
    let index: HashMap<&str, usize> = finalists
        .iter()
        .enumerate()
        .map(|(i, (_, e))| (e.name.as_str(), i))
        .collect();
    let mut out = Vec::new();
    for row in store.seasons().finals_games(finals_id).await? {
        let record: referee::GameRecord = serde_json::from_str(&row.record)
            .map_err(|e| format!("a stored finals record does not parse: {e}"))?;
        let by_seat = record
            .seats
            .iter()
            .map(|s| {
                s.entrant
                    .as_deref()
                    .and_then(|n| index.get(n).copied())
                    .ok_or_else(|| format!("a finals game seats {:?}, not a finalist", s.entrant))
            })
            .collect::<Result<Vec<usize>, String>>()?;
        // Mirrored groups play the group's seed in every rotation.
        let seeding = if record.seed == row.group_seed as u64 {
            crate::store::Seeding::Mirrored
        } else {
            crate::store::Seeding::Independent
        };
        out.push((
            FinalsGame {
                group: row.group_no as u64,
                deal: row.deal as u64,
                seeding,
                record,
            },
            by_seat,
        ));
    }
    Ok(out)
}

async fn standings_of(
    store: &Store,
    finals_id: crate::store::CompetitionId,
    finalists: &[(BotId, SealedEntry)],
    seats: usize,
) -> Result<FinalStandings, FinalsError> {
    let games = finals_games(store, finals_id, finalists).await?;
    let names: Vec<String> = finalists.iter().map(|(_, e)| e.name.clone()).collect();
    Ok(crate::season::final_standings(&names, seats, &games)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_the_chosen_candidate_else_the_newest_and_host_bots_are_their_own() {
        let (alice, bob, carol) = (AuthorId(1), AuthorId(2), AuthorId(3));
        let cand = |bot: i64, author: Option<AuthorId>| Candidate {
            bot: BotId(bot),
            author,
        };
        let candidates = [
            cand(1, Some(alice)),
            cand(2, None),
            cand(3, Some(bob)),
            cand(4, Some(alice)),
            cand(6, Some(bob)),
            cand(7, Some(carol)),
        ];
        // Alice chose her first version, Bob a version no longer a candidate
        // (taken out of play), Carol nothing.
        let choices: HashMap<AuthorId, BotId> = [(alice, BotId(1)), (bob, BotId(5))].into();
        assert_eq!(
            entries(&candidates, &choices),
            [BotId(1), BotId(2), BotId(6), BotId(7)]
        );
        // The order the candidates come in does not matter.
        let mut reversed = candidates.to_vec();
        reversed.reverse();
        assert_eq!(
            entries(&reversed, &HashMap::new()),
            [BotId(2), BotId(4), BotId(6), BotId(7)]
        );
    }
}
