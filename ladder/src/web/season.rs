//! A season on its competition's page (phase, deadline, entries, the finals'
//! commitment, the final standings) and its public record,
//! `/competitions/{name}/season.jsonl`, which `ladder verify` checks.

use super::{Site, WebError, bot_link, segment};
use crate::season::seal::{MasterSeed, SealedEntry};
use crate::season::{self, FinalStandings, FinalsGame, Phase, SeasonHeader, SeasonLine};
use crate::store::{BotId, BotRow, CompetitionRow, SeasonRow};
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Serialize;
use std::collections::HashMap;

/// A season as its page shows it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct SeasonView {
    pub(super) phase: Phase,
    pub(super) deadline_ms: i64,
    pub(super) deadline_utc: String,
    /// Until the deadline, in words (open phase only).
    pub(super) closes_in: Option<String>,
    pub(super) plan: season::FinalsPlan,
    /// The finals' competition, once started.
    pub(super) finals: Option<String>,
    pub(super) commitment: Option<String>,
    pub(super) entries_digest: Option<String>,
    /// Revealed at the close only.
    pub(super) master_seed: Option<String>,
    /// Fixed at the freeze (before it: each author's entry as it stands now).
    pub(super) entries: Vec<EntryView>,
    pub(super) final_standings: Option<FinalStandings>,
}

/// One entry on the season's page.
#[derive(Debug, Clone, Serialize)]
pub(super) struct EntryView {
    pub(super) name: String,
    /// Empty for a host's bot.
    pub(super) author: String,
    pub(super) artifact_sha256: Option<String>,
    /// A finalist's seed (1 = the ladder's best at the freeze).
    pub(super) finalist: Option<u32>,
}

/// The season of `c`, if it is one, as its page shows it.
pub(super) async fn view(
    site: &Site,
    c: &CompetitionRow,
    bots: &[BotRow],
) -> Result<Option<SeasonView>, WebError> {
    let Some(s) = site.store.seasons().season(c.id).await? else {
        return Ok(None);
    };
    let authors = site.store.authors().author_names().await?;
    let by_id: HashMap<BotId, &BotRow> = bots.iter().map(|b| (b.id, b)).collect();
    let mut entries: Vec<EntryView> = crate::app::seasons::current_entries(&site.store, c, &s)
        .await?
        .into_iter()
        .filter_map(|(id, finalist)| {
            let b = by_id.get(&id)?;
            Some(EntryView {
                name: b.name.clone(),
                author: b
                    .author_id
                    .and_then(|a| authors.get(&a).cloned())
                    .unwrap_or_default(),
                artifact_sha256: b.artifact_sha256.clone(),
                finalist,
            })
        })
        .collect();
    entries.sort_by(|a, b| {
        (a.finalist.is_none(), a.finalist, &a.name).cmp(&(b.finalist.is_none(), b.finalist, &b.name))
    });
    let now = site.store.now_ms();
    let finals = match s.finals_id {
        Some(id) => site
            .store
            .competitions()
            .competition_by_id(id)
            .await?
            .map(|f| f.name),
        None => None,
    };
    let final_standings = s
        .final_standings
        .as_deref()
        .map(serde_json::from_str::<FinalStandings>)
        .transpose()
        .map_err(WebError::internal)?;
    Ok(Some(SeasonView {
        phase: s.phase,
        deadline_ms: s.deadline_ms,
        deadline_utc: season::utc(s.deadline_ms),
        closes_in: (s.phase == Phase::Open && now < s.deadline_ms)
            .then(|| season::countdown(s.deadline_ms - now)),
        plan: s.plan,
        finals,
        commitment: s.commitment.clone(),
        entries_digest: s.entries_digest.clone(),
        // Never before the close: whoever knew it could foresee every die.
        master_seed: s
            .master_seed
            .as_ref()
            .filter(|_| s.phase == Phase::Closed)
            .map(MasterSeed::to_hex),
        entries,
        final_standings,
    }))
}

fn short(hash: &Option<String>) -> String {
    hash.as_deref()
        .map_or_else(|| "host's command".to_owned(), |h| h.chars().take(12).collect())
}

/// The season's section of its competition's page.
pub(super) fn section(name: &str, v: &SeasonView) -> Markup {
    let s = segment(name);
    let plan = &v.plan;
    html! {
        section.season {
            h2 { "Season" }
            p data-fact="phase" {
                "Phase: " b { (v.phase) } " · "
                @match v.phase {
                    Phase::Open => { "submissions close " time datetime=(v.deadline_utc) { (v.deadline_utc) }
                        @if let Some(left) = &v.closes_in { " (in " span data-fact="countdown" { (left) } ")" } }
                    Phase::Frozen => { "entries fixed at " (v.deadline_utc) "; the finals are being set" }
                    Phase::Finals => { "entries fixed at " (v.deadline_utc) "; the finals are being played" }
                    Phase::Closed => { "the final standings below are fixed" }
                }
            }
            p.note {
                "Finals: the top " (plan.top) " entries at the deadline; every set of them plays "
                (plan.groups) @if plan.groups == 1 { " group" } @else { " groups" }
                @if plan.until_separated { ", round after round until the top three's intervals are apart" }
                @if plan.max_games > 0 { " (at most " (plan.max_games) " games)" }
                ". Each author's entry is the version they chose before the deadline (" code { "ladder author enter" } "), else their newest active one; versions uploaded later take no part."
            }
            @if let Some(commitment) = &v.commitment {
                p {
                    "Commitment to the finals' master seed and finalists (SHA-256): "
                    code.hash data-fact="commitment" { (commitment) }
                }
                p.note {
                    "Published before the first finals game. Every finals group's seed derives from the master seed, revealed at the close; "
                    "anyone can then check every game with "
                    code { "ladder verify" } " and the " a href={ "/competitions/" (s) "/season.jsonl" } { "season's record" } "."
                }
            }
            @if let Some(master) = &v.master_seed {
                p { "Master seed (revealed): " code.hash data-fact="master_seed" { (master) } }
            }
            @if let Some(f) = &v.finals {
                p { "Finals games: " a href={ "/competitions/" (segment(f)) } { (f) } }
            }
            @if let Some(fs) = &v.final_standings {
                (final_table(fs))
            }
            table.entries {
                caption { "Entries" }
                thead { tr { th { "seed" } th.name { "entry" } th.name { "author" } th.name { "files (SHA-256)" } } }
                tbody {
                    @for e in &v.entries {
                        tr data-entry=(e.name) {
                            td { @if let Some(seed) = e.finalist { (seed) } @else { "—" } }
                            td.name { (bot_link(&e.name)) }
                            td.name { (e.author) }
                            td.name title=[e.artifact_sha256.as_deref()] { code { (short(&e.artifact_sha256)) } }
                        }
                    }
                }
            }
        }
    }
}

fn final_table(fs: &FinalStandings) -> Markup {
    html! {
        table.final {
            caption { "Final standings (" (fs.games) " finals games in " (fs.groups) " groups)" }
            thead { tr { th { "place" } th.name { "finalist" } th { "Elo" } th { "±95%" } th { "score" } th { "LOS over next" } } }
            tbody {
                @for r in &fs.rows {
                    tr data-final=(r.name) {
                        td { (r.rank) }
                        td.name { (bot_link(&r.name)) @if r.rank == 1 { " " b.winner { "winner" } } }
                        td {
                            @match (r.elo, r.bound.as_deref()) {
                                (Some(e), Some("at_least")) => { "≥ " (format!("{e:.0}")) }
                                (Some(e), Some(_)) => { "≤ " (format!("{e:.0}")) }
                                (Some(e), None) => { (format!("{e:.0}")) }
                                (None, _) => { "unrated" }
                            }
                        }
                        td { @if let Some(ci) = r.ci95 { (format!("{ci:.0}")) } @else { "—" } }
                        td { (format!("{:.1}%", r.score)) }
                        td { @if let Some(l) = r.los_next { (format!("{l:.1}%")) } @else { "—" } }
                    }
                }
            }
        }
        p.note { "LOS over next: the probability this finalist is stronger than the one placed below it (with more than two seats, from the two intervals as if independent)." }
    }
}

/// The season's header line, from what is stored.
async fn header(
    site: &Site,
    c: &CompetitionRow,
    s: &SeasonRow,
) -> Result<(SeasonHeader, Vec<(BotId, SealedEntry)>), WebError> {
    let finalists = crate::app::seasons::finalists_in_seed_order(&site.store, c)
        .await
        .map_err(WebError::internal)?;
    let finals = match s.finals_id {
        Some(id) => site
            .store
            .competitions()
            .competition_by_id(id)
            .await?
            .map(|f| f.name)
            .unwrap_or_default(),
        None => String::new(),
    };
    Ok((
        SeasonHeader {
            competition: c.name.clone(),
            finals,
            game: c.game.clone(),
            options: c.options.clone(),
            seats: c.seats as u32,
            seeding: c.seeding,
            deadline_ms: s.deadline_ms,
            deadline_utc: season::utc(s.deadline_ms),
            phase: s.phase,
            plan: s.plan,
            finalists: finalists.iter().map(|(_, e)| e.clone()).collect(),
            entries_digest: s.entries_digest.clone().unwrap_or_default(),
            commitment: s.commitment.clone().unwrap_or_default(),
            master_seed: s
                .master_seed
                .as_ref()
                .filter(|_| s.phase == Phase::Closed)
                .map(MasterSeed::to_hex),
        },
        finalists,
    ))
}

/// A line of the record: JSON with a seed as a string (as games.jsonl writes
/// it: JavaScript rounds large numbers).
fn line_of(l: &SeasonLine) -> Result<String, WebError> {
    let mut v = serde_json::to_value(l).map_err(WebError::internal)?;
    if let Some(seed) = v.pointer("/record/seed").and_then(serde_json::Value::as_u64) {
        v["record"]["seed"] = seed.to_string().into();
    }
    let mut text = v.to_string();
    text.push('\n');
    Ok(text)
}

/// `/competitions/{name}/season.jsonl`: the season, its finals' games and its
/// final standings, one JSON object a line (see [`crate::season::SeasonLine`]).
pub(super) async fn record(State(site): State<Site>, Path(name): Path<String>) -> Result<Response, WebError> {
    let Some(c) = site.store.competitions().competition(&name).await? else {
        return Err(WebError::NotFound(format!(
            "no competition named {:?}",
            super::escape(&name)
        )));
    };
    let Some(s) = site.store.seasons().season(c.id).await? else {
        return Err(WebError::NotFound(format!(
            "{:?} is not a season",
            super::escape(&name)
        )));
    };
    let (head, finalists) = header(&site, &c, &s).await?;
    let mut text = line_of(&SeasonLine::Season(head))?;
    if let Some(finals_id) = s.finals_id {
        let redactor = super::Bots::read(&site).await?.redactor;
        let games = crate::app::seasons::finals_games(&site.store, finals_id, &finalists)
            .await
            .map_err(WebError::internal)?;
        for (mut g, _) in games {
            redactor.record(&mut g.record);
            text.push_str(&line_of(&SeasonLine::Game(FinalsGame { ..g }))?);
        }
    }
    if let Some(st) = s.final_standings.as_deref().filter(|_| s.phase == Phase::Closed) {
        let st: FinalStandings = serde_json::from_str(st).map_err(WebError::internal)?;
        text.push_str(&line_of(&SeasonLine::Standings(st))?);
    }
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"season.jsonl\"",
            ),
        ],
        Body::from(text),
    )
        .into_response())
}

/// A season as an author's page shows it: which of their versions is their
/// entry, and how it became so.
#[derive(Debug, Clone, Serialize)]
pub(super) struct AuthorEntry {
    pub(super) season: String,
    pub(super) phase: Phase,
    pub(super) deadline_utc: String,
    /// Their entry's name; none if no version of theirs is in play.
    pub(super) entry: Option<String>,
    /// `chosen`, `newest` (no choice: their newest active version), or `fixed`.
    pub(super) how: &'static str,
}

/// The seasons of the games `author` has versions of, each with their entry.
pub(super) async fn author_entries(
    site: &Site,
    author: crate::store::AuthorId,
    own: &[BotRow],
) -> Result<Vec<AuthorEntry>, WebError> {
    let mut out = Vec::new();
    for c in site.store.competitions().all().await? {
        if !own.iter().any(|b| b.game == c.game) {
            continue;
        }
        let Some(s) = site.store.seasons().season(c.id).await? else {
            continue;
        };
        let mine = |id: &BotId| own.iter().find(|b| b.id == *id).map(|b| b.name.clone());
        let (entry, how) = if s.phase == Phase::Open {
            let chosen = site
                .store
                .seasons()
                .entry_choices(c.id)
                .await?
                .get(&author)
                .copied();
            let entries = crate::app::seasons::current_entries(&site.store, &c, &s).await?;
            let entry = entries.iter().find_map(|(id, _)| mine(id));
            let how = if chosen.and_then(|id| mine(&id)) == entry && chosen.is_some() {
                "chosen"
            } else {
                "newest"
            };
            (entry, how)
        } else {
            let fixed = site.store.seasons().season_entries(c.id).await?;
            (fixed.iter().find_map(|(id, _)| mine(id)), "fixed")
        };
        out.push(AuthorEntry {
            season: c.name.clone(),
            phase: s.phase,
            deadline_utc: season::utc(s.deadline_ms),
            entry,
            how,
        });
    }
    Ok(out)
}

/// The seasons' table on an author's page.
pub(super) fn author_table(entries: &[AuthorEntry]) -> Markup {
    html! {
        @if !entries.is_empty() {
            table.seasons {
                caption { "Your season entries" }
                thead { tr { th.name { "season" } th.name { "phase" } th.name { "entries fixed" } th.name { "your entry" } } }
                tbody {
                    @for e in entries {
                        tr data-season=(e.season) {
                            td.name { a href={ "/competitions/" (segment(&e.season)) } { (e.season) } }
                            td.name { (e.phase) }
                            td.name { (e.deadline_utc) }
                            td.name data-entry=[e.entry.as_deref()] {
                                @if let Some(name) = &e.entry {
                                    b { (name) } " (" (match e.how {
                                        "chosen" => "you chose it",
                                        "newest" => "your newest active version: choose another on its page",
                                        _ => "fixed at the deadline",
                                    }) ")"
                                } @else {
                                    "none: no version of yours is in play"
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
