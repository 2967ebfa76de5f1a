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
