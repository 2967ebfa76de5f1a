//! `/competitions/{name}/games.jsonl`: every game of a competition as JSON Lines,
//! streamed, for people who analyse or replay them.
//!
//! A line is a game's record as the pages show it (redacted, the seed a string)
//! with its `game_id` added, oldest first. `after=ID` starts after a game and
//! `until=ID` stops at one, so a cut download resumes where its last whole line
//! ends. Each line reads as a record: `referee replay` plays the file through.

use super::{Bots, Site, WebError};
use crate::store::GameId;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Records read from the store at a time: memory stays flat however long the
/// competition.
const PAGE: i64 = 200;

/// The range asked for.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Range {
    /// Games with a larger id than this (default: from the first).
    #[serde(default)]
    after: GameId,
    /// Games up to this id, inclusive (default: to the newest).
    until: Option<GameId>,
}

pub(super) async fn games_jsonl(
    State(site): State<Site>,
    Path(name): Path<String>,
    range: Result<Query<Range>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, WebError> {
    let Ok(Query(range)) = range else {
        return Err(WebError::BadRequest(
            "after= and until= take game ids (whole numbers)",
        ));
    };
    let Some(c) = site.store.competitions().competition(&name).await? else {
        return Err(WebError::NotFound(format!(
            "no competition named {:?}",
            super::escape(&name)
        )));
    };
    let redactor = Arc::new(Bots::read(&site).await?.redactor);
    let until = range.until.unwrap_or(GameId(i64::MAX));
    let store = site.store.clone();
    let pages = futures_util::stream::unfold(Some(range.after), move |after| {
        let (store, redactor) = (store.clone(), redactor.clone());
        async move {
            let after = after?;
            if after >= until {
                return None;
            }
            let rows = match store.games().records(c.id, after, PAGE).await {
                Ok(rows) => rows,
                // The body ends early: the lines so far are whole, and `after=` the
                // last of them resumes.
                Err(e) => return Some((Err(std::io::Error::other(e.to_string())), None)),
            };
            let mut text = String::new();
            let mut last = after;
            for (id, json) in rows.iter().filter(|(id, _)| *id <= until) {
                last = *id;
                match line(*id, json, &redactor) {
                    Ok(l) => text.push_str(&l),
                    Err(e) => return Some((Err(e), None)),
                }
            }
            let more = rows.len() as i64 == PAGE && last < until;
            (!text.is_empty() || more).then(|| (Ok(text), more.then_some(last)))
        }
    });
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"games.jsonl\"",
            ),
        ],
        Body::from_stream(pages),
    )
        .into_response())
}

/// One game as a line: redacted, its seed a string, its id added. A stored
/// record that does not read ends the download (the body's stream error).
fn line(id: GameId, json: &str, redactor: &crate::app::redact::Redactor) -> std::io::Result<String> {
    let mut rec: referee::GameRecord = serde_json::from_str(json)
        .map_err(|e| std::io::Error::other(format!("game {id} has a corrupt record: {e}")))?;
    redactor.record(&mut rec);
    let mut v = serde_json::to_value(&rec).map_err(std::io::Error::other)?;
    v["seed"] = rec.seed.to_string().into();
    v["game_id"] = id.0.into();
    let mut l = v.to_string();
    l.push('\n');
    Ok(l)
}
