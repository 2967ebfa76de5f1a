//! The read-only web page: standings and recent games of every competition, and the
//! same as JSON. Public by design (no token): it shows nothing a worker could abuse.

use crate::cache::StandingsCache;
use crate::store::Store;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use std::fmt::Write as _;
use std::sync::Arc;

/// What the pages read: the store, and the standings cache the service shares.
#[derive(Clone)]
pub struct Site {
    store: Store,
    standings: Arc<StandingsCache>,
}

/// The routes: `/`, `/games/{id}` (the viewer), `/api/standings.json`,
/// `/api/games/{id}` (the record).
pub fn router(store: Store, standings: Arc<StandingsCache>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/games/{id}", get(game_page))
        .route("/bots/{name}", get(bot_page))
        .route("/api/standings.json", get(standings_json))
        .route("/api/games/{id}", get(game_json))
        .with_state(Site { store, standings })
}

fn escape(s: &str) -> String {
    referee::text::html_escaped(s).into_owned()
}

fn internal(e: impl std::fmt::Display) -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, format!("error: {e}\n")).into_response()
}

/// Everything the page shows, as JSON.
async fn snapshot(site: &Site) -> Result<serde_json::Value, String> {
    let store = &site.store;
    let mut out = Vec::new();
    for c in store.competitions().await.map_err(|e| e.to_string())? {
        let st = site.standings.get(&c).await.map_err(|e| e.to_string())?;
        let entrants = store.entrants(c.id).await.map_err(|e| e.to_string())?;
        let names: std::collections::HashMap<i64, String> =
            entrants.iter().map(|b| (b.id, b.name.clone())).collect();
        // Bots out of play, by name, with why: the table marks them.
        let out_of_play: serde_json::Map<String, serde_json::Value> = entrants
            .iter()
            .filter(|b| b.status != crate::store::BotStatus::Active)
            .map(|b| {
                (
                    b.name.clone(),
                    serde_json::json!({"status": b.status, "reason": b.status_reason}),
                )
            })
            .collect();
        let games = store.game_count(c.id).await.map_err(|e| e.to_string())?;
        // A competition that reached its `max_games` is finished, though open.
        let status = if c.max_games > 0 && games >= c.max_games {
            "finished".to_owned()
        } else {
            c.status.to_string()
        };
        let recent: Vec<serde_json::Value> = store
            .recent(c.id, 20)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id,
                    "group": r.group_id,
                    "rotation": r.rotation,
                    "bots": r.bots.iter().map(|b| names.get(b).cloned().unwrap_or_default()).collect::<Vec<_>>(),
                    "ranks": r.ranks,
                    "termination": r.termination,
                })
            })
            .collect();
        out.push(serde_json::json!({
            "name": c.name,
            "game": c.game,
            "options": c.options,
            "seats": c.seats,
            "status": status,
            "max_games": c.max_games,
            "games": games,
            "out_of_play": out_of_play,
            "standings": st,
            "recent": recent,
        }));
    }
    Ok(serde_json::json!({ "competitions": out }))
}

async fn standings_json(State(site): State<Site>) -> Response {
    match snapshot(&site).await {
        Ok(v) => ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response(),
        Err(e) => internal(e),
    }
}

async fn game_json(State(site): State<Site>, Path(id): Path<String>) -> Response {
    let store = &site.store;
    let Ok(id) = id.trim_end_matches(".json").parse::<i64>() else {
        return (StatusCode::BAD_REQUEST, "a game id is a number\n").into_response();
    };
    match store.record(id).await {
        Ok(Some((_, json))) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Ok(None) => (StatusCode::NOT_FOUND, format!("no game {id}\n")).into_response(),
        Err(e) => internal(e),
    }
}

/// A stored game in the viewer (`referee::view`): the same page `referee view`
/// writes, replayed from the record.
async fn game_page(State(site): State<Site>, Path(id): Path<String>) -> Response {
    let Ok(id) = id.parse::<i64>() else {
        return (StatusCode::BAD_REQUEST, "a game id is a number\n").into_response();
    };
    let json = match site.store.record(id).await {
        Ok(Some((_, json))) => json,
        Ok(None) => return (StatusCode::NOT_FOUND, format!("no game {id}\n")).into_response(),
        Err(e) => return internal(e),
    };
    // Replaying is CPU work: off the executor.
    let page = tokio::task::spawn_blocking(move || {
        let rec: referee::GameRecord = serde_json::from_str(&json).map_err(|e| e.to_string())?;
        let names: Vec<String> = rec
            .seats
            .iter()
            .map(|s| s.entrant.clone().unwrap_or_else(|| s.name.clone()))
            .collect();
        referee::view::html(&rec, &format!("game {id}: {}", names.join(" v "))).map_err(|e| e.to_string())
    })
    .await;
    match page {
        Ok(Ok(html)) => Html(html).into_response(),
        Ok(Err(e)) => internal(format!("game {id} does not replay: {e}")),
        Err(e) => internal(e),
    }
}

/// Everything a bot's page shows: never its command line or environment.
async fn bot_snapshot(site: &Site, name: &str) -> Result<Option<serde_json::Value>, String> {
    let store = &site.store;
    let all = store.bots().await.map_err(|e| e.to_string())?;
    let Some(bot) = all.iter().find(|b| b.name == name) else {
        return Ok(None);
    };
    let names: std::collections::HashMap<i64, &str> = all.iter().map(|b| (b.id, b.name.as_str())).collect();
    // Its versions, oldest first: follow `previous` back, and the rows that name it forward.
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
    for c in store.competitions().await.map_err(|e| e.to_string())? {
        if c.game != bot.game {
            continue;
        }
        // The rating as last fitted (it may lag the newest games by a refit).
        let st = site.standings.get(&c).await.map_err(|e| e.to_string())?;
        let row = st.rows.iter().find(|r| r.name == bot.name);
        // Results against each opponent it met, and its newest games.
        let results = store.results(c.id).await.map_err(|e| e.to_string())?;
        let mut against: std::collections::BTreeMap<&str, [u64; 3]> = std::collections::BTreeMap::new();
        let mut recent = Vec::new();
        for r in results.iter().rev() {
            let Some(me) = r.bots.iter().position(|&b| b == bot.id) else {
                continue;
            };
            for (s, other) in r.bots.iter().enumerate().filter(|&(s, _)| s != me) {
                let name = names.get(other).copied().unwrap_or("?");
                let k = match r.ranks[me].cmp(&r.ranks[s]) {
                    std::cmp::Ordering::Less => 0,
                    std::cmp::Ordering::Equal => 1,
                    std::cmp::Ordering::Greater => 2,
                };
                against.entry(name).or_default()[k] += 1;
            }
            if recent.len() < 20 {
                recent.push(serde_json::json!({
                    "id": r.id,
                    "seats": r.bots.iter().map(|b| names.get(b).copied().unwrap_or("?")).collect::<Vec<_>>(),
                    "place": r.ranks[me],
                    "termination": r.termination,
                }));
            }
        }
        if against.is_empty() {
            continue;
        }
        let played: u64 =
            against.values().map(|[w, d, l]| w + d + l).sum::<u64>() / (c.seats as u64 - 1).max(1);
        competitions.push(serde_json::json!({
            "competition": c.name,
            "rank": row.map(|r| r.rank),
            "elo": row.map(|r| r.elo),
            "ci95": row.map(|r| r.ci95),
            "games": played,
            "score": row.map(|r| r.score),
            "forfeits": row.map(|r| r.forfeits),
            "against": against.iter().map(|(n, [w, d, l])| serde_json::json!({"opponent": n, "wins": w, "draws": d, "losses": l})).collect::<Vec<_>>(),
            "recent": recent,
        }));
    }
    Ok(Some(serde_json::json!({
        "name": bot.name,
        "game": bot.game,
        "status": bot.status,
        "status_reason": bot.status_reason,
        "version": bot.version,
        "versions": versions.iter().map(|v| serde_json::json!({"name": v.name, "version": v.version, "status": v.status})).collect::<Vec<_>>(),
        "competitions": competitions,
    })))
}

/// `/bots/{name}` (a page) and `/bots/{name}.json`.
async fn bot_page(State(site): State<Site>, Path(name): Path<String>) -> Response {
    let (name, json) = match name.strip_suffix(".json") {
        Some(n) => (n.to_owned(), true),
        None => (name, false),
    };
    let snap = match bot_snapshot(&site, &name).await {
        Ok(Some(v)) => v,
        Ok(None) => {
            return (
                StatusCode::NOT_FOUND,
                format!("no bot named {:?}\n", escape(&name)),
            )
                .into_response();
        }
        Err(e) => return internal(e),
    };
    if json {
        return ([(header::CONTENT_TYPE, "application/json")], snap.to_string()).into_response();
    }
    let text = |v: &serde_json::Value| escape(v.as_str().unwrap_or(""));
    let mut h = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{name} · astragal ladder</title><style>{STYLE}</style></head><body><main>\
         <p><a href=\"/\">ladder</a> · <a href=\"/bots/{name}.json\">JSON</a></p><h1>{name}</h1>\
         <p>{game} · version {version} · <b>{status}</b>{reason}</p>",
        name = text(&snap["name"]),
        game = text(&snap["game"]),
        version = snap["version"],
        status = text(&snap["status"]),
        reason = match snap["status_reason"].as_str() {
            Some(r) if !r.is_empty() => format!(" — {}", escape(r)),
            _ => String::new(),
        },
    );
    let versions = snap["versions"].as_array().cloned().unwrap_or_default();
    if versions.len() > 1 {
        h.push_str("<p>Versions: ");
        let links: Vec<String> = versions
            .iter()
            .map(|v| {
                format!(
                    "<a href=\"/bots/{n}\">{n}</a> ({})",
                    text(&v["status"]),
                    n = text(&v["name"])
                )
            })
            .collect();
        h.push_str(&links.join(" → "));
        h.push_str("</p>");
    }
    for c in snap["competitions"].as_array().cloned().unwrap_or_default() {
        let rating = match c["elo"].as_f64() {
            Some(elo) => {
                let (elo, ci) =
                    crate::standings::elo_cells(elo, c["ci95"].as_f64().unwrap_or(f64::INFINITY), None);
                format!(
                    "rank {} · Elo {} ± {} · score {:.1}% · {} forfeits · ",
                    c["rank"],
                    escape(&elo),
                    escape(&ci),
                    c["score"].as_f64().unwrap_or(0.0),
                    c["forfeits"]
                )
            }
            None => "not rated yet · ".to_owned(),
        };
        let _ = write!(
            h,
            "<h2>{}</h2><p>{rating}{} games</p>\
             <table><caption>Against each opponent</caption><thead><tr><th>opponent</th><th>won</th><th>drawn</th><th>lost</th></tr></thead><tbody>",
            text(&c["competition"]),
            c["games"],
        );
        for a in c["against"].as_array().cloned().unwrap_or_default() {
            let _ = write!(
                h,
                "<tr><td><a href=\"/bots/{n}\">{n}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                a["wins"],
                a["draws"],
                a["losses"],
                n = text(&a["opponent"]),
            );
        }
        h.push_str("</tbody></table><table><caption>Newest games</caption><thead><tr><th>game</th><th>seats</th><th>place</th><th>end</th></tr></thead><tbody>");
        for g in c["recent"].as_array().cloned().unwrap_or_default() {
            let seats: Vec<String> = g["seats"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(&text)
                .collect();
            let _ = write!(
                h,
                "<tr><td><a href=\"/games/{id}\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                seats.join(", "),
                g["place"],
                text(&g["termination"]),
                id = g["id"],
            );
        }
        h.push_str("</tbody></table>");
    }
    h.push_str("</main></body></html>");
    Html(h).into_response()
}

/// The pages' shared look: readable on a 390 px phone (tables scroll, not the page).
const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#fafbfc}\
main{max-width:960px;margin:0 auto;padding:12px 16px}table{border-collapse:collapse;margin:0 0 1em;display:block;overflow-x:auto}\
caption{text-align:left;font-weight:600;padding:4px 0}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #d5d9e2}\
td:first-child,th:first-child{text-align:left}a{color:#2d5fd3}";

async fn page(State(site): State<Site>) -> Response {
    let snap = match snapshot(&site).await {
        Ok(v) => v,
        Err(e) => return internal(e),
    };
    let mut h = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>astragal ladder</title>\
         <meta http-equiv=\"refresh\" content=\"30\"><style>{STYLE}</style></head><body><main>\
         <h1>astragal ladder</h1><p><a href=\"/api/standings.json\">JSON</a></p>"
    );
    let comps = snap["competitions"].as_array().cloned().unwrap_or_default();
    if comps.is_empty() {
        h.push_str("<p>No competitions yet.</p>");
    }
    for c in comps {
        let st = &c["standings"];
        let _ = write!(
            h,
            "<h2>{}</h2><p>{} {} · {} seats · {} · {} games · Elo: {}</p>",
            escape(c["name"].as_str().unwrap_or("")),
            escape(c["game"].as_str().unwrap_or("")),
            escape(
                &c["options"]
                    .as_array()
                    .map(|o| o.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(" "))
                    .unwrap_or_default()
            ),
            c["seats"],
            escape(c["status"].as_str().unwrap_or("")),
            c["games"],
            escape(st["anchor"].as_str().unwrap_or("")),
        );
        h.push_str("<table><tr><th>rank</th><th>bot</th><th>Elo</th><th>±95%</th><th>games</th><th>score</th><th>W/D/L</th><th>avg. rank</th></tr>");
        for r in st["rows"].as_array().cloned().unwrap_or_default() {
            let separated = serde_json::from_value(r["separated"].clone()).ok().flatten();
            let (elo, ci) = crate::standings::elo_cells(
                r["elo"].as_f64().unwrap_or(0.0),
                r["ci95"].as_f64().unwrap_or(f64::INFINITY),
                separated,
            );
            let _ = write!(
                h,
                "<tr><td>{}</td><td><a href=\"/bots/{name}\">{name}</a>{mark}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{}/{}/{}</td><td>{:.2}</td></tr>",
                r["rank"],
                escape(&elo),
                escape(&ci),
                r["games"],
                r["score"].as_f64().unwrap_or(0.0),
                r["wins"],
                r["draws"],
                r["losses"],
                r["avg_rank"].as_f64().unwrap_or(0.0),
                name = escape(r["name"].as_str().unwrap_or("")),
                mark = match &c["out_of_play"][r["name"].as_str().unwrap_or("")] {
                    serde_json::Value::Null => String::new(),
                    o => format!(
                        " <abbr title=\"{}\">({})</abbr>",
                        escape(o["reason"].as_str().unwrap_or("")),
                        escape(o["status"].as_str().unwrap_or(""))
                    ),
                },
            );
        }
        h.push_str(
            "</table><h3>Recent games</h3><table><tr><th>game</th><th>seats (place)</th><th>end</th></tr>",
        );
        for g in c["recent"].as_array().cloned().unwrap_or_default() {
            let seats: Vec<String> = g["bots"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .zip(g["ranks"].as_array().cloned().unwrap_or_default())
                .map(|(b, r)| {
                    format!(
                        "<a href=\"/bots/{n}\">{n}</a> ({r})",
                        n = escape(b.as_str().unwrap_or(""))
                    )
                })
                .collect();
            let _ = write!(
                h,
                "<tr><td><a href=\"/games/{id}\">{id}</a> (<a href=\"/api/games/{id}\">JSON</a>)</td><td>{}</td><td>{}</td></tr>",
                seats.join(", "),
                escape(g["termination"].as_str().unwrap_or("")),
                id = g["id"],
            );
        }
        h.push_str("</table>");
    }
    h.push_str("</main></body></html>");
    Html(h).into_response()
}
