//! A bot's page: its status and versions, and per competition its rating over
//! time, results against each opponent, faults by kind with their details, and
//! its newest games. Never its command line or environment.

use super::{
    Bots, GameView, Site, WebError, bot_link, escape, games_table_at, json, json_suffix, page_html, segment,
    svg,
};
use crate::store::{BotId, BotStatus, FaultTally, GameId, RatingPoint};
use axum::extract::{Path, State};
use axum::response::Response;
use maud::{Markup, PreEscaped, html};
use rating::separation::Separation;
use serde::Serialize;

/// Newest games and faults listed per competition (the games list pages on).
const NEWEST: usize = 20;
const NEWEST_FAULTS: i64 = 10;

/// A bot's page: `/bots/{name}` and its `.json`.
#[derive(Debug, Serialize)]
pub(super) struct BotView {
    pub(super) name: String,
    game: String,
    status: BotStatus,
    status_reason: String,
    version: i64,
    /// Every version of it, oldest first.
    versions: Vec<VersionView>,
    pub(super) competitions: Vec<BotCompetitionView>,
}

#[derive(Debug, Serialize)]
struct VersionView {
    name: String,
    version: i64,
    status: BotStatus,
}

/// The bot in one competition (the standings' fields are absent until it is rated).
#[derive(Debug, Serialize)]
pub(super) struct BotCompetitionView {
    competition: String,
    rank: Option<usize>,
    elo: Option<f64>,
    ci95: Option<f64>,
    separated: Option<Separation>,
    games: u64,
    score: Option<f64>,
    forfeits: Option<u64>,
    rating_history: Vec<RatingPoint>,
    against: Vec<AgainstView>,
    faults_by_kind: Vec<FaultTally>,
    newest_faults: Vec<FaultView>,
    recent: Vec<BotGameView>,
}

#[derive(Debug, Serialize)]
struct AgainstView {
    opponent: String,
    wins: u64,
    draws: u64,
    losses: u64,
}

/// A fault as the public sees it.
#[derive(Debug, Serialize)]
struct FaultView {
    game: GameId,
    kind: referee::FaultKind,
    count: i64,
    at_move: i64,
    detail: String,
}

/// A game of the bot's, with its place.
#[derive(Debug, Serialize)]
struct BotGameView {
    #[serde(flatten)]
    game: GameView,
    place: Option<u32>,
}

/// Everything a bot's page shows.
pub(super) async fn snapshot(site: &Site, name: &str) -> Result<Option<BotView>, WebError> {
    let store = &site.store;
    let known = Bots::read(site).await?;
    let (all, names, redactor) = (&known.all, &known.names, &known.redactor);
    let Some(bot) = known.named(name) else {
        return Ok(None);
    };
    let name_of = |id: &BotId| names.get(id).cloned().unwrap_or_else(|| "?".into());
    // Its versions, oldest first: follow `previous` back, and the rows naming it forward.
    let mut versions = vec![bot];
    while let Some(prev) = versions[0]
        .previous_id
        .and_then(|id| all.iter().find(|b| b.id == id))
    {
        versions.insert(0, prev);
    }
    while let Some(next) = all
        .iter()
        .find(|b| b.previous_id == versions.last().map(|v| v.id))
    {
        versions.push(next);
    }
    let mut competitions = Vec::new();
    for c in store.competitions().all().await? {
        // A challenge is unrated, and listed on its author's page.
        if c.game != bot.game || c.format == crate::store::CompetitionFormat::Challenge {
            continue;
        }
        // As of the last fit (a few seconds old at most while games arrive).
        let fit = site.standings.latest_fit(&c).await?;
        let games = fit.index.games.get(&bot.id).copied().unwrap_or(0);
        if games == 0 {
            continue;
        }
        let row = fit.standings.rows.iter().find(|r| r.name == bot.name);
        let mut against: Vec<AgainstView> = fit
            .index
            .against
            .iter()
            .filter(|((me, _), _)| *me == bot.id)
            .map(|((_, other), &[wins, draws, losses])| AgainstView {
                opponent: name_of(other),
                wins,
                draws,
                losses,
            })
            .collect();
        against.sort_by(|a, b| a.opponent.cmp(&b.opponent));
        let recent = store
            .games()
            .bot_results_before(c.id, bot.id, GameId(i64::MAX), NEWEST as i64)
            .await?;
        let newest_faults = store
            .games()
            .recent_faults(c.id, bot.id, NEWEST_FAULTS)
            .await?
            .into_iter()
            .map(|f| FaultView {
                game: f.game_id,
                kind: f.kind,
                count: f.count,
                at_move: f.at_move,
                detail: redactor.text(&f.detail),
            })
            .collect();
        competitions.push(BotCompetitionView {
            competition: c.name.clone(),
            rank: row.map(|r| r.rank),
            // An unrated bot (it played only bots without a finite rating) has no Elo.
            elo: row.filter(|r| !r.unrated).map(|r| r.elo),
            ci95: row.map(|r| r.ci95),
            separated: row.and_then(|r| r.separated),
            games,
            score: row.map(|r| r.score),
            forfeits: row.map(|r| r.forfeits),
            rating_history: store.games().rating_history(c.id, bot.id).await?,
            against,
            faults_by_kind: store.games().fault_tally(c.id, bot.id).await?,
            newest_faults,
            recent: recent
                .iter()
                .map(|r| BotGameView {
                    game: GameView::of(r, names),
                    place: r.bots.iter().position(|&b| b == bot.id.0).map(|s| r.ranks[s]),
                })
                .collect(),
        });
    }
    Ok(Some(BotView {
        name: bot.name.clone(),
        game: bot.game.clone(),
        status: bot.status,
        status_reason: redactor.text(&bot.status_reason),
        version: bot.version,
        versions: versions
            .iter()
            .map(|v| VersionView {
                name: v.name.clone(),
                version: v.version,
                status: v.status,
            })
            .collect(),
        competitions,
    }))
}

/// Whether a version with this status is kept off the public pages: it failed
/// its build or its check, so never played.
pub(super) fn never_public(status: BotStatus) -> bool {
    matches!(status, BotStatus::BuildFailed | BotStatus::Rejected)
}

/// `/bots/{name}` (a page) and `/bots/{name}.json`.
pub(super) async fn page(State(site): State<Site>, Path(name): Path<String>) -> Result<Response, WebError> {
    let (name, as_json) = json_suffix(name);
    // A version that failed its build or check never played: it is its author's
    // business (their pages show it), not the public's.
    let Some(mut view) = snapshot(&site, &name).await?.filter(|v| !never_public(v.status)) else {
        return Err(WebError::NotFound(format!("no bot named {:?}", escape(&name))));
    };
    view.versions.retain(|v| !never_public(v.status));
    if as_json {
        return json(&view);
    }
    let body = html! {
        h1 { (view.name) }
        p {
            (view.game) " · version " (view.version) " · " b.status { (view.status) }
            @if !view.status_reason.is_empty() { " — " (super::Marked(&view.status_reason)) }
        }
        @if view.versions.len() > 1 {
            p {
                "Versions: "
                @for (k, v) in view.versions.iter().enumerate() {
                    @if k > 0 { " → " }
                    (bot_link(&v.name)) " (" (v.status) ")"
                }
            }
        }
        @if view.competitions.is_empty() { p { "No games yet." } }
        @for c in &view.competitions { (competition_section(&view.name, c)) }
    };
    Ok(page_html(&name, &format!("/bots/{}.json", segment(&name)), body))
}

/// The line under a competition's name on a bot's page: rank, Elo, score.
fn rating_line(c: &BotCompetitionView) -> Markup {
    let Some(elo) = c.elo else {
        return html! { "not rated yet · " };
    };
    let (elo, ci) = rating::standings::elo_cells(elo, c.ci95.unwrap_or(f64::INFINITY), c.separated);
    html! {
        "rank " (c.rank.unwrap_or(0)) " · Elo " b { (elo) }
        // A separated bot's Elo is a bound, with no interval to give.
        @if c.separated.is_none() { " ± " (ci) }
        " · score " (format!("{:.1}%", c.score.unwrap_or(0.0))) " · " (c.forfeits.unwrap_or(0)) " forfeits · "
    }
}

/// One competition's part of a bot's page.
fn competition_section(bot: &str, c: &BotCompetitionView) -> Markup {
    competition_section_at(bot, c, "/games/")
}

/// [`competition_section`], each game linked to `games_at` and its id (the
/// author's pages link to its private logs).
pub(super) fn competition_section_at(bot: &str, c: &BotCompetitionView, games_at: &str) -> Markup {
    let comp = segment(&c.competition);
    html! {
        section {
            h2 { a href={ "/competitions/" (comp) } { (c.competition) } }
            p { (rating_line(c)) (c.games) " games" }
            figure {
                figcaption { "Elo as the competition's games were played (band: its 95% interval)" }
                // Drawn here from numbers only.
                (PreEscaped(svg::rating_chart(&c.rating_history)))
            }
            table {
                caption { "Against each opponent" }
                thead { tr { th { "opponent" } th { "won" } th { "drawn" } th { "lost" } } }
                tbody {
                    @for a in &c.against {
                        tr { td { (bot_link(&a.opponent)) } td { (a.wins) } td { (a.draws) } td { (a.losses) } }
                    }
                }
            }
            @if c.faults_by_kind.is_empty() {
                p { "No faults." }
            } @else {
                table.faults {
                    caption { "Faults by kind" }
                    thead { tr { th { "kind" } th { "faults" } th { "games" } } }
                    tbody {
                        @for t in &c.faults_by_kind {
                            tr data-kind=(t.kind) { td { (t.kind) } td { (t.faults) } td { (t.games) } }
                        }
                    }
                }
                table.faults {
                    caption { "Newest faults" }
                    thead { tr { th { "game" } th { "kind" } th { "times" } th { "at move" } } }
                    tbody {
                        @for f in &c.newest_faults {
                            tr.head {
                                td { a href={ (games_at) (f.game) } { (f.game) } }
                                td { (f.kind) } td { (f.count) } td { (f.at_move) }
                            }
                            tr { td colspan="4" class="detail" { (super::Marked(&f.detail)) } }
                        }
                    }
                }
            }
            (games_table_at("Newest games", c.recent.iter().map(|g| &g.game), games_at))
            p { a href={ "/competitions/" (comp) "/games?bot=" (segment(bot)) } { "All its games" } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attack: a bot's move is quoted in its illegal-move fault, so a hostile bot
    /// writes markup as its move. Neither that nor any other text reaching the
    /// page becomes markup.
    #[test]
    fn text_from_faults_and_results_cannot_become_markup() {
        let evil = "<img src=x onerror=alert(1)></td><script>alert(2)</script>";
        let c = BotCompetitionView {
            competition: evil.into(),
            rank: Some(1),
            elo: Some(10.0),
            ci95: Some(20.0),
            separated: None,
            games: 1,
            score: Some(50.0),
            forfeits: Some(0),
            rating_history: vec![],
            against: vec![AgainstView {
                opponent: evil.into(),
                wins: 1,
                draws: 0,
                losses: 0,
            }],
            faults_by_kind: vec![FaultTally {
                kind: referee::FaultKind::Illegal,
                faults: 1,
                games: 1,
            }],
            newest_faults: vec![FaultView {
                game: GameId(1),
                kind: referee::FaultKind::Illegal,
                count: 1,
                at_move: 3,
                detail: format!("illegal move {evil:?}: no such move \u{202e}txt.exe"),
            }],
            recent: vec![BotGameView {
                game: GameView {
                    id: GameId(1),
                    group: crate::store::GroupId(1),
                    rotation: 0,
                    bots: vec![evil.into(), "b".into()],
                    ranks: vec![1, 2],
                    termination: referee::Termination::Normal,
                },
                place: Some(2),
            }],
        };
        let html = competition_section(evil, &c).into_string();
        assert!(!html.contains("<img") && !html.contains("<script"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"), "{html}");
        // A bidi override in a fault's detail is shown, marked, not obeyed.
        assert!(!html.contains('\u{202e}'), "{html}");
        assert!(html.contains(">\\u{202e}</span>txt.exe"), "{html}");
    }
}
