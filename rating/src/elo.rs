//! The Elo scale and the normal distribution: the arithmetic that the rating fit
//! (`rating`) and the pair statistics (`stats`) share, so that neither needs the other.

/// Expected share of the points for a player `diff` Elo above its opponent.
pub fn expected_score(diff: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-diff / 400.0))
}

/// The standard normal distribution function.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Elo difference for a share of the points.
pub fn elo_of_score(score: f64) -> f64 {
    let s = score.clamp(1e-9, 1.0 - 1e-9);
    -400.0 * (1.0 / s - 1.0).log10()
}

/// An Elo difference to the unit with its sign, and no "-0" for what rounds to 0:
/// how every table shows one.
pub fn signed(elo: f64) -> String {
    if elo.round() == 0.0 {
        "+0".to_owned()
    } else {
        format!("{elo:+.0}")
    }
}
