//! The exact LLR against fishtest's own, on a table its code computed.
use rating::sprt::{EloModel, Pentanomial};

#[test]
fn the_llr_equals_fishtests_on_every_vector_of_the_table() {
    let table = include_str!("data/fishtest_llr.tsv");
    let mut checked = [0usize; 2];
    let mut wrong = Vec::new();
    for line in table.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 5, "malformed table line {line:?}");
        let counts: Vec<u64> = fields[0].split(' ').map(|c| c.parse().unwrap()).collect();
        let counts: [u64; 5] = counts.try_into().unwrap();
        let model: EloModel = fields[1].parse().unwrap();
        let elo0: f64 = fields[2].parse().unwrap();
        let elo1: f64 = fields[3].parse().unwrap();
        let want: f64 = fields[4].parse().unwrap();
        checked[model as usize] += 1;
        match (Pentanomial { counts }).llr(model, elo0, elo1) {
            // Relative, with an absolute floor for LLRs near zero (an empty record's
            // is a few millionths).
            Ok(got) if (got - want).abs() <= 1e-6 * want.abs().max(1e-3) => {}
            got => wrong.push(format!(
                "{counts:?} {model} [{elo0}, {elo1}]: {got:?}, fishtest {want}"
            )),
        }
    }
    assert!(checked.iter().all(|&n| n >= 200), "too few vectors: {checked:?}");
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        checked.iter().sum::<usize>(),
        wrong.join("\n")
    );
}

/// Pair scores per game of the five pentanomial cells.
const SCORE: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// `max_λ Σ pᵢ ln(1 + λ·gᵢ)`: a concave maximum, by damped Newton from zero. The
/// cost of constraining the observed `p` to `Σ qᵢ gᵢ = 0`.
fn dual<const D: usize>(p: &[f64; 5], g: &[[f64; D]; 5]) -> Option<f64> {
    let f = |l: &[f64; D]| -> Option<f64> {
        (0..5).try_fold(0.0, |acc, k| {
            let d = 1.0 + (0..D).map(|a| l[a] * g[k][a]).sum::<f64>();
            (d > 0.0).then(|| acc + p[k] * d.ln())
        })
    };
    let mut l = [0.0; D];
    let mut value = f(&l)?;
    for _ in 0..500 {
        let mut grad = [0.0; D];
        let mut h = [[0.0; D]; D];
        for k in 0..5 {
            let d = 1.0 + (0..D).map(|a| l[a] * g[k][a]).sum::<f64>();
            for a in 0..D {
                grad[a] += p[k] * g[k][a] / d;
                for b in 0..D {
                    h[a][b] += p[k] * g[k][a] * g[k][b] / (d * d);
                }
            }
        }
        let step: [f64; D] = match D {
            1 => std::array::from_fn(|_| grad[0] / h[0][0]),
            _ => {
                let det = h[0][0] * h[1][1] - h[0][1] * h[1][0];
                let s = [
                    (h[1][1] * grad[0] - h[0][1] * grad[1]) / det,
                    (h[0][0] * grad[1] - h[1][0] * grad[0]) / det,
                ];
                std::array::from_fn(|a| s[a])
            }
        };
        let mut t = 1.0;
        loop {
            let next: [f64; D] = std::array::from_fn(|a| l[a] + t * step[a]);
            if let Some(v) = f(&next).filter(|&v| v >= value) {
                l = next;
                value = v;
                break;
            }
            t *= 0.5;
            if t < 1e-14 {
                return Some(value);
            }
        }
        if step.iter().map(|s| (t * s).abs()).sum::<f64>() < 1e-14 {
            break;
        }
    }
    Some(value)
}

/// The most likely log-likelihood per pair (up to `Σ p ln p`) of a distribution
/// whose pair t-value is `t`, by brute force over the mean: every one of 4,000
/// means across the range, each with its variance fixed by the constraint (both
/// moments fixed: a concave problem with one maximum), the best refined.
fn best_with_t_value(p: &[f64; 5], t: f64) -> Option<f64> {
    if t == 0.0 {
        let g = SCORE.map(|a| [a - 0.5]);
        return dual(p, &g).map(|v| -v);
    }
    let profile = |mu: f64| -> Option<f64> {
        let v = ((mu - 0.5) / t).powi(2);
        let g = SCORE.map(|a| [a - mu, (a - mu).powi(2) - v]);
        // Outside the moments a distribution on the five scores can have, no
        // maximum: the dual runs off (or a cell would be negative).
        if v >= mu * (1.0 - mu) {
            return None;
        }
        let lo = ((mu * 4.0).floor() as usize).min(3);
        if v <= (mu - SCORE[lo]) * (SCORE[lo + 1] - mu) {
            return None;
        }
        dual(p, &g).map(|d| -d)
    };
    let (from, to) = if t > 0.0 { (0.5, 1.0) } else { (0.0, 0.5) };
    const N: usize = 4000;
    let at = |k: usize| from + (to - from) * (k as f64 + 0.5) / N as f64;
    let (k, _) = (0..N)
        .filter_map(|k| profile(at(k)).map(|v| (k, v)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    // Ternary search around the best point of the scan.
    let h = (to - from) / N as f64;
    let (mut a, mut b) = (at(k) - h, at(k) + h);
    let value = |m: f64| profile(m).unwrap_or(f64::NEG_INFINITY);
    for _ in 0..200 {
        let (c, d) = (a + (b - a) / 3.0, b - (b - a) / 3.0);
        if value(c) < value(d) {
            a = c;
        } else {
            b = d;
        }
    }
    Some(value(0.5 * (a + b)).max(value(at(k))))
}

/// The normalized LLR by brute force: empty cells weighted 10⁻³ of a pair, as
/// the ladder and fishtest do.
fn brute_force_normalized_llr(counts: [u64; 5], elo0: f64, elo1: f64) -> Option<f64> {
    let c = counts.map(|c| if c == 0 { 1e-3 } else { c as f64 });
    let n: f64 = c.iter().sum();
    let p = c.map(|x| x / n);
    let t = |nelo: f64| nelo / (800.0 / std::f64::consts::LN_10) * std::f64::consts::SQRT_2;
    Some(n * (best_with_t_value(&p, t(elo1))? - best_with_t_value(&p, t(elo0))?))
}

fn assert_matches_brute_force(counts: [u64; 5], elo0: f64, elo1: f64, wrong: &mut Vec<String>) {
    let want = brute_force_normalized_llr(counts, elo0, elo1);
    let got = (Pentanomial { counts }).llr(EloModel::Normalized, elo0, elo1);
    match (got, want) {
        (Ok(g), Some(w)) if (g - w).abs() <= 1e-6 * w.abs().max(1e-3) => {}
        (g, w) => wrong.push(format!("{counts:?} [{elo0}, {elo1}]: {g:?}, brute force {w:?}")),
    }
}

#[test]
fn the_normalized_llr_is_the_global_maximum_wherever_it_exists() {
    let mut wrong = Vec::new();
    // A draw-heavy record between hypotheses far apart: the constrained likelihood
    // has several local maxima (this once read "not computable"; brute force
    // gives -8.03).
    assert_matches_brute_force([0, 1, 64, 1, 0], 0.0, 100.0, &mut wrong);
    let issue = (Pentanomial {
        counts: [0, 1, 64, 1, 0],
    })
    .llr(EloModel::Normalized, 0.0, 100.0)
    .expect("computable");
    assert!((issue + 8.03).abs() < 0.005, "{issue}");
    // 200 draw-heavy records of 1,000 pairs at [0, 150], drawn around even.
    let mut state = 17u64;
    let mut uniform = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for k in 0..200 {
        let s = 0.5 + 0.04 * (k as f64 / 200.0 - 0.5);
        let dist = rating::sprt::pair_distribution(s, true);
        let mut counts = [0u64; 5];
        for _ in 0..1000 {
            let mut u = uniform();
            let cell = dist.iter().position(|&d| {
                u -= d;
                u < 0.0
            });
            counts[cell.unwrap_or(4)] += 1;
        }
        assert_matches_brute_force(counts, 0.0, 150.0, &mut wrong);
    }
    // Every normalized vector of fishtest's table.
    let mut checked = 0;
    for line in include_str!("data/fishtest_llr.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let fields: Vec<&str> = line.split('\t').collect();
        if fields[1] != "normalized" {
            continue;
        }
        let counts: Vec<u64> = fields[0].split(' ').map(|c| c.parse().unwrap()).collect();
        let (elo0, elo1) = (fields[2].parse().unwrap(), fields[3].parse().unwrap());
        assert_matches_brute_force(counts.try_into().unwrap(), elo0, elo1, &mut wrong);
        checked += 1;
    }
    assert!(checked >= 200, "{checked} vectors");
    assert!(wrong.is_empty(), "{} differ:\n{}", wrong.len(), wrong.join("\n"));
}
