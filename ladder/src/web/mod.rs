//! The public web pages: every competition's standings, a page per competition
//! and per bot, every game in the viewer, and each page as JSON too. Public by
//! design (no token): they show nothing a worker could abuse, and never a bot's
//! command line or environment ([`redact`]).
//!
//! Each page is one `Serialize` view model (`CompetitionView`, `GamesView`,
//! `BotView`, ...): the `.json` answer is that value, and the page is a maud
//! template over it, which escapes every interpolated value unless it is marked
//! `PreEscaped` (only the charts this module draws from numbers are).
//!
//! A page reads the standings as last fit ([`StandingsCache::latest_fit`]: at most
//! a few seconds old while games arrive) and a bounded number of rows through an
//! index, so its cost does not grow with the games played.
//!
//! | page | JSON |
//! |---|---|
//! | `/` | `/api/standings.json` |
//! | `/competitions/{name}` | `/competitions/{name}.json` |
//! | `/competitions/{name}/games?before=ID&bot=NAME` | `/competitions/{name}/games.json?...` |
//! | `/bots/{name}` | `/bots/{name}.json` |
//! | `/games/{id}` (the viewer) | `/api/games/{id}` (the record) |
//! | | `/competitions/{name}/games.jsonl?after=ID&until=ID` (every record, streamed) |

// A handler's early return is the response itself, built once per request.
#![allow(clippy::result_large_err)]

pub mod author;
mod bot;
mod competition;
mod download;
mod season;
mod svg;

use crate::app::cache::StandingsCache;
use crate::app::redact::{self, Redactor};
use crate::store::{BotId, GameId, GroupId, ResultRow, Store};
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// What the pages read: the store, the standings cache the service shares, and
/// the admin token (to keep it off every page).
#[derive(Clone)]
pub struct Site {
    store: Store,
    standings: Arc<StandingsCache>,
    admin_token: Option<Arc<str>>,
}

/// The routes (see the module's table). `admin_token` is never shown, wherever a
/// bot may have written it.
pub fn router(store: Store, standings: Arc<StandingsCache>, admin_token: Option<&str>) -> Router {
    Router::new()
        .route("/", get(competition::front_page))
        .route("/api/standings.json", get(competition::front_json))
        .route("/competitions/{name}", get(competition::page))
        .route("/competitions/{name}/games", get(competition::games_page))
        .route("/competitions/{name}/games.json", get(competition::games_json))
        .route("/competitions/{name}/games.jsonl", get(download::games_jsonl))
        .route("/competitions/{name}/season.jsonl", get(season::record))
        .route("/bots/{name}", get(bot::page))
        .route("/games/{id}", get(game_page))
        .route("/api/games/{id}", get(game_json))
        .layer(axum::middleware::map_response(security_headers))
        // A page that the store cannot answer in time is refused, not waited on
        // for ever (a download's body streams on after its first page).
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            PAGE_TIMEOUT,
        ))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(Site {
            store,
            standings,
            admin_token: admin_token.map(Arc::from),
        })
}

/// Text for HTML, where a message is built outside a template (a 404's words).
fn escape(s: &str) -> String {
    referee::text::html_escaped(s).into_owned()
}

/// What a name keeps as it is in a link's path segment: letters, digits and
/// `-._~@`; everything else (`#`, `/`, `?`, spaces, any non-ASCII byte) is
/// percent-encoded.
const SEGMENT_KEEPS: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'@');

/// A name as one path segment of a link (names may hold `#`).
fn segment(name: &str) -> String {
    percent_encoding::utf8_percent_encode(name, SEGMENT_KEEPS).to_string()
}

/// How long a page may take before it is refused (503).
pub const PAGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Why a page is answered with an error. A handler returns `Result<Response,
/// WebError>` and uses `?`; each kind says itself as a status and one line.
#[derive(Debug)]
pub(super) enum WebError {
    /// 404: what is not there (the caller escapes what it quotes of the visitor).
    NotFound(String),
    /// 400: how the address is written.
    BadRequest(&'static str),
    /// A failure of the server's own (the store, a corrupt record): logged for the
    /// host, and said to the visitor without its text, which may name tables,
    /// queries or a record's contents.
    Internal(String),
}

impl WebError {
    /// The server's own failure, with its text for the log.
    pub(super) fn internal(e: impl std::fmt::Display) -> WebError {
        WebError::Internal(e.to_string())
    }
}

impl From<crate::store::StoreError> for WebError {
    fn from(e: crate::store::StoreError) -> WebError {
        WebError::internal(e)
    }
}

impl From<crate::local::tournament::TournamentError> for WebError {
    fn from(e: crate::local::tournament::TournamentError) -> WebError {
        WebError::internal(e)
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        match self {
            WebError::NotFound(what) => (StatusCode::NOT_FOUND, format!("{what}\n")).into_response(),
            WebError::BadRequest(how) => (StatusCode::BAD_REQUEST, format!("{how}\n")).into_response(),
            WebError::Internal(e) => {
                tracing::error!("a page failed: {e}");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the server failed to make this page (its log says why)\n",
                )
                    .into_response()
            }
        }
    }
}

/// A view model as the page's JSON.
fn json<T: Serialize>(v: &T) -> Result<Response, WebError> {
    let text = serde_json::to_string(v).map_err(WebError::internal)?;
    Ok(([(header::CONTENT_TYPE, "application/json")], text).into_response())
}

/// A rendered template as the answer.
fn html_page(markup: Markup) -> Response {
    Html(markup.into_string()).into_response()
}

/// `NAME.json` → (`NAME`, true); `NAME` → (`NAME`, false).
fn json_suffix(name: String) -> (String, bool) {
    match name.strip_suffix(".json") {
        Some(n) => (n.to_owned(), true),
        None => (name, false),
    }
}

/// A whole page in the shared look, with a link to its JSON.
/// Text an author's bot or an author wrote (a log, a report, a reason), for a
/// page: escaped as HTML as any text is, and each character a reader cannot see
/// ([`referee::text::is_invisible`]: a bidi override or isolate, a zero-width
/// character, a line or paragraph separator, a control) shown in its place as a
/// marked escape (`\u{202e}` on red), so that none reorders or hides what is
/// around it. A log's line feeds and tabs stay.
pub(crate) struct Marked<'a>(pub &'a str);

impl maud::Render for Marked<'_> {
    fn render_to(&self, buf: &mut String) {
        use std::fmt::Write as _;
        for c in self.0.chars() {
            match c {
                '\n' | '\t' => buf.push(c),
                c if referee::text::is_invisible(c) => {
                    let _ = write!(
                        buf,
                        "<span class=\"invisible\" title=\"a character you cannot see: U+{code:04X}\" \
                         style=\"color:#b3261e;background:#fde7e4;border:1px solid #b3261e;border-radius:3px;\
                         font:.85em ui-monospace,monospace;padding:0 2px\">\\u{{{code:x}}}</span>",
                        code = c as u32
                    );
                }
                '&' => buf.push_str("&amp;"),
                '<' => buf.push_str("&lt;"),
                '>' => buf.push_str("&gt;"),
                '"' => buf.push_str("&quot;"),
                '\'' => buf.push_str("&#39;"),
                c => buf.push(c),
            }
        }
    }
}

fn page_html(title: &str, json_href: &str, body: Markup) -> Response {
    html_page(html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · astragal ladder" }
                style { (PreEscaped(STYLE)) }
            }
            body { main {
                nav { a href="/" { "ladder" } " · " a href=(json_href) { "JSON" } }
                (body)
            } }
        }
    })
}

/// The pages' shared look: readable on a 390 px phone (wide tables scroll inside
/// themselves, not the page; charts scale to the width).
const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#fafbfc}\
main{max-width:980px;margin:0 auto;padding:12px 16px}h1{font-size:1.5em;margin:.4em 0}h2{font-size:1.2em;margin:1.2em 0 .3em}\
nav{font-size:.9em}table{border-collapse:collapse;margin:0 0 1em;display:block;overflow-x:auto;max-width:100%}\
caption{text-align:left;font-weight:600;padding:4px 0}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #d5d9e2;white-space:nowrap}\
td:first-child,th:first-child,td.name,th.name{text-align:left}td.detail{white-space:pre-wrap;word-break:break-word;text-align:left;color:#3d4453;font-size:.92em;padding-bottom:6px}\
table.faults tr.head td{border-bottom:none}figure{margin:0 0 1em}figcaption{font-size:.9em;color:#5a6170}a{color:#2d5fd3}\
.facts{display:flex;flex-wrap:wrap;gap:6px 18px;padding:0;list-style:none}.facts b{font-size:1.15em}\
.out,.waiting{color:#8a4b00}code{overflow-wrap:anywhere}code.hash{word-break:break-all}.winner{color:#1e6b2f}pre.log{white-space:pre-wrap;overflow-wrap:anywhere;max-width:100%;box-sizing:border-box;\
margin:0 0 1em;padding:8px;background:#fff;border:1px solid #d5d9e2;font-size:.88em}.note{font-size:.9em;color:#5a6170;margin:.2em 0}.chart{width:100%;max-width:560px;height:auto;background:#fff;border:1px solid #d5d9e2}\
.chart .grid{stroke:#e4e7ee}.chart .tick{font-size:13px;fill:#5a6170}.chart .band{fill:#2d5fd3;fill-opacity:.15}\
.chart .line{fill:none;stroke:#2d5fd3;stroke-width:2}.chart circle{fill:#2d5fd3}\
.bar .zero{stroke:#b9bfcc;stroke-dasharray:2 2}.bar .ci{stroke:#2d5fd3;stroke-width:3}.bar circle{fill:#1d2330}.bar .end{stroke:#1d2330;stroke-width:2}\
@media (max-width:520px){td,th{padding:3px 5px}.bar{width:84px;height:12px}main{padding:10px}\
.standings .out{display:block;font-size:.85em}}";

/// Every registered bot, read once per request: names by key for showing
/// results, and what no page may show of them.
struct Bots {
    all: Vec<crate::store::BotRow>,
    names: HashMap<BotId, String>,
    redactor: Redactor,
}

impl Bots {
    async fn read(site: &Site) -> Result<Bots, WebError> {
        let all = site.store.bots().all().await?;
        let names = all.iter().map(|b| (b.id, b.name.clone())).collect();
        let host = redact::HostSecrets {
            admin_token: site.admin_token.as_deref().map(str::to_owned),
            token_hashes: site.store.workers().token_hashes().await?,
        };
        let redactor = Redactor::new(host);
        Ok(Bots { all, names, redactor })
    }

    fn named(&self, name: &str) -> Option<&crate::store::BotRow> {
        self.all.iter().find(|b| b.name == name)
    }
}

/// A game as the pages list it: seats by name.
#[derive(Debug, Clone, Serialize)]
struct GameView {
    id: GameId,
    group: GroupId,
    rotation: i64,
    /// Bots by seat.
    bots: Vec<String>,
    /// Places by seat.
    ranks: Vec<u32>,
    termination: referee::Termination,
}

impl GameView {
    fn of(r: &ResultRow, names: &HashMap<BotId, String>) -> GameView {
        GameView {
            id: GameId(r.id),
            group: GroupId(r.group_id),
            rotation: r.rotation,
            bots: r
                .bots
                .iter()
                .map(|&b| names.get(&BotId(b)).cloned().unwrap_or_default())
                .collect(),
            ranks: r.ranks.clone(),
            termination: r.termination,
        }
    }
}

/// A link to a bot's page.
fn bot_link(name: &str) -> Markup {
    html! { a href={ "/bots/" (segment(name)) } { (name) } }
}

/// A table of games: id (viewer and record), seats with places, the end.
fn games_table<'a>(caption: &str, games: impl IntoIterator<Item = &'a GameView>) -> Markup {
    games_table_at(caption, games, "/games/")
}

/// [`games_table`], each game's link to `games_at` and its id.
fn games_table_at<'a>(
    caption: &str,
    games: impl IntoIterator<Item = &'a GameView>,
    games_at: &str,
) -> Markup {
    html! {
        table {
            caption { (caption) }
            thead { tr { th { "game" } th { "seats (place)" } th { "end" } } }
            tbody {
                @for g in games {
                    tr data-game=(g.id) {
                        td { a href={ (games_at) (g.id) } { (g.id) } " (" a href={ "/api/games/" (g.id) } { "JSON" } ")" }
                        td {
                            @for (k, (bot, place)) in g.bots.iter().zip(&g.ranks).enumerate() {
                                @if k > 0 { ", " }
                                (bot_link(bot)) " (" (place) ")"
                            }
                        }
                        td { (g.termination) }
                    }
                }
            }
        }
    }
}

/// A stored record as the public sees it ([`Redactor::record`]).
async fn public_record(site: &Site, id: GameId) -> Result<referee::GameRecord, WebError> {
    Ok(public_record_in(site, id).await?.1)
}

/// [`public_record`], with the competition it was played in.
async fn public_record_in(
    site: &Site,
    id: GameId,
) -> Result<(crate::store::CompetitionId, referee::GameRecord), WebError> {
    let Some((competition, json)) = site.store.games().record(id).await? else {
        return Err(WebError::NotFound(format!("no game {id}")));
    };
    let redactor = Bots::read(site).await?.redactor;
    let mut rec: referee::GameRecord = serde_json::from_str(&json)
        .map_err(|e| WebError::internal(format!("game {id} has a corrupt record: {e}")))?;
    redactor.record(&mut rec);
    Ok((competition, rec))
}

/// A game id as the pages write it: decimal digits, no sign, no leading zero
/// (`/games/+1` and `/games/01` are not `/games/1`: one page, one address).
fn game_id(id: &str) -> Result<GameId, WebError> {
    let canonical = !id.is_empty()
        && id.len() <= 18
        && id.bytes().all(|b| b.is_ascii_digit())
        && (id == "0" || !id.starts_with('0'));
    canonical
        .then(|| id.parse::<i64>().ok())
        .flatten()
        .map(GameId)
        .ok_or(WebError::BadRequest(
            "a game id is a number, written as the pages write it",
        ))
}

/// Headers on every answer: no content sniffing, no framing by another site, no
/// referrer, and a content policy that lets a page run only its own inline
/// script and style (the viewer is one self-contained page) and load nothing.
async fn security_headers(mut response: Response) -> Response {
    set_security_headers(&mut response, "no-referrer", CSP_NO_FORMS);
    response
}

/// The public pages' content policy: their own inline script and style, nothing
/// loaded, no form sent anywhere.
const CSP_NO_FORMS: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; \
     frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The headers every page carries, with its referrer and content policies.
fn set_security_headers(response: &mut Response, referrer: &'static str, csp: &'static str) {
    use axum::http::HeaderValue;
    let h = response.headers_mut();
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static(referrer));
    h.insert("content-security-policy", HeaderValue::from_static(csp));
}

async fn game_json(State(site): State<Site>, Path(id): Path<String>) -> Result<Response, WebError> {
    let id = game_id(id.trim_end_matches(".json"))?;
    let rec = public_record(&site, id).await?;
    let mut v = serde_json::to_value(&rec).map_err(WebError::internal)?;
    // 64 bits do not fit a JavaScript number: the seed is a string here (the
    // record files keep the number, which Rust and Python read whole).
    v["seed"] = rec.seed.to_string().into();
    json(&v)
}

/// A stored game in the viewer (`referee::view`): the same page `referee view`
/// writes, replayed from the record.
async fn game_page(State(site): State<Site>, Path(id): Path<String>) -> Result<Response, WebError> {
    let id = game_id(&id)?;
    let (competition, rec) = public_record_in(&site, id).await?;
    // A way back to where it was played (a challenge's competition has no page).
    let back = site
        .store
        .competitions().all()
        .await?
        .into_iter()
        .find(|c| c.id == competition && c.format != crate::store::CompetitionFormat::Challenge)
        .map(|c| {
            html! {
                nav.back style="padding:8px 16px 0;font:14px/1.45 system-ui,sans-serif" {
                    a href={ "/competitions/" (segment(&c.name)) } { "← " (c.name) } " · " a href="/" { "every competition" }
                }
            }
            .into_string()
        });
    // Replaying is CPU work: off the executor.
    let html = tokio::task::spawn_blocking(move || {
        let names: Vec<String> = rec
            .seats
            .iter()
            .map(|s| s.entrant.clone().unwrap_or_else(|| s.name.clone()))
            .collect();
        referee::view::html(&rec, &format!("game {id}: {}", names.join(" v ")))
            .map_err(|e| WebError::internal(format!("game {id} does not replay: {e}")))
    })
    .await
    .map_err(WebError::internal)??;
    // The viewer is a whole page: the way back goes in at its top.
    let html = match (back, html.find("<body>")) {
        (Some(back), Some(at)) => format!("{}{back}{}", &html[..at + 6], &html[at + 6..]),
        _ => html,
    };
    Ok(Html(html).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store's error names tables and values: the visitor is told the page
    /// failed, never the text.
    #[tokio::test]
    async fn a_failure_of_the_servers_is_said_without_its_text() {
        let response =
            WebError::internal("error returned from database: relation \"workers\" token_sha256 = 'ab12'")
                .into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), 4096).await.unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(!body.contains("workers") && !body.contains("ab12"), "{body}");
        assert!(body.contains("failed"), "{body}");
    }

    #[test]
    fn a_name_is_one_path_segment_of_a_link() {
        assert_eq!(segment("a b#c/é@1.x_y~z-2"), "a%20b%23c%2F%C3%A9@1.x_y~z-2");
        assert_eq!(segment("../x?y=1"), "..%2Fx%3Fy%3D1");
    }

    #[test]
    fn a_game_id_is_read_only_as_the_pages_write_it() {
        assert_eq!(game_id("1").ok(), Some(GameId(1)));
        assert_eq!(game_id("0").ok(), Some(GameId(0)));
        assert_eq!(
            game_id("123456789012345678").ok(),
            Some(GameId(123_456_789_012_345_678))
        );
        for bad in [
            "",
            "+1",
            "01",
            "-1",
            " 1",
            "1 ",
            "1e3",
            "0x1",
            "1234567890123456789",
        ] {
            assert!(game_id(bad).is_err(), "{bad:?}");
        }
    }

    /// On a page, every character a reader cannot see is a marked escape, and
    /// every other is itself (HTML-escaped), over every character there is; a
    /// log's line feeds and tabs stay.
    #[test]
    fn every_invisible_character_is_marked_on_a_page_and_no_other() {
        use maud::Render;
        for c in (0..=0x10_ffffu32).filter_map(char::from_u32) {
            let text = format!("a{c}b");
            let html = Marked(&text).render().into_string();
            let marked = html.contains("<span class=\"invisible\"");
            if referee::text::is_invisible(c) && c != '\n' && c != '\t' {
                assert!(marked && !html.contains(c), "U+{:04X}: {html}", c as u32);
                assert!(html.contains(&format!(">\\u{{{:x}}}</span>", c as u32)), "{html}");
            } else if let Some(e) =
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].get("&<>\"'".find(c).unwrap_or(usize::MAX))
            {
                assert_eq!(html, format!("a{e}b"));
            } else {
                assert_eq!(html, text, "U+{:04X}", c as u32);
            }
        }
        let page = Marked("x\u{202e}<b>\u{2028}").render().into_string();
        assert!(page.contains("&lt;b&gt;") && !page.contains("<b>"), "{page}");
    }
}
