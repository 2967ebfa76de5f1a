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
        let names: std::collections::HashMap<i64, String> = store
            .entrants(c.id)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|b| (b.id, b.name))
            .collect();
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
            "status": c.status,
            "max_games": c.max_games,
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

async fn page(State(site): State<Site>) -> Response {
    let snap = match snapshot(&site).await {
        Ok(v) => v,
        Err(e) => return internal(e),
    };
    let mut h = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>astragal ladder</title>\
         <meta http-equiv=\"refresh\" content=\"30\">\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1em}\
         td,th{padding:2px 10px;text-align:right}td:nth-child(2),th:nth-child(2){text-align:left}</style>\
         </head><body><h1>astragal ladder</h1><p><a href=\"/api/standings.json\">JSON</a></p>",
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
            st["games"],
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
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{}/{}/{}</td><td>{:.2}</td></tr>",
                r["rank"],
                escape(r["name"].as_str().unwrap_or("")),
                escape(&elo),
                escape(&ci),
                r["games"],
                r["score"].as_f64().unwrap_or(0.0),
                r["wins"],
                r["draws"],
                r["losses"],
                r["avg_rank"].as_f64().unwrap_or(0.0),
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
                .map(|(b, r)| format!("{} ({r})", escape(b.as_str().unwrap_or(""))))
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
    h.push_str("</body></html>");
    Html(h).into_response()
}
