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
    /// One row per entry: each bot's newest version in play, and in a season
    /// each author's entry alone (ranks counted again over these rows).
    standings: Arc<Standings>,
    /// The rows of versions an entry superseded, by the entry's name.
    history: BTreeMap<String, Vec<rating::standings::Standing>>,
    /// For a season: its phase, deadline, entries and finals.
    season: Option<super::season::SeasonView>,
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
    let entrants = store.competitions().entrants(c.id).await?;
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
    let games = store.shapes().game_count(c.id).await?;
    // A competition that reached its `max_games` is finished, though open.
    let status = if c.max_games > 0 && games >= c.max_games {
        "finished".to_owned()
    } else {
        c.status.to_string()
    };
    let recent = store
        .games()
        .recent(c.id, RECENT)
        .await?
        .iter()
        .map(|r| GameView::of(r, names))
        .collect();
    let season = super::season::view(site, c, &bots.all).await?;
    let (standings, history) = one_row_per_entry(&fit.standings, &bots.all, season.as_ref());
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
        activity: store.games().activity(c.id).await?,
        active_bots: entrants.iter().filter(|b| b.status == BotStatus::Active).count() as i64,
        out_of_play,
        standings,
        history,
        season,
        recent,
    })
}

/// The standings with one row per entry: a version superseded by a newer one
/// of the same bot in the standings goes to the history beside it, and in a
/// season each author's rows beside their entry's. Ranks are counted again
/// over the rows shown.
fn one_row_per_entry(
    st: &Arc<Standings>,
    bots: &[crate::store::BotRow],
    season: Option<&super::season::SeasonView>,
) -> (Arc<Standings>, BTreeMap<String, Vec<rating::standings::Standing>>) {
    let by_name: std::collections::HashMap<&str, &crate::store::BotRow> =
        bots.iter().map(|b| (b.name.as_str(), b)).collect();
    let base = |name: &str| name.split_once('@').map_or(name, |(b, _)| b).to_owned();
    // Who a row belongs with: in a season its author (entries are per author),
    // else its bot (all its versions); a host's bot is its own.
    let key = |name: &str| -> String {
        match by_name.get(name).and_then(|b| b.author_id) {
            Some(a) if season.is_some() => format!("author {}", a.0),
            _ => format!("bot {}", base(name)),
        }
    };
    let entries: std::collections::HashSet<&str> = season
        .map(|s| s.entries.iter().map(|e| e.name.as_str()).collect())
        .unwrap_or_default();
    // The row shown for each key: the entry if the season names one, else the
    // newest version (highest key) in the standings.
    let mut shown: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for r in &st.rows {
        let k = key(&r.name);
        let newer = |old: &str| {
            let id = |n: &str| by_name.get(n).map_or(0, |b| b.id.0);
            id(&r.name) > id(old)
        };
        match shown.get(&k) {
            Some(old) if entries.contains(old) => {}
            Some(old) if !entries.contains(r.name.as_str()) && !newer(old) => {}
            _ => {
                shown.insert(k, &r.name);
            }
        }
    }
    if shown.len() == st.rows.len() {
        return (st.clone(), BTreeMap::new());
    }
    let mut history: BTreeMap<String, Vec<rating::standings::Standing>> = BTreeMap::new();
    let mut rows = Vec::with_capacity(shown.len());
    for r in &st.rows {
        let head = shown[&key(&r.name)];
        if head == r.name {
            let mut row = r.clone();
            row.rank = rows.len() + 1;
            rows.push(row);
        } else {
            history.entry(head.to_owned()).or_default().push(r.clone());
        }
    }
    let mut filtered = (**st).clone();
    filtered.rows = rows;
    (Arc::new(filtered), history)
}

async fn front_snapshot(site: &Site) -> Result<FrontView, WebError> {
    let bots = Bots::read(site).await?;
    let mut competitions = Vec::new();
    // Authors' challenges are unrated: their own pages list them, not the front.
    for c in site.store.competitions().all().await? {
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
            caption { @if c.season.is_some() { "Ladder standings (one row per entry)" } @else { "Standings" } }
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
                            @if let Some(older) = c.history.get(&r.name) {
                                details.history {
                                    summary { (older.len()) " earlier" }
                                    @for o in older {
                                        @let (elo, _) = rating::standings::elo_cells(o.elo, o.ci95, o.separated);
                                        div { (bot_link(&o.name)) " " (elo) " · " (o.games) " games" }
                                    }
                                }
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
        .competitions()
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
        @if let Some(season) = &view.season {
            (super::season::section(&view.name, season))
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
        None => store.games().results_before(c.id, before, PAGE_GAMES).await?,
        Some(bot) => {
            let Some(b) = known.named(bot) else {
                return Err(WebError::NotFound(format!("no bot named {:?}", escape(bot))));
            };
            store
                .games()
                .bot_results_before(c.id, b.id, before, PAGE_GAMES)
                .await?
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{AuthorId, BotId, BotRow, BotStatus, StatusBy};

    fn bot(id: i64, name: &str, author: Option<i64>, status: BotStatus) -> BotRow {
        BotRow {
            id: BotId(id),
            name: name.into(),
            game: "ur".into(),
            spec: String::new(),
            env: Vec::new(),
            status,
            status_reason: String::new(),
            start_failures: 0,
            version: 1,
            previous_id: None,
            status_by: StatusBy::Server,
            author_id: author.map(AuthorId),
            artifact_sha256: None,
        }
    }

    /// Standings of five bots that all met: alice's two versions of lucky and
    /// her second bot clever, bob's plucky, the host's first.
    fn field() -> (Arc<Standings>, Vec<BotRow>) {
        let bots = vec![
            bot(1, "lucky", Some(1), BotStatus::Superseded),
            bot(2, "lucky@2", Some(1), BotStatus::Active),
            bot(3, "plucky", Some(2), BotStatus::Active),
            bot(4, "first", None, BotStatus::Active),
            bot(5, "clever", Some(1), BotStatus::Active),
        ];
        let ids: Vec<(i64, String)> = bots.iter().map(|b| (b.id.0, b.name.clone())).collect();
        let mut results = Vec::new();
        let mut group = 0;
        for a in 1..=5 {
            for b in a + 1..=5 {
                for rotation in 0..2 {
                    group += 1;
                    let (x, y) = if rotation == 0 { (a, b) } else { (b, a) };
                    results.push(rating::GameResult {
                        id: group,
                        group_id: group,
                        rotation: 0,
                        bots: vec![x, y],
                        ranks: if (a + b + rotation) % 3 == 0 {
                            vec![2, 1]
                        } else {
                            vec![1, 2]
                        },
                        forfeit: false,
                    });
                }
            }
        }
        let st = rating::standings::compute(&ids, &results, 2, None).unwrap();
        assert_eq!(st.rows.len(), 5);
        (Arc::new(st), bots)
    }

    fn names(st: &Standings) -> Vec<(usize, &str)> {
        st.rows.iter().map(|r| (r.rank, r.name.as_str())).collect()
    }

    #[test]
    fn a_ladder_shows_each_bot_once_and_its_earlier_versions_beside_it() {
        let (st, bots) = field();
        let (shown, history) = one_row_per_entry(&st, &bots, None);
        let mut seen: Vec<&str> = shown.rows.iter().map(|r| r.name.as_str()).collect();
        seen.sort_unstable();
        assert_eq!(seen, ["clever", "first", "lucky@2", "plucky"]);
        assert_eq!(
            shown.rows.iter().map(|r| r.rank).collect::<Vec<_>>(),
            [1, 2, 3, 4],
            "ranks counted again: {:?}",
            names(&shown)
        );
        assert_eq!(
            history["lucky@2"]
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>(),
            ["lucky"]
        );
        // The order of the rows shown is the fit's.
        let order: Vec<&str> = st
            .rows
            .iter()
            .map(|r| r.name.as_str())
            .filter(|n| *n != "lucky")
            .collect();
        assert_eq!(
            shown.rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            order
        );
    }

    #[test]
    fn a_season_shows_each_authors_entry_once_even_an_older_version() {
        let (st, bots) = field();
        let entry = |name: &str| super::super::season::EntryView {
            name: name.into(),
            author: String::new(),
            artifact_sha256: None,
            finalist: None,
        };
        let season = super::super::season::SeasonView {
            phase: crate::store::Phase::Open,
            deadline_ms: 0,
            deadline_utc: String::new(),
            closes_in: None,
            plan: crate::season::FinalsPlan {
                top: 4,
                groups: 1,
                until_separated: false,
                max_games: 0,
            },
            finals: None,
            commitment: None,
            entries_digest: None,
            master_seed: None,
            // Alice chose her first version.
            entries: vec![entry("lucky"), entry("plucky"), entry("first")],
            final_standings: None,
        };
        let (shown, history) = one_row_per_entry(&st, &bots, Some(&season));
        let mut seen: Vec<&str> = shown.rows.iter().map(|r| r.name.as_str()).collect();
        seen.sort_unstable();
        assert_eq!(seen, ["first", "lucky", "plucky"], "{:?}", names(&shown));
        let mut beside: Vec<&str> = history["lucky"].iter().map(|r| r.name.as_str()).collect();
        beside.sort_unstable();
        assert_eq!(beside, ["clever", "lucky@2"]);
        assert_eq!(shown.rows.iter().map(|r| r.rank).collect::<Vec<_>>(), [1, 2, 3]);
    }
}
