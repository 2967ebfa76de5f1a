//! The front page (every competition's standings), a competition's page (its
//! standings with intervals drawn, how busy it is, its newest games) and the list
//! of all its games, page by page.

use super::{
    Bots, STYLE, Site, WebError, escape, games_rows, json, json_suffix, page_html, result_json, segment, svg,
    text,
};
use crate::store::{BotStatus, CompetitionRow};
use axum::extract::{Path, Query, State};
use axum::response::{Html, IntoResponse, Response};
use std::fmt::Write as _;

/// Games a page of the games list holds.
const PAGE_GAMES: i64 = 50;
/// Newest games on the front and competition pages.
const RECENT: i64 = 20;

/// Everything a competition's page shows, as JSON.
async fn snapshot(site: &Site, c: &CompetitionRow, bots: &Bots) -> Result<serde_json::Value, WebError> {
    let store = &site.store;
    let fit = site.standings.latest_fit(c).await?;
    let entrants = store.entrants(c.id).await?;
    let (names, redactor) = (&bots.names, &bots.redactor);
    // Bots out of play, by name, with why: the table marks them.
    let out_of_play: serde_json::Map<String, serde_json::Value> = entrants
        .iter()
        .filter(|b| b.status != BotStatus::Active)
        .map(|b| {
            (
                b.name.clone(),
                serde_json::json!({"status": b.status, "reason": redactor.text(&b.status_reason)}),
            )
        })
        .collect();
    let games = store.game_count(c.id).await?;
    // A competition that reached its `max_games` is finished, though open.
    let status = if c.max_games > 0 && games >= c.max_games {
        "finished".to_owned()
    } else {
        c.status.to_string()
    };
    let activity = store.activity(c.id).await?;
    let recent: Vec<serde_json::Value> = store
        .recent(c.id, RECENT)
        .await?
        .iter()
        .map(|r| result_json(r, names))
        .collect();
    Ok(serde_json::json!({
        "name": c.name,
        "game": c.game,
        "options": c.options,
        "seats": c.seats,
        "format": c.format,
        "time": c.time,
        "status": status,
        "max_games": c.max_games,
        "games": games,
        "activity": activity,
        "out_of_play": out_of_play,
        "standings": *fit.standings,
        "recent": recent,
    }))
}

async fn front_snapshot(site: &Site) -> Result<serde_json::Value, WebError> {
    let bots = Bots::read(site).await?;
    let mut out = Vec::new();
    for c in site.store.competitions().await? {
        out.push(snapshot(site, &c, &bots).await?);
    }
    Ok(serde_json::json!({ "competitions": out }))
}

pub(super) async fn front_json(State(site): State<Site>) -> Result<Response, WebError> {
    Ok(json(&front_snapshot(&site).await?))
}

/// The line under a competition's name: game, options, seats, status, games.
fn summary(c: &serde_json::Value) -> String {
    let options = c["options"]
        .as_array()
        .map(|o| o.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let max = match c["max_games"].as_i64() {
        Some(m) if m > 0 => format!(" of {m}"),
        _ => String::new(),
    };
    format!(
        "{} {} · {} seats · {} · <b class=\"status\">{}</b> · {} games{max}",
        text(&c["game"]),
        escape(&options),
        c["seats"],
        text(&c["format"]),
        text(&c["status"]),
        c["games"],
    )
}

/// The standings as a table, each row's interval drawn on one shared scale.
fn standings_table(c: &serde_json::Value) -> String {
    let st = &c["standings"];
    let rows = st["rows"].as_array().map(Vec::as_slice).unwrap_or_default();
    let cells: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| {
            (
                r["elo"].as_f64().unwrap_or(0.0),
                r["ci95"].as_f64().unwrap_or(f64::INFINITY),
            )
        })
        .collect();
    let scale = svg::interval_scale(&cells);
    let mut h = format!(
        "<p class=\"note\">Elo: {}. Bars: each bot's 95% interval on one scale; dashed: 0.</p>\
         <table class=\"standings\"><caption>Standings</caption>\
         <thead><tr><th>rank</th><th class=\"name\">bot</th><th>Elo</th><th>±95%</th><th>interval</th><th>games</th><th>score</th>\
         <th>W/D/L</th><th>avg. rank</th></tr></thead><tbody>",
        text(&st["anchor"]),
    );
    for (r, &(elo_v, ci_v)) in rows.iter().zip(&cells) {
        let separated = serde_json::from_value(r["separated"].clone()).ok().flatten();
        let (elo, ci) = rating::standings::elo_cells(elo_v, ci_v, separated);
        let name = r["name"].as_str().unwrap_or("");
        let mark = match &c["out_of_play"][name] {
            serde_json::Value::Null => String::new(),
            o => format!(
                " <abbr class=\"out\" title=\"{}\">({})</abbr>",
                text(&o["reason"]),
                text(&o["status"])
            ),
        };
        let _ = write!(
            h,
            "<tr data-bot=\"{n}\"><td>{}</td><td class=\"name\"><a href=\"/bots/{}\">{n}</a>{mark}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{:.1}%</td><td>{}/{}/{}</td><td>{:.2}</td></tr>",
            r["rank"],
            segment(name),
            escape(&elo),
            escape(&ci),
            svg::interval_bar(elo_v, ci_v, separated, scale),
            r["games"],
            r["score"].as_f64().unwrap_or(0.0),
            r["wins"],
            r["draws"],
            r["losses"],
            r["avg_rank"].as_f64().unwrap_or(0.0),
            n = escape(name),
        );
    }
    h.push_str("</tbody></table>");
    h
}

fn recent_table(c: &serde_json::Value, caption: &str) -> String {
    format!(
        "<table><caption>{caption}</caption><thead><tr><th>game</th><th>seats (place)</th><th>end</th></tr></thead><tbody>{}</tbody></table>",
        games_rows(c["recent"].as_array().map(Vec::as_slice).unwrap_or_default())
    )
}

pub(super) async fn front_page(State(site): State<Site>) -> Result<Response, WebError> {
    let snap = front_snapshot(&site).await?;
    let mut h = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>astragal ladder</title>\
         <meta http-equiv=\"refresh\" content=\"30\"><style>{STYLE}</style></head><body><main>\
         <h1>astragal ladder</h1><nav><a href=\"/api/standings.json\">JSON</a></nav>"
    );
    let comps = snap["competitions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if comps.is_empty() {
        h.push_str("<p>No competitions yet.</p>");
    }
    for c in comps {
        let name = c["name"].as_str().unwrap_or("");
        let _ = write!(
            h,
            "<section><h2><a href=\"/competitions/{}\">{}</a></h2><p>{}</p>{}{}</section>",
            segment(name),
            escape(name),
            summary(c),
            standings_table(c),
            recent_table(c, "Recent games"),
        );
    }
    h.push_str("</main></body></html>");
    Ok(Html(h).into_response())
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
    let snap = snapshot(&site, &c, &bots).await?;
    if as_json {
        return Ok(json(&snap));
    }
    let a = &snap["activity"];
    let body = format!(
        "<h1>{n}</h1><p>{}</p><ul class=\"facts\">\
         <li><b data-fact=\"games_last_hour\">{}</b> games in the last hour</li>\
         <li><b data-fact=\"workers_active\">{}</b> workers playing</li>\
         <li><b data-fact=\"groups_playing\">{}</b> groups being played</li>\
         <li><b data-fact=\"groups_waiting\">{}</b> groups waiting</li>\
         <li>time control {}</li></ul>{}{}<p><a href=\"/competitions/{s}/games\">All games</a></p>",
        summary(&snap),
        a["games_last_hour"],
        a["workers_active"],
        a["groups_playing"],
        a["groups_waiting"],
        text(&snap["time"]),
        standings_table(&snap),
        recent_table(&snap, "Newest games"),
        n = escape(&c.name),
        s = segment(&c.name),
    );
    Ok(page_html(
        &c.name,
        &format!("/competitions/{}.json", segment(&c.name)),
        &body,
    ))
}

/// Which games: older than a key, and of one bot.
#[derive(Debug, serde::Deserialize)]
pub(super) struct GamesQuery {
    before: Option<i64>,
    bot: Option<String>,
}

/// A page of a competition's games, newest first, and the key of the next page.
async fn games_snapshot(
    site: &Site,
    c: &CompetitionRow,
    q: &GamesQuery,
) -> Result<serde_json::Value, WebError> {
    let before = q.before.unwrap_or(i64::MAX);
    let store = &site.store;
    let known = Bots::read(site).await?;
    let rows = match &q.bot {
        None => store.results_before(c.id, before, PAGE_GAMES).await?,
        Some(bot) => {
            let Some(b) = known.named(bot) else {
                return Err(WebError::NotFound(format!("no bot named {:?}", escape(bot))));
            };
            // The bot's games come from the fit's index: one slice, however many.
            let fit = site.standings.latest_fit(c).await?;
            let ids = fit
                .index
                .games_of
                .get(&b.id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let end = ids.partition_point(|&id| id < before);
            let start = end.saturating_sub(PAGE_GAMES as usize);
            let mut rows = store.results_by_id(&ids[start..end]).await?;
            rows.reverse();
            rows
        }
    };
    let next = (rows.len() as i64 == PAGE_GAMES)
        .then(|| rows.last().map(|r| r.id))
        .flatten();
    Ok(serde_json::json!({
        "competition": c.name,
        "bot": q.bot,
        "games": rows.iter().map(|r| result_json(r, &known.names)).collect::<Vec<_>>(),
        "next_before": next,
    }))
}

pub(super) async fn games_json(
    State(site): State<Site>,
    Path(name): Path<String>,
    Query(q): Query<GamesQuery>,
) -> Result<Response, WebError> {
    let c = competition(&site, &name).await?;
    Ok(json(&games_snapshot(&site, &c, &q).await?))
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
    let snap = games_snapshot(&site, &c, &q).await?;
    let s = segment(&c.name);
    let bot_arg = q.bot.as_deref().map(|b| format!("bot={}", segment(b)));
    let args = |before: Option<i64>| {
        let parts: Vec<String> = before
            .map(|b| format!("before={b}"))
            .into_iter()
            .chain(bot_arg.clone())
            .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&amp;"))
        }
    };
    let whose = q
        .bot
        .as_deref()
        .map(|b| format!(" of <a href=\"/bots/{}\">{}</a>", segment(b), escape(b)))
        .unwrap_or_default();
    let games = snap["games"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut body = format!(
        "<h1>Games{whose} in <a href=\"/competitions/{s}\">{}</a></h1>\
         <table><caption>Newest first</caption><thead><tr><th>game</th><th>seats (place)</th><th>end</th></tr></thead><tbody>{}</tbody></table><p>",
        escape(&c.name),
        games_rows(games),
    );
    if q.before.is_some() {
        let _ = write!(
            body,
            "<a href=\"/competitions/{s}/games{}\">Newest</a> ",
            args(None)
        );
    }
    if let Some(next) = snap["next_before"].as_i64() {
        let _ = write!(
            body,
            "<a rel=\"next\" href=\"/competitions/{s}/games{}\">Older</a>",
            args(Some(next))
        );
    }
    if games.is_empty() {
        body.push_str("No games here.");
    }
    body.push_str("</p>");
    Ok(page_html(
        &format!("games in {}", c.name),
        &format!("/competitions/{s}/games.json{}", args(q.before)),
        &body,
    ))
}
