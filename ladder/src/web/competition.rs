//! The front page (every competition's standings), a competition's page (its
//! standings with intervals drawn, how busy it is, its newest games) and the list
//! of all its games, page by page.

use super::{
    Bots, GameView, STYLE, Site, WebError, bot_link, escape, games_table, html_page, json, json_suffix,
    page_html, segment, svg,
};
use crate::store::{Activity, BotStatus, CompetitionFormat, CompetitionRow, GameId};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use rating::standings::Standings;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Games a page of the games list holds.
const PAGE_GAMES: i64 = 50;
/// Newest games on the front and competition pages.
const RECENT: i64 = 20;

/// A competition's page: `/competitions/{name}` and its `.json`, and one
/// section of the front page.
#[derive(Debug, Serialize)]
struct CompetitionView {
    name: String,
    game: String,
    options: Vec<String>,
    seats: i64,
    format: CompetitionFormat,
    /// Time control as stored (`movetime=MS`, `tc=BASE+INC`).
    time: String,
    /// `open`, `closed`, or `finished` once `max_games` is reached.
    status: String,
    max_games: i64,
    games: i64,
    activity: Activity,
    /// Entrants in play: games are scheduled once there are `seats` of them.
    active_bots: i64,
    /// Entrants out of play, by name.
    out_of_play: BTreeMap<String, OutOfPlay>,
    standings: Arc<Standings>,
    recent: Vec<GameView>,
}

/// Why a bot is out of play.
#[derive(Debug, Serialize)]
struct OutOfPlay {
    status: BotStatus,
    reason: String,
}

/// The front page: every competition.
#[derive(Debug, Serialize)]
struct FrontView {
    competitions: Vec<CompetitionView>,
}

/// Everything a competition's page shows.
async fn snapshot(site: &Site, c: &CompetitionRow, bots: &Bots) -> Result<CompetitionView, WebError> {
    let store = &site.store;
    let fit = site.standings.latest_fit(c).await?;
    let entrants = store.entrants(c.id).await?;
    let (names, redactor) = (&bots.names, &bots.redactor);
    let out_of_play = entrants
        .iter()
        .filter(|b| b.status != BotStatus::Active)
        .map(|b| {
            let why = OutOfPlay {
                status: b.status,
                reason: redactor.text(&b.status_reason),
            };
            (b.name.clone(), why)
        })
        .collect();
    let games = store.game_count(c.id).await?;
    // A competition that reached its `max_games` is finished, though open.
    let status = if c.max_games > 0 && games >= c.max_games {
        "finished".to_owned()
    } else {
        c.status.to_string()
    };
    let recent = store
        .recent(c.id, RECENT)
        .await?
        .iter()
        .map(|r| GameView::of(r, names))
        .collect();
    Ok(CompetitionView {
        name: c.name.clone(),
        game: c.game.clone(),
        options: c.options.clone(),
        seats: c.seats,
        format: c.format,
        time: c.time.to_string(),
        status,
        max_games: c.max_games,
        games,
        activity: store.activity(c.id).await?,
        active_bots: entrants.iter().filter(|b| b.status == BotStatus::Active).count() as i64,
        out_of_play,
        standings: fit.standings.clone(),
        recent,
    })
}

async fn front_snapshot(site: &Site) -> Result<FrontView, WebError> {
    let bots = Bots::read(site).await?;
    let mut competitions = Vec::new();
    // Authors' challenges are unrated: their own pages list them, not the front.
    for c in site.store.competitions().await? {
        if c.format != CompetitionFormat::Challenge {
            competitions.push(snapshot(site, &c, &bots).await?);
        }
    }
    Ok(FrontView { competitions })
}

pub(super) async fn front_json(State(site): State<Site>) -> Result<Response, WebError> {
    json(&front_snapshot(&site).await?)
}

/// The line under a competition's name: game, options, seats, status, games.
fn summary(c: &CompetitionView) -> Markup {
    html! {
        (c.game) " " (c.options.join(" ")) " · " (c.seats) " seats · " (c.format) " · "
        b.status { (c.status) } " · " (c.games) " games"
        @if c.max_games > 0 { " of " (c.max_games) }
        // Short of bots, an open competition schedules nothing: say why.
        @if c.status == "open" && c.active_bots < c.seats {
            " · " span.waiting { "needs " (c.seats) " active bots, has " (c.active_bots) }
        }
    }
}

/// The standings as a table, each row's interval drawn on one shared scale.
fn standings_table(c: &CompetitionView) -> Markup {
    let st = &c.standings;
    let cells: Vec<(f64, f64)> = st.rows.iter().map(|r| (r.elo, r.ci95)).collect();
    let scale = svg::interval_scale(&cells);
    html! {
        p.note {
            "Elo: " (st.anchor) ". Bars: each bot's 95% interval on one scale; dashed: 0."
            @if c.seats > 2 {
                " W/D/L: games alone in first place / sharing first place / in any other place."
            } @else {
                " W/D/L: games won / drawn / lost."
            }
            @if st.rows.iter().any(|r| r.separated.is_some()) {
                " ≥ / ≤: a bot that never lost / never won against the rest has the exact 97.5% bound, ranked where its record had an even chance."
            }
            @if st.rows.iter().any(|r| r.unrated) {
                " unrated: not yet rated against the field (it played only bots that have no finite rating themselves)."
            }
        }
        table.standings {
            caption { "Standings" }
            thead { tr {
                th { "rank" } th.name { "bot" } th { "Elo" } th { "±95%" } th { "interval" } th { "games" }
                th { "score" } th { abbr title="wins / draws / losses (a win: first place alone; a draw: first place shared)" { "W/D/L" } } th { "avg. rank" }
            } }
            tbody {
                @for r in &st.rows {
                    @let (elo, ci) = rating::standings::elo_cells(r.elo, r.ci95, r.separated);
                    tr data-bot=(r.name) {
                        td { (r.rank) }
                        td.name {
                            (bot_link(&r.name))
                            @if let Some(out) = c.out_of_play.get(&r.name) {
                                " " abbr.out title=(referee::text::escaped(&out.reason)) { "(" (out.status) ")" }
                            }
                        }
                        td { (elo) }
                        td { (ci) }
                        // Drawn here from numbers only.
                        td { (PreEscaped(svg::interval_bar(r.elo, r.ci95, r.separated, scale))) }
                        td { (r.games) }
                        td { (format!("{:.1}%", r.score)) }
                        td { (r.wins) "/" (r.draws) "/" (r.losses) }
                        td { (format!("{:.2}", r.avg_rank)) }
                    }
                }
            }
        }
    }
}

pub(super) async fn front_page(State(site): State<Site>) -> Result<Response, WebError> {
    let front = front_snapshot(&site).await?;
    Ok(html_page(html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "astragal ladder" }
                meta http-equiv="refresh" content="30";
                style { (PreEscaped(STYLE)) }
            }
            body { main {
                h1 { "astragal ladder" }
                nav { a href="/api/standings.json" { "JSON" } }
                @if front.competitions.is_empty() { p { "No competitions yet." } }
                @for c in &front.competitions {
                    section {
                        h2 { a href={ "/competitions/" (segment(&c.name)) } { (c.name) } }
                        p { (summary(c)) }
                        (standings_table(c))
                        (games_table("Recent games", &c.recent))
                    }
                }
            } }
        }
    }))
}

async fn competition(site: &Site, name: &str) -> Result<CompetitionRow, WebError> {
    site.store
        .competition(name)
        .await?
        .ok_or_else(|| WebError::NotFound(format!("no competition named {:?}", escape(name))))
}

/// `/competitions/{name}` and `/competitions/{name}.json`.
pub(super) async fn page(State(site): State<Site>, Path(name): Path<String>) -> Result<Response, WebError> {
    let (name, as_json) = json_suffix(name);
    let c = competition(&site, &name).await?;
    let bots = Bots::read(&site).await?;
    let view = snapshot(&site, &c, &bots).await?;
    if as_json {
        return json(&view);
    }
    let a = &view.activity;
    let s = segment(&c.name);
    let body = html! {
        h1 { (view.name) }
        p { (summary(&view)) }
        ul.facts {
            li {
                @if a.games_last_hour > Activity::LAST_HOUR_CAP {
                    b data-fact="games_last_hour" { (Activity::LAST_HOUR_CAP) " or more" }
                } @else {
                    b data-fact="games_last_hour" { (a.games_last_hour) }
                }
                " games in the last hour"
            }
            li { b data-fact="workers_active" { (a.workers_active) } " workers playing" }
            li { b data-fact="groups_playing" { (a.groups_playing) } " groups being played" }
            li { b data-fact="groups_waiting" { (a.groups_waiting) } " groups waiting" }
            li { "time control " (view.time) }
        }
        (standings_table(&view))
        (games_table("Newest games", &view.recent))
        p { a href={ "/competitions/" (s) "/games" } { "All games" } }
    };
    Ok(page_html(&c.name, &format!("/competitions/{s}.json"), body))
}

/// Which games: older than a key, and of one bot.
#[derive(Debug, serde::Deserialize)]
pub(super) struct GamesQuery {
    before: Option<GameId>,
    bot: Option<String>,
}

/// A page of a competition's games, newest first, and the key of the next page.
#[derive(Debug, Serialize)]
struct GamesView {
    competition: String,
    bot: Option<String>,
    games: Vec<GameView>,
    next_before: Option<GameId>,
}

async fn games_snapshot(site: &Site, c: &CompetitionRow, q: &GamesQuery) -> Result<GamesView, WebError> {
    let before = q.before.unwrap_or(GameId(i64::MAX));
    let store = &site.store;
    let known = Bots::read(site).await?;
    let rows = match &q.bot {
        None => store.results_before(c.id, before, PAGE_GAMES).await?,
        Some(bot) => {
            let Some(b) = known.named(bot) else {
                return Err(WebError::NotFound(format!("no bot named {:?}", escape(bot))));
            };
            store.bot_results_before(c.id, b.id, before, PAGE_GAMES).await?
        }
    };
    let next_before = (rows.len() as i64 == PAGE_GAMES)
        .then(|| rows.last().map(|r| GameId(r.id)))
        .flatten();
    Ok(GamesView {
        competition: c.name.clone(),
        bot: q.bot.clone(),
        games: rows.iter().map(|r| GameView::of(r, &known.names)).collect(),
        next_before,
    })
}

pub(super) async fn games_json(
    State(site): State<Site>,
    Path(name): Path<String>,
    Query(q): Query<GamesQuery>,
) -> Result<Response, WebError> {
    let c = competition(&site, &name).await?;
    json(&games_snapshot(&site, &c, &q).await?)
}

pub(super) async fn games_page(
    State(site): State<Site>,
    Path(name): Path<String>,
    query: Result<Query<GamesQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, WebError> {
    let Ok(Query(q)) = query else {
        return Err(WebError::BadRequest(
            "before= takes a game id and bot= a bot's name",
        ));
    };
    let c = competition(&site, &name).await?;
    let view = games_snapshot(&site, &c, &q).await?;
    let s = segment(&c.name);
    let bot_arg = q.bot.as_deref().map(|b| format!("bot={}", segment(b)));
    // The query of a link to another page of the same list (escaped by the template).
    let args = |before: Option<GameId>| {
        let parts: Vec<String> = before
            .map(|b| format!("before={b}"))
            .into_iter()
            .chain(bot_arg.clone())
            .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    };
    let body = html! {
        h1 {
            "Games"
            @if let Some(b) = &q.bot { " of " (bot_link(b)) }
            " in " a href={ "/competitions/" (s) } { (c.name) }
        }
        (games_table("Newest first", &view.games))
        p {
            @if q.before.is_some() {
                a href={ "/competitions/" (s) "/games" (args(None)) } { "Newest" } " "
            }
            @if let Some(next) = view.next_before {
                a rel="next" href={ "/competitions/" (s) "/games" (args(Some(next))) } { "Older" }
            }
            @if view.games.is_empty() { "No games here." }
        }
    };
    Ok(page_html(
        &format!("games in {}", c.name),
        &format!("/competitions/{s}/games.json{}", args(q.before)),
        body,
    ))
}
