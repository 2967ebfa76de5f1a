//! The author's pages: sign in with an author's token, see your bots' versions
//! with their builds, checks, ratings and faults, read your seats' private logs
//! beside each game, upload a new version and take a bot out of play or back.
//! The host signs in with the admin token and reads every seat's logs.
//!
//! | page | what |
//! |---|---|
//! | `GET /author/sign-in`, `POST /author/sign-in` | the token, once; a session cookie from then on |
//! | `POST /author/sign-out` | ends the session |
//! | `GET /author` | your bots, every version with its status; the upload form |
//! | `GET /author/bots.json` | the same as JSON |
//! | `POST /author/upload` | a new version: an archive, checked as `ladder submit`'s |
//! | `GET /author/bots/{name}` | a version: build log, check report, rating, faults, newest games |
//! | `POST /author/bots/{name}/status` | `disable` or `enable` |
//! | `POST /author/bots/{name}/challenge` | unrated games against a bot named in the form |
//! | `GET /author/games/{id}` | the viewer with your seats' `info` lines, stderr and faults |
//! | `GET /author/api/games/{id}` | your seats' private logs as JSON |
//!
//! How it holds against a hostile visitor (`docs/security.md`):
//! - the session cookie is random (256 bits from the OS), `HttpOnly`, `Secure`,
//!   `SameSite=Strict`, and the server keeps only its SHA-256; signing out, the
//!   session's end, the author's token being revoked or `ladder admin
//!   end-sessions` ends it, and a host session ends when the admin token
//!   changes; an author keeps at most 8 (a sign-in ends the oldest);
//! - sign-in is slowed after 5 failures from one address or with one token
//!   (429 with `Retry-After`: [`crate::app::throttle`]);
//! - every form that changes something carries the session's own CSRF token,
//!   compared in constant time, and a request whose `Origin` is another site's
//!   is refused before anything is read;
//! - every page is private (`Cache-Control: no-store`) and escapes what it
//!   shows; an author sees only their own bots' seats, and nothing at all says
//!   whether another author's bot or game exists beyond what the public pages do.

use super::{Bots, Marked, Site, WebError, escape, page_html, segment};
use crate::app::LadderService;
use crate::app::error::ServiceError;
use crate::app::logs::{LogReader, SeatLogView, readable_logs};
use crate::store::{AuthorRow, BotRow, BotStatus, GameId, WebSession};
use axum::Router;
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::{Markup, html};
use serde::Serialize;
use std::sync::Arc;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "astragal_session";

/// How long a session lasts from signing in.
pub const SESSION_HOURS: i64 = 12;

/// What the author's pages read and change.
#[derive(Clone)]
struct Authors {
    service: Arc<LadderService>,
    site: Site,
    /// Sign-ins slowed after failures.
    throttle: Arc<crate::app::throttle::SignInThrottle>,
    /// The fingerprint of the admin token host sessions are opened with now.
    host_key: Arc<str>,
}

/// The fingerprint a host session keeps of the admin token it was opened
/// with: a SHA-256 of the token, salted with what it is for (no other hash
/// the server keeps is of the same text).
pub fn host_key(admin_token: &str) -> String {
    crate::app::host_session_key(admin_token)
}

/// The author's pages over `service` (its store, its upload checks).
pub fn router(service: Arc<LadderService>) -> Router {
    let site = Site {
        store: service.store().clone(),
        standings: service.standings().clone(),
        admin_token: Some(Arc::from(service.config().admin_token.as_str())),
    };
    let upload_limit = service.config().uploads.limits.packed_bytes as usize + (1 << 20);
    let throttle = Arc::new(crate::app::throttle::SignInThrottle::new(
        service.config().uploads.sign_in,
    ));
    let host_key = Arc::from(host_key(&service.config().admin_token));
    Router::new()
        .route("/author", get(home))
        .route("/author/sign-in", get(sign_in_page).post(sign_in))
        .route("/author/sign-out", post(sign_out))
        .route("/author/bots.json", get(bots_json))
        .route(
            "/author/upload",
            post(upload).layer(DefaultBodyLimit::max(upload_limit)),
        )
        .route("/author/bots/{name}", get(bot_page))
        .route("/author/bots/{name}/status", post(set_status))
        .route("/author/bots/{name}/challenge", post(challenge))
        .route("/author/bots/{name}/enter", post(enter_season))
        .route("/author/games/{id}", get(game_page))
        .route("/author/api/games/{id}", get(game_json))
        .layer(axum::middleware::from_fn(same_origin_only))
        .layer(axum::middleware::map_response(private_headers))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            // An upload may take its whole time to arrive.
            crate::app::UPLOAD_TIME + super::PAGE_TIMEOUT,
        ))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(Authors {
            service,
            site,
            throttle,
            host_key,
        })
}

/// Headers on every answer of these pages: the public pages' own, except that
/// their forms may post here, their own posts say where they come from (with
/// `no-referrer`, a browser sends `Origin: null`, which [`same_origin_only`]
/// refuses), and nothing of them is kept by a cache.
async fn private_headers(mut response: Response) -> Response {
    super::set_security_headers(
        &mut response,
        "same-origin",
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; \
         frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    );
    response
        .headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-store"));
    response
}

/// Refuses a request that another site's page sent (its `Origin` is not this
/// host), before anything of it is read: with `SameSite=Strict` and the forms'
/// CSRF token, a third wall around every change.
async fn same_origin_only(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if request.method() != axum::http::Method::GET && !same_origin(request.headers()) {
        return (
            StatusCode::FORBIDDEN,
            "this form was sent from another site's page\n",
        )
            .into_response();
    }
    next.run(request).await
}

/// Whether the request's `Origin`, if it has one, names the host it was sent to.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        // Not sent by a browser's page (a browser sends it with every POST).
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let origin = origin.to_str().unwrap_or("");
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .unwrap_or("");
    !host.is_empty() && authority == host
}

/// The session cookie's value in a request, if any.
fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
}

/// Who is signed in.
struct Signed {
    /// Whose session: an author, or the host.
    author: Option<AuthorRow>,
    /// What its forms carry.
    csrf: String,
}

impl Signed {
    fn reader(&self) -> LogReader {
        match &self.author {
            Some(a) => LogReader::Author(a.id),
            None => LogReader::Host,
        }
    }

    fn who(&self) -> String {
        match &self.author {
            Some(a) => a.name.clone(),
            None => "the host".into(),
        }
    }
}

/// Why a page of these is not shown.
enum Refused {
    /// No session (or an ended one): to the sign-in page.
    SignIn,
    /// A page's own failure.
    Page(WebError),
    /// A form that cannot be taken: 4xx with its reason, on a page.
    Form(StatusCode, String),
    /// Too many failed sign-ins: 429, to be tried again after this long.
    Slow(std::time::Duration),
}

impl From<WebError> for Refused {
    fn from(e: WebError) -> Refused {
        Refused::Page(e)
    }
}

impl From<crate::store::StoreError> for Refused {
    fn from(e: crate::store::StoreError) -> Refused {
        Refused::Page(e.into())
    }
}

impl Refused {
    /// A refusal of the service, on a page, prefixed with what was not done. A
    /// failure of the server's own (the store's text may name tables, queries or
    /// another author's rows) goes to the host's log, never to the page.
    fn service(what: &str) -> impl Fn(ServiceError) -> Refused + '_ {
        move |e| match e {
            ServiceError::Internal(why) => Refused::Page(WebError::internal(why)),
            refused => Refused::Form(
                StatusCode::BAD_REQUEST,
                format!("{what}: {}", refused.public_message()),
            ),
        }
    }
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        match self {
            Refused::SignIn => Redirect::to("/author/sign-in").into_response(),
            Refused::Page(e) => e.into_response(),
            Refused::Slow(wait) => {
                let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                let body = html! {
                    h1 { "Not now" }
                    p.out { "Too many failed sign-ins from your address or with this token: try again in " (seconds) " s." }
                };
                let mut r = (
                    StatusCode::TOO_MANY_REQUESTS,
                    page_html("not now", "/author/bots.json", body),
                )
                    .into_response();
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
                r
            }
            Refused::Form(code, why) => {
                let body = html! {
                    h1 { "Not done" }
                    p.out { (why) }
                    p { a href="/author" { "Back to your bots" } }
                };
                (code, page_html("not done", "/author/bots.json", body)).into_response()
            }
        }
    }
}

/// The session the request carries, if it is open.
async fn signed(a: &Authors, headers: &HeaderMap) -> Result<Signed, Refused> {
    let Some(cookie) = session_cookie(headers) else {
        return Err(Refused::SignIn);
    };
    match a
        .site
        .store
        .sessions()
        .session(&crate::app::token_hash(cookie), &a.host_key)
        .await?
    {
        Some(WebSession { author, csrf }) => Ok(Signed { author, csrf }),
        None => Err(Refused::SignIn),
    }
}

/// A form's CSRF token checked against the session's.
fn check_csrf(s: &Signed, given: &str) -> Result<(), Refused> {
    if crate::app::constant_time_eq(given, &s.csrf) {
        Ok(())
    } else {
        Err(Refused::Form(
            StatusCode::FORBIDDEN,
            "this form does not carry your session's token: reload the page and send it again".into(),
        ))
    }
}

/// The form that signs in.
async fn sign_in_page() -> Response {
    let body = html! {
        h1 { "Sign in" }
        p { "With the token the host gave you (" code { "ladder admin add-author" } "). It is sent once; the browser keeps a session cookie for " (SESSION_HOURS) " hours." }
        form method="post" action="/author/sign-in" {
            label { "Token " input type="password" name="token" autocomplete="current-password" required; }
            " " button type="submit" { "Sign in" }
        }
    };
    page_html("sign in", "/author/bots.json", body)
}

#[derive(serde::Deserialize)]
struct TokenForm {
    token: String,
}

/// Signs in with an author's token (or the admin's), and opens a session; the
/// author's oldest beyond [`crate::store::SESSIONS_PER_AUTHOR`] ends. After a few
/// failures from one address, or with one token, the next are not tried
/// (429, `Retry-After`) until the throttle lets them.
async fn sign_in(
    State(a): State<Authors>,
    axum::extract::ConnectInfo(crate::conn::Peer(peer)): axum::extract::ConnectInfo<crate::conn::Peer>,
    axum::Form(form): axum::Form<TokenForm>,
) -> Result<Response, Refused> {
    let token = form.token.trim();
    // The ladder's clock, which a test moves past a refill.
    let now = a.service.store().now_ms();
    a.throttle.check(peer.ip(), token, now).map_err(Refused::Slow)?;
    let opened = match a.service.sign_in(token, SESSION_HOURS).await {
        Ok(opened) => opened,
        Err(ServiceError::Unauthenticated(why)) => {
            a.throttle.failed(peer.ip(), token, now);
            return Err(Refused::Form(StatusCode::UNAUTHORIZED, why));
        }
        Err(e) => return Err(Refused::service("signing in")(e)),
    };
    let cookie = opened.cookie;
    let set = format!(
        "{SESSION_COOKIE}={cookie}; Path=/; Max-Age={}; HttpOnly; Secure; SameSite=Strict",
        SESSION_HOURS * 3600
    );
    let mut r = Redirect::to("/author").into_response();
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&set).map_err(WebError::internal)?,
    );
    Ok(r)
}

#[derive(serde::Deserialize)]
struct CsrfForm {
    csrf: String,
}

/// Ends the session.
async fn sign_out(
    State(a): State<Authors>,
    headers: HeaderMap,
    axum::Form(form): axum::Form<CsrfForm>,
) -> Result<Response, Refused> {
    let s = signed(&a, &headers).await?;
    check_csrf(&s, &form.csrf)?;
    if let Some(cookie) = session_cookie(&headers) {
        a.site
            .store
            .sessions()
            .close_session(&crate::app::token_hash(cookie))
            .await?;
    }
    let mut r = Redirect::to("/author/sign-in").into_response();
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("astragal_session=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict"),
    );
    Ok(r)
}

/// A version as the author's pages list it.
#[derive(Debug, Serialize)]
struct VersionView {
    name: String,
    game: String,
    version: i64,
    status: BotStatus,
    status_reason: String,
    artifact_sha256: Option<String>,
}

impl VersionView {
    fn of(b: &BotRow) -> VersionView {
        VersionView {
            name: b.name.clone(),
            game: b.game.clone(),
            version: b.version,
            status: b.status,
            status_reason: b.status_reason.clone(),
            artifact_sha256: b.artifact_sha256.clone(),
        }
    }
}

/// The signed-in author's own bots (none for the host), newest first.
async fn own_bots(a: &Authors, s: &Signed) -> Result<Vec<BotRow>, Refused> {
    let Some(author) = &s.author else {
        return Ok(Vec::new());
    };
    let mut bots = a.site.store.authors().bots_of_author(author.id).await?;
    bots.reverse();
    Ok(bots)
}

/// A form that posts with the session's CSRF token.
fn form_with_csrf(action: &str, csrf: &str, label: &str) -> Markup {
    html! {
        form method="post" action=(action) style="display:inline" {
            input type="hidden" name="csrf" value=(csrf);
            button type="submit" { (label) }
        }
    }
}

/// The top of every author page: who is signed in, and signing out.
fn signed_bar(s: &Signed) -> Markup {
    html! {
        // A div: a form may not stand inside a paragraph.
        div.note {
            "Signed in as " b { (s.who()) } " · " a href="/author" { "your bots" } " · "
            (form_with_csrf("/author/sign-out", &s.csrf, "Sign out"))
        }
    }
}

/// `/author`: every version of the author's bots, and the upload form.
async fn home(State(a): State<Authors>, headers: HeaderMap) -> Result<Response, Refused> {
    let s = signed(&a, &headers).await?;
    let bots = own_bots(&a, &s).await?;
    let challenges = match &s.author {
        Some(author) => a.service.challenges(author).await.map_err(WebError::internal)?,
        None => Vec::new(),
    };
    let seasons = match &s.author {
        Some(author) => super::season::author_entries(&a.site, author.id, &bots).await?,
        None => Vec::new(),
    };
    let body = html! {
        (signed_bar(&s))
        h1 { "Your bots" }
        @if s.author.is_none() {
            p { "The host reads every seat's private logs: open a game at " code { "/author/games/ID" } "." }
        } @else if bots.is_empty() {
            p { "None yet: upload one below." }
        } @else {
            table.mine {
                thead { tr { th { "version" } th { "game" } th { "status" } th { "why" } } }
                tbody {
                    @for b in &bots {
                        tr data-bot=(b.name) data-status=(b.status) {
                            td { a href={ "/author/bots/" (segment(&b.name)) } { (b.name) } }
                            td { (b.game) }
                            td { b { (b.status) } }
                            td.detail { (Marked(&b.status_reason)) }
                        }
                    }
                }
            }
        }
        (super::season::author_table(&seasons))
        @if !challenges.is_empty() {
            table.challenges {
                caption { "Your challenges (unrated)" }
                thead { tr { th { "bots" } th { "games" } th { "played (private logs)" } } }
                tbody {
                    @for c in &challenges {
                        tr {
                            td { (Marked(&c.bot)) " v " (Marked(&c.opponent)) }
                            td {
                                (c.game_ids.len()) " / " (c.row.games)
                                @if let Some(why) = &c.withdrawn { br; span.withdrawn { (Marked(why)) } }
                            }
                            td.name {
                                @for id in c.game_ids.iter().rev() { a href={ "/author/games/" (id) } { (id) } " " }
                            }
                        }
                    }
                }
            }
        }
        @if s.author.is_some() {
            h2 { "Upload a new version" }
            p.note { "An archive (.tar.gz, .tgz or .tar) of your bot's folder with " code { "astragal.toml" } " at its top, as " code { "ladder submit" } " sends it. Each game it names gets a new version; the one playing now goes on until the new one passes its build and check." }
            form method="post" action="/author/upload" enctype="multipart/form-data" {
                input type="hidden" name="csrf" value=(s.csrf);
                input type="file" name="archive" accept=".tar.gz,.tgz,.tar,application/gzip,application/x-tar" required;
                " " button type="submit" { "Upload" }
            }
        }
    };
    Ok(page_html("your bots", "/author/bots.json", body))
}

/// `/author/bots.json`: the author's versions.
async fn bots_json(State(a): State<Authors>, headers: HeaderMap) -> Result<Response, Refused> {
    let s = signed(&a, &headers).await.map_err(|r| match r {
        // JSON readers are told, not redirected.
        Refused::SignIn => Refused::Form(StatusCode::UNAUTHORIZED, "not signed in".into()),
        other => other,
    })?;
    let bots: Vec<VersionView> = own_bots(&a, &s).await?.iter().map(VersionView::of).collect();
    Ok(super::json(
        &serde_json::json!({ "author": s.who(), "bots": bots }),
    )?)
}

/// `POST /author/upload`: the archive, checked and stored as `ladder submit`'s.
async fn upload(
    State(a): State<Authors>,
    headers: HeaderMap,
    mut form: Multipart,
) -> Result<Response, Refused> {
    let s = signed(&a, &headers).await?;
    let Some(author) = s.author.clone() else {
        return Err(Refused::Form(
            StatusCode::FORBIDDEN,
            "the host uploads no bot here: sign in as an author".into(),
        ));
    };
    let bad = |e: axum::extract::multipart::MultipartError| Refused::Form(e.status(), e.body_text());
    // The form's token comes before its file (as the page's form sends them);
    // the file streams into the same upload path as `ladder submit`'s, so an
    // author's uploads arriving at once, and the slowest an upload may arrive,
    // hold here too (read whole first, a form trickled at a byte a second held
    // its connection and memory for as long as it liked).
    let mut csrf_checked = false;
    let mut stored = None;
    // What comes before the file is a few bytes: it gets the grace an upload
    // gets to fall behind, no more.
    let grace = a.service.config().uploads.floor.grace;
    let slow = || {
        Refused::Form(
            StatusCode::REQUEST_TIMEOUT,
            "the form arrived too slowly: send it again on a faster connection".into(),
        )
    };
    while let Some(field) = tokio::time::timeout(grace, form.next_field())
        .await
        .map_err(|_| slow())?
        .map_err(bad)?
    {
        match field.name() {
            Some("csrf") => {
                let token = tokio::time::timeout(grace, field.text())
                    .await
                    .map_err(|_| slow())?
                    .map_err(bad)?;
                check_csrf(&s, &token)?;
                csrf_checked = true;
            }
            Some("archive") => {
                if !csrf_checked {
                    check_csrf(&s, "")?;
                }
                use futures_util::StreamExt;
                let chunks = field.map(|chunk| chunk.map(|b| b.to_vec()).map_err(|e| e.body_text()));
                stored = Some(
                    a.service
                        .submit(&author, Box::pin(chunks))
                        .await
                        .map_err(Refused::service("the upload was refused"))?,
                );
                break;
            }
            _ => {}
        }
    }
    let Some(crate::app::Submitted {
        bots,
        source_sha256: sha256,
    }) = stored
    else {
        if !csrf_checked {
            check_csrf(&s, "")?;
        }
        return Err(Refused::Form(
            StatusCode::BAD_REQUEST,
            "choose an archive to upload".into(),
        ));
    };
    let body = html! {
        (signed_bar(&s))
        h1 { "Uploaded" }
        p { "Files " code { (sha256) } ". New versions, building now:" }
        ul {
            @for b in &bots {
                li data-bot=(b.name) { a href={ "/author/bots/" (segment(&b.name)) } { (b.name) } " (" (b.game) ")" }
            }
        }
        p { a href="/author" { "Back to your bots" } }
    };
    Ok(page_html("uploaded", "/author/bots.json", body))
}

/// One of the signed-in author's versions by name (the host: none).
async fn own_bot(a: &Authors, s: &Signed, name: &str) -> Result<BotRow, Refused> {
    let bot = match &s.author {
        Some(author) => a
            .site
            .store
            .bots()
            .bot(name)
            .await?
            .filter(|b| b.author_id == Some(author.id)),
        None => None,
    };
    // Another author's bot is answered as a missing one.
    bot.ok_or_else(|| {
        Refused::Page(WebError::NotFound(format!(
            "you have no bot named {:?}",
            escape(name)
        )))
    })
}

/// `/author/bots/{name}`: a version's build log and check report, what can be
/// done with it, and its public page's rating, faults and games, each game linked
/// to its private logs.
async fn bot_page(
    State(a): State<Authors>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, Refused> {
    let s = signed(&a, &headers).await?;
    let bot = own_bot(&a, &s, &name).await?;
    let crate::store::BotLogs {
        source_sha256: source,
        build_log,
        check_report,
    } = a.site.store.authors().bot_logs(bot.id).await?;
    let redactor = Bots::read(&a.site).await?.redactor;
    let public = super::bot::snapshot(&a.site, &bot.name).await?;
    let status_form = match bot.status {
        BotStatus::Active | BotStatus::Suspended => Some(form_with_csrf(
            &format!("/author/bots/{}/status?to=disable", segment(&bot.name)),
            &s.csrf,
            "Disable",
        )),
        BotStatus::Disabled => Some(form_with_csrf(
            &format!("/author/bots/{}/status?to=enable", segment(&bot.name)),
            &s.csrf,
            "Enable",
        )),
        _ => None,
    };
    // Seasons of its game still taking entries.
    let mut open_seasons = Vec::new();
    if bot.status == BotStatus::Active {
        for c in a.site.store.competitions().all().await? {
            if c.game == bot.game
                && let Some(season) = a.site.store.seasons().season(c.id).await?
                && season.phase == crate::store::Phase::Open
            {
                open_seasons.push(c.name);
            }
        }
    }
    let body = html! {
        (signed_bar(&s))
        h1 { (bot.name) }
        div {
            (bot.game) " · version " (bot.version) " · " b.status data-status=(bot.status) { (bot.status) }
            @if !bot.status_reason.is_empty() { " — " (Marked(&redactor.text(&bot.status_reason))) }
            " " @if let Some(f) = status_form { (f) }
        }
        p.note {
            "Upload " code { (source.unwrap_or_default()) }
            @if let Some(art) = &bot.artifact_sha256 { " · plays " code { (art) } }
            @if !super::bot::never_public(bot.status) { " · " a href={ "/bots/" (segment(&bot.name)) } { "its public page" } }
        }
        @if bot.status == BotStatus::Active {
            form.challenge method="post" action={ "/author/bots/" (segment(&bot.name)) "/challenge" } {
                input type="hidden" name="csrf" value=(s.csrf);
                "Challenge " input type="text" name="opponent" placeholder="a bot's name" required size="16";
                " to " input type="number" name="games" value="2" min="2" max=(crate::app::CHALLENGE_GAMES_MAX) step="2";
                " unrated games " button type="submit" { "Ask" }
            }
        }
        @for season in &open_seasons {
            form.enter method="post" action={ "/author/bots/" (segment(&bot.name)) "/enter" } {
                input type="hidden" name="csrf" value=(s.csrf);
                input type="hidden" name="season" value=(season);
                button type="submit" { "Make this my entry in " (season) }
            }
        }
        h2 { "Build log" }
        @if build_log.is_empty() { p.note { "No build (or not built yet)." } } @else { pre.log { (Marked(&redactor.text(&build_log))) } }
        h2 { "Check report" }
        @if check_report.is_empty() { p.note { (unchecked_note(bot.status)) } } @else { pre.log { (Marked(&redactor.text(&check_report))) } }
        @if let Some(view) = &public {
            @for c in &view.competitions { (super::bot::competition_section_at(&view.name, c, "/author/games/")) }
        }
    };
    Ok(page_html(
        &bot.name,
        &format!("/bots/{}.json", segment(&bot.name)),
        body,
    ))
}

/// Why a version has no check report: it is waiting, or its build failed.
pub(crate) fn unchecked_note(status: BotStatus) -> &'static str {
    match status {
        BotStatus::BuildFailed => "Not checked: its build failed (its log, above, says why).",
        BotStatus::Building => "Not checked yet: waiting for a worker to build and check it.",
        _ => "Not checked.",
    }
}

#[derive(serde::Deserialize)]
struct StatusQuery {
    to: String,
}

/// `POST /author/bots/{name}/status?to=disable|enable`.
async fn set_status(
    State(a): State<Authors>,
    headers: HeaderMap,
    Path(name): Path<String>,
    axum::extract::Query(q): axum::extract::Query<StatusQuery>,
    axum::Form(form): axum::Form<CsrfForm>,
) -> Result<Response, Refused> {
    let s = signed(&a, &headers).await?;
    check_csrf(&s, &form.csrf)?;
    let Some(author) = &s.author else {
        return Err(Refused::Form(
            StatusCode::FORBIDDEN,
            "the host sets statuses with ladder admin".into(),
        ));
    };
    let status = match q.to.as_str() {
        "disable" => BotStatus::Disabled,
        "enable" => BotStatus::Active,
        _ => {
            return Err(Refused::Form(
                StatusCode::BAD_REQUEST,
                "to=disable or to=enable".into(),
            ));
        }
    };
    let bot = a
        .service
        .set_my_bot_status(author, &name, status)
        .await
        .map_err(Refused::service("not changed"))?;
    Ok(Redirect::to(&format!("/author/bots/{}", segment(&bot.name))).into_response())
}

#[derive(serde::Deserialize)]
struct ChallengeForm {
    csrf: String,
    opponent: String,
    games: u32,
}

/// `POST /author/bots/{name}/challenge`: unrated games against the bot named.
async fn challenge(
    State(a): State<Authors>,
    headers: HeaderMap,
    Path(name): Path<String>,
    axum::Form(form): axum::Form<ChallengeForm>,
) -> Result<Response, Refused> {
    let s = signed(&a, &headers).await?;
    check_csrf(&s, &form.csrf)?;
    let Some(author) = &s.author else {
        return Err(Refused::Form(
            StatusCode::FORBIDDEN,
            "the host challenges no one here".into(),
        ));
    };
    a.service
        .challenge(author, &name, form.opponent.trim(), form.games)
        .await
        .map_err(Refused::service("no challenge"))?;
    Ok(Redirect::to("/author").into_response())
}

#[derive(serde::Deserialize)]
struct EnterForm {
    csrf: String,
    season: String,
}

/// `POST /author/bots/{name}/enter`: this version becomes the author's entry in
/// the season named, before its deadline.
async fn enter_season(
    State(a): State<Authors>,
    headers: HeaderMap,
    Path(name): Path<String>,
    axum::Form(form): axum::Form<EnterForm>,
) -> Result<Response, Refused> {
    let s = signed(&a, &headers).await?;
    check_csrf(&s, &form.csrf)?;
    let Some(author) = &s.author else {
        return Err(Refused::Form(
            StatusCode::FORBIDDEN,
            "the host has no entry".into(),
        ));
    };
    a.service
        .enter_season(author, &form.season, &name)
        .await
        .map_err(Refused::service("not entered"))?;
    Ok(Redirect::to("/author").into_response())
}

/// The seats of game `id` the session may read, or a 404 that says no more than
/// the public pages do.
async fn readable(a: &Authors, s: &Signed, id: &str) -> Result<(GameId, Vec<SeatLogView>), Refused> {
    let id = super::game_id(id)?;
    let redactor = Bots::read(&a.site).await?.redactor;
    let seats = readable_logs(&a.site.store, s.reader(), id, &redactor)
        .await?
        .ok_or_else(|| Refused::Page(WebError::NotFound(format!("no game {id} with a bot of yours"))))?;
    Ok((id, seats))
}

/// `/author/api/games/{id}`: the session's seats' private logs.
async fn game_json(
    State(a): State<Authors>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Refused> {
    let s = signed(&a, &headers).await.map_err(|r| match r {
        Refused::SignIn => Refused::Form(StatusCode::UNAUTHORIZED, "not signed in".into()),
        other => other,
    })?;
    let (id, seats) = readable(&a, &s, id.trim_end_matches(".json")).await?;
    Ok(super::json(&serde_json::json!({ "game": id, "seats": seats }))?)
}

/// `/author/games/{id}`: the viewer with the session's seats' `info` lines beside
/// their moves, and below it each such seat's stderr and faults in full.
async fn game_page(
    State(a): State<Authors>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Refused> {
    let s = signed(&a, &headers).await?;
    let (id, seats) = readable(&a, &s, &id).await?;
    let mut rec = super::public_record(&a.site, id).await?;
    for seat in &seats {
        for (k, line) in &seat.log.info {
            if let Some(m) = rec.moves.get_mut(*k as usize).filter(|m| m.seat == seat.seat) {
                m.info.push(line.clone());
            }
        }
    }
    let logs = html! {
        section.private style="max-width:980px;margin:1em auto;padding:0 16px;font:14px/1.45 system-ui,sans-serif" {
            h2 { "Private logs (only you and the host see these)" }
            p { "Your seats' " code { "info" } " lines are beside their moves above (choose a move). " a href="/author" { "Your bots" } }
            @for seat in &seats {
                h3 { "Seat " (seat.seat) ": " a href={ "/author/bots/" (segment(&seat.bot)) } { (seat.bot) } }
                @if seat.log.faults.is_empty() { p { "No fault said more than the record." } } @else {
                    ul.faults { @for f in &seat.log.faults { li { (Marked(f)) } } }
                }
                @if seat.log.stderr_dropped > 0 {
                    p { "stderr: the first " (seat.log.stderr_dropped) " bytes were cut; the end follows." }
                }
                @if seat.log.stderr.is_empty() { p { "Nothing on stderr." } } @else {
                    pre.stderr style="white-space:pre-wrap;background:#fff;border:1px solid #d5d9e2;padding:8px;max-height:24em;overflow:auto" { (Marked(&seat.log.stderr)) }
                }
            }
        }
    };
    let title = format!("game {id} (private logs of {})", s.who());
    let html = tokio::task::spawn_blocking(move || {
        referee::view::html(&rec, &title)
            .map_err(|e| WebError::internal(format!("game {id} does not replay: {e}")))
    })
    .await
    .map_err(WebError::internal)??;
    // The viewer is a whole page: the logs go in before its end.
    let page = match html.rfind("</body>") {
        Some(at) => format!("{}{}{}", &html[..at], logs.into_string(), &html[at..]),
        None => format!("{html}{}", logs.into_string()),
    };
    Ok(Html(page).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(r: Refused) -> (StatusCode, String) {
        let response = r.into_response();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn a_refusal_is_shown_and_the_servers_own_failure_is_not() {
        let leak = "relation \"authors\" does not exist at character 15";
        for what in [
            "the upload was refused",
            "not changed",
            "no challenge",
            "not entered",
        ] {
            let (status, body) = body_of(Refused::service(what)(ServiceError::Internal(leak.into()))).await;
            assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{what}");
            assert!(
                !body.contains("relation") && !body.contains(what),
                "{what}: {body}"
            );
            let (status, body) = body_of(Refused::service(what)(ServiceError::NotFound(
                "no bot bob".into(),
            )))
            .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{what}");
            assert!(body.contains(&format!("{what}: no bot bob")), "{body}");
        }
    }
}
