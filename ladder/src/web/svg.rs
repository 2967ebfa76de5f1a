//! Charts drawn on the server as inline SVG: the pages need no script and no
//! network, and a phone draws them at its own width.

use crate::store::RatingPoint;
use rating::separation::Separation;
use std::fmt::Write as _;

/// `ms` since the epoch as `YYYY-MM-DD HH:MM` UTC.
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date, counted in 400-year eras from 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// A step of 1, 2 or 5 times a power of ten that cuts `span` into about `n` parts.
fn tick_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

/// Widest interval drawn (a point with a huge one would flatten the rest).
const CLIP: f64 = 800.0;

/// A bot's rating after each kept point: Elo as a line, the 95% interval as a
/// band, x the games the competition had then. Each point carries
/// `data-point="GAMES:ELO"` and a title with its time.
pub fn rating_chart(points: &[RatingPoint]) -> String {
    let (w, h, left, right, top, bottom) = (480.0, 250.0, 50.0, 12.0, 12.0, 48.0);
    if points.is_empty() {
        return "<p>No rating history yet: a point is kept at each fit once the competition has grown by a \
                twentieth.</p>"
            .to_owned();
    }
    // The band spans only the points with an interval (a separated bot has none).
    let bounded: Vec<&RatingPoint> = points.iter().filter(|p| p.ci95.is_some()).collect();
    let band = |p: &RatingPoint| p.ci95.unwrap_or(0.0).min(CLIP);
    let lo = points
        .iter()
        .map(|p| p.elo - band(p))
        .fold(f64::INFINITY, f64::min);
    let hi = points
        .iter()
        .map(|p| p.elo + band(p))
        .fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if hi - lo < 20.0 {
        (lo - 10.0, hi + 10.0)
    } else {
        (lo, hi)
    };
    let (g0, g1) = (points[0].games as f64, points[points.len() - 1].games as f64);
    let gspan = (g1 - g0).max(1.0);
    let x = |g: i64| left + (g as f64 - g0) / gspan * (w - left - right);
    let y = |e: f64| top + (hi - e) / (hi - lo) * (h - top - bottom);
    let mut s = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"Elo and its 95% interval by games played\">"
    );
    // Grid and Elo ticks.
    let step = tick_step(hi - lo, 5.0);
    let mut t = (lo / step).ceil() * step;
    while t <= hi {
        let _ = write!(
            s,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" class=\"grid\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" class=\"tick\">{t:.0}</text>",
            w - right,
            left - 6.0,
            y(t) + 4.0,
            yy = y(t)
        );
        t += step;
    }
    // The band: up along the upper bounds, back along the lower.
    let mut band_path: Vec<String> = bounded
        .iter()
        .map(|p| format!("{:.1},{:.1}", x(p.games), y(p.elo + band(p))))
        .collect();
    band_path.extend(
        bounded
            .iter()
            .rev()
            .map(|p| format!("{:.1},{:.1}", x(p.games), y(p.elo - band(p)))),
    );
    if !bounded.is_empty() {
        let _ = write!(s, "<polygon class=\"band\" points=\"{}\"/>", band_path.join(" "));
    }
    let line: Vec<String> = points
        .iter()
        .map(|p| format!("{:.1},{:.1}", x(p.games), y(p.elo)))
        .collect();
    let _ = write!(s, "<polyline class=\"line\" points=\"{}\"/>", line.join(" "));
    for p in points {
        let ci = p.ci95.map_or("∞".to_owned(), |c| format!("{c:.0}"));
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" data-point=\"{}:{:.1}\"><title>after {} games ({} UTC): Elo {:.0} ± {ci}</title></circle>",
            x(p.games),
            y(p.elo),
            p.games,
            p.elo,
            p.games,
            utc(p.at_ms),
            p.elo,
        );
    }
    // The axis is games played (a rating moves only as games arrive); its ends
    // also say when.
    let (first, last) = (&points[0], &points[points.len() - 1]);
    let _ = write!(
        s,
        "<text x=\"{left}\" y=\"{g}\" class=\"tick\">{} games</text><text x=\"{left}\" y=\"{d}\" class=\"tick\">{} UTC</text>\
         <text x=\"{r}\" y=\"{g}\" text-anchor=\"end\" class=\"tick\">{} games</text><text x=\"{r}\" y=\"{d}\" text-anchor=\"end\" class=\"tick\">{} UTC</text></svg>",
        first.games,
        utc(first.at_ms),
        last.games,
        utc(last.at_ms),
        g = h - 24.0,
        d = h - 8.0,
        r = w - right,
    );
    s
}

/// The scale the standings' interval bars share: the lowest and highest bound,
/// an unbounded side drawn to the edge.
pub fn interval_scale(rows: &[(f64, f64)]) -> (f64, f64) {
    let half = |ci: f64| if ci.is_finite() { ci } else { 0.0 };
    let lo = rows.iter().map(|&(e, c)| e - half(c)).fold(0.0, f64::min);
    let hi = rows.iter().map(|&(e, c)| e + half(c)).fold(0.0, f64::max);
    let pad = ((hi - lo) * 0.08).max(10.0);
    (lo - pad, hi + pad)
}

/// One standing's Elo and 95% interval on the shared scale, with the anchor's 0
/// marked: `data-interval="LOW:HIGH"`. A separated bot's Elo is a one-sided bound
/// (`≤` for one that never won: `-inf:ELO`; `≥` for one that never lost:
/// `ELO:inf`), drawn to the edge on its open side.
pub fn interval_bar(elo: f64, ci95: f64, separated: Option<Separation>, (lo, hi): (f64, f64)) -> String {
    let (w, h) = (180.0, 16.0);
    let (low, high) = match separated {
        Some(Separation::NeverWon) => (f64::NEG_INFINITY, elo),
        Some(Separation::NeverLost) => (elo, f64::INFINITY),
        None if ci95.is_finite() => (elo - ci95, elo + ci95),
        None => (f64::NEG_INFINITY, f64::INFINITY),
    };
    let x = |e: f64| ((e - lo) / (hi - lo) * w).clamp(0.0, w);
    let bound = |v: f64| {
        if v.is_finite() {
            format!("{v:.0}")
        } else if v > 0.0 {
            "inf".to_owned()
        } else {
            "-inf".to_owned()
        }
    };
    // A bound is drawn as a bar end; a point estimate as a dot.
    let mark = if separated.is_some() {
        format!(
            "<line x1=\"{m:.1}\" x2=\"{m:.1}\" y1=\"2\" y2=\"14\" class=\"end\"/>",
            m = x(elo)
        )
    } else {
        format!("<circle cx=\"{:.1}\" cy=\"8\" r=\"3.5\"/>", x(elo))
    };
    format!(
        "<svg class=\"bar\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" data-interval=\"{}:{}\" aria-hidden=\"true\">\
         <line x1=\"{z:.1}\" x2=\"{z:.1}\" y1=\"0\" y2=\"{h}\" class=\"zero\"/>\
         <line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"8\" y2=\"8\" class=\"ci\"/>{mark}</svg>",
        bound(low),
        bound(high),
        x(low),
        x(high),
        z = x(0.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_from_epoch_milliseconds() {
        assert_eq!(utc(0), "1970-01-01 00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00");
        assert_eq!(utc(1_795_978_800_000), "2026-11-29 19:00");
        assert_eq!(utc(-86_400_000), "1969-12-31 00:00");
    }

    #[test]
    fn every_point_is_drawn_inside_the_chart() {
        let points: Vec<RatingPoint> = (1..=5)
            .map(|i| RatingPoint {
                bot_id: crate::store::BotId(1),
                games: i * 100,
                at_ms: 0,
                elo: 50.0 * i as f64,
                ci95: (i > 1).then_some(200.0 / i as f64),
            })
            .collect();
        let svg = rating_chart(&points);
        assert_eq!(svg.matches("data-point=").count(), 5);
        assert!(svg.contains("data-point=\"300:150.0\""), "{svg}");
        for c in svg.split("<circle ").skip(1) {
            let cy: f64 = c
                .split("cy=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert!((12.0..=250.0 - 48.0).contains(&cy), "inside the plot: {c}");
        }
        let scale = (-100.0, 100.0);
        assert!(interval_bar(10.0, 20.0, None, scale).contains("data-interval=\"-10:30\""));
        assert!(interval_bar(10.0, f64::INFINITY, None, scale).contains("data-interval=\"-inf:inf\""));
        let never_won = interval_bar(-50.0, f64::INFINITY, Some(Separation::NeverWon), scale);
        assert!(never_won.contains("data-interval=\"-inf:-50\""), "{never_won}");
        // Drawn from the left edge to its bound at x = 45.
        assert!(never_won.contains("x1=\"0.0\" x2=\"45.0\""), "{never_won}");
        let never_lost = interval_bar(50.0, f64::INFINITY, Some(Separation::NeverLost), scale);
        assert!(never_lost.contains("data-interval=\"50:inf\""), "{never_lost}");
    }
}
