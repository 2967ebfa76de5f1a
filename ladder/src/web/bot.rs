//! A bot's page: its status and versions, and per competition its rating over
//! time, results against each opponent, faults by kind with their details, and
//! its newest games. Never its command line or environment.

use super::{
    Bots, Site, WebError, escape, games_rows, json, json_suffix, page_html, result_json, segment, svg, text,
};
use crate::store::RatingPoint;
use axum::extract::{Path, State};
use axum::response::Response;
use std::fmt::Write as _;

/// Newest games and faults listed per competition (the games list pages on).
const NEWEST: usize = 20;
const NEWEST_FAULTS: i64 = 10;

/// Everything a bot's page shows, as JSON.
async fn snapshot(site: &Site, name: &str) -> Result<Option<serde_json::Value>, WebError> {
    let store = &site.store;
    let known = Bots::read(site).await?;
    let (all, names, redactor) = (&known.all, &known.names, &known.redactor);
    let Some(bot) = known.named(name) else {
        return Ok(None);
    };
    let name_of = |id: &i64| names.get(id).cloned().unwrap_or_else(|| "?".into());
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
    for c in store.competitions().await? {
        if c.game != bot.game {
            continue;
        }
        // As of the last fit (a few seconds old at most while games arrive).
        let fit = site.standings.latest_fit(&c).await?;
        let Some(ids) = fit.index.games_of.get(&bot.id) else {
            continue;
        };
        let row = fit.standings.rows.iter().find(|r| r.name == bot.name);
        let mut against: Vec<(String, [u64; 3])> = fit
            .index
            .against
            .iter()
            .filter(|((me, _), _)| *me == bot.id)
            .map(|((_, other), wdl)| (name_of(other), *wdl))
            .collect();
        against.sort();
        let mut recent = store
            .results_by_id(&ids[ids.len().saturating_sub(NEWEST)..])
            .await?;
        recent.reverse();
        let history = store.rating_history(c.id, bot.id).await?;
        let tally = store.fault_tally(c.id, bot.id).await?;
        let faults: Vec<serde_json::Value> = store
            .recent_faults(c.id, bot.id, NEWEST_FAULTS)
            .await?
            .into_iter()
            .map(|f| {
                serde_json::json!({
                    "game": f.game_id,
                    "kind": f.kind,
                    "count": f.count,
                    "at_move": f.at_move,
                    "detail": redactor.text(&f.detail),
                })
            })
            .collect();
        competitions.push(serde_json::json!({
            "competition": c.name,
            "rank": row.map(|r| r.rank),
            "elo": row.map(|r| r.elo),
            "ci95": row.map(|r| r.ci95),
            "separated": row.and_then(|r| r.separated),
            "games": ids.len(),
            "score": row.map(|r| r.score),
            "forfeits": row.map(|r| r.forfeits),
            "rating_history": history,
            "against": against.iter().map(|(n, [w, d, l])| serde_json::json!({"opponent": n, "wins": w, "draws": d, "losses": l})).collect::<Vec<_>>(),
            "faults_by_kind": tally,
            "newest_faults": faults,
            "recent": recent.iter().map(|r| {
                let mut g = result_json(r, names);
                g["place"] = r.bots.iter().position(|&b| b == bot.id).map(|s| r.ranks[s]).into();
                g
            }).collect::<Vec<_>>(),
        }));
    }
    Ok(Some(serde_json::json!({
        "name": bot.name,
        "game": bot.game,
        "status": bot.status,
        "status_reason": redactor.text(&bot.status_reason),
        "version": bot.version,
        "versions": versions.iter().map(|v| serde_json::json!({"name": v.name, "version": v.version, "status": v.status})).collect::<Vec<_>>(),
        "competitions": competitions,
    })))
}

/// `/bots/{name}` (a page) and `/bots/{name}.json`.
pub(super) async fn page(State(site): State<Site>, Path(name): Path<String>) -> Result<Response, WebError> {
    let (name, as_json) = json_suffix(name);
    let Some(snap) = snapshot(&site, &name).await? else {
        return Err(WebError::NotFound(format!("no bot named {:?}", escape(&name))));
    };
    if as_json {
        return Ok(json(&snap));
    }
    let mut h = format!(
        "<h1>{}</h1><p>{} · version {} · <b class=\"status\">{}</b>{}</p>",
        text(&snap["name"]),
        text(&snap["game"]),
        snap["version"],
        text(&snap["status"]),
        match snap["status_reason"].as_str() {
            Some(r) if !r.is_empty() => format!(" — {}", escape(r)),
            _ => String::new(),
        },
    );
    let versions = snap["versions"].as_array().map(Vec::as_slice).unwrap_or_default();
    if versions.len() > 1 {
        let links: Vec<String> = versions
            .iter()
            .map(|v| {
                let n = v["name"].as_str().unwrap_or("");
                format!(
                    "<a href=\"/bots/{}\">{}</a> ({})",
                    segment(n),
                    escape(n),
                    text(&v["status"])
                )
            })
            .collect();
        let _ = write!(h, "<p>Versions: {}</p>", links.join(" → "));
    }
    let competitions = snap["competitions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if competitions.is_empty() {
        h.push_str("<p>No games yet.</p>");
    }
    for c in competitions {
        h.push_str(&competition_section(&snap, c));
    }
    Ok(page_html(&name, &format!("/bots/{}.json", segment(&name)), &h))
}

/// One competition's part of a bot's page.
fn competition_section(bot: &serde_json::Value, c: &serde_json::Value) -> String {
    let rating = match c["elo"].as_f64() {
        Some(elo) => {
            let separated = serde_json::from_value(c["separated"].clone()).ok().flatten();
            let (elo, ci) =
                rating::standings::elo_cells(elo, c["ci95"].as_f64().unwrap_or(f64::INFINITY), separated);
            format!(
                "rank {} · Elo <b>{}</b>{} · score {:.1}% · {} forfeits · ",
                c["rank"],
                escape(&elo),
                // A separated bot's Elo is a bound, with no interval to give.
                if separated.is_some() {
                    String::new()
                } else {
                    format!(" ± {}", escape(&ci))
                },
                c["score"].as_f64().unwrap_or(0.0),
                c["forfeits"]
            )
        }
        None => "not rated yet · ".to_owned(),
    };
    let comp = c["competition"].as_str().unwrap_or("");
    let history: Vec<RatingPoint> = serde_json::from_value(c["rating_history"].clone()).unwrap_or_default();
    let mut h = format!(
        "<section><h2><a href=\"/competitions/{}\">{}</a></h2><p>{rating}{} games</p>\
         <figure><figcaption>Elo as the competition's games were played (band: its 95% interval)</figcaption>{}</figure>\
         <table><caption>Against each opponent</caption><thead><tr><th>opponent</th><th>won</th><th>drawn</th><th>lost</th></tr></thead><tbody>",
        segment(comp),
        escape(comp),
        c["games"],
        svg::rating_chart(&history),
    );
    for a in c["against"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let n = a["opponent"].as_str().unwrap_or("");
        let _ = write!(
            h,
            "<tr><td><a href=\"/bots/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            segment(n),
            escape(n),
            a["wins"],
            a["draws"],
            a["losses"],
        );
    }
    h.push_str("</tbody></table>");
    let tally = c["faults_by_kind"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if tally.is_empty() {
        h.push_str("<p>No faults.</p>");
    } else {
        h.push_str(
            "<table class=\"faults\"><caption>Faults by kind</caption><thead><tr><th>kind</th><th>faults</th><th>games</th></tr></thead><tbody>",
        );
        for t in tally {
            let _ = write!(
                h,
                "<tr data-kind=\"{k}\"><td>{k}</td><td>{}</td><td>{}</td></tr>",
                t["faults"],
                t["games"],
                k = text(&t["kind"]),
            );
        }
        h.push_str(
            "</tbody></table><table class=\"faults\"><caption>Newest faults</caption><thead><tr><th>game</th><th>kind</th><th>times</th><th>at move</th></tr></thead><tbody>",
        );
        for f in c["newest_faults"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let _ = write!(
                h,
                "<tr class=\"head\"><td><a href=\"/games/{id}\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>\
                 <tr><td colspan=\"4\" class=\"detail\">{}</td></tr>",
                text(&f["kind"]),
                f["count"],
                f["at_move"],
                text(&f["detail"]),
                id = f["game"],
            );
        }
        h.push_str("</tbody></table>");
    }
    let name = bot["name"].as_str().unwrap_or("");
    let _ = write!(
        h,
        "<table><caption>Newest games</caption><thead><tr><th>game</th><th>seats (place)</th><th>end</th></tr></thead><tbody>{}</tbody></table>\
         <p><a href=\"/competitions/{}/games?bot={}\">All its games</a></p></section>",
        games_rows(c["recent"].as_array().map(Vec::as_slice).unwrap_or_default()),
        segment(comp),
        segment(name),
    );
    h
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
        let bot = serde_json::json!({"name": "b"});
        let c = serde_json::json!({
            "competition": "c",
            "elo": 10.0, "ci95": 20.0, "rank": 1, "score": 50.0, "forfeits": 0, "games": 1,
            "rating_history": [],
            "against": [{"opponent": evil, "wins": 1, "draws": 0, "losses": 0}],
            "faults_by_kind": [{"kind": evil, "faults": 1, "games": 1}],
            "newest_faults": [{"game": 1, "kind": evil, "count": 1, "at_move": 3,
                               "detail": format!("illegal move {evil:?}: no such move")}],
            "recent": [{"id": 1, "bots": [evil, "b"], "ranks": [1, 2], "termination": evil}],
        });
        let html = competition_section(&bot, &c);
        assert!(!html.contains("<img") && !html.contains("<script"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"), "{html}");
    }
}
