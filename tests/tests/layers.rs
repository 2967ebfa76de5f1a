//! The crates' shapes: no module of a crate reaches, through its imports, back
//! to itself, and the ladder's service never names its pages. Read from the
//! sources (a `crate::X` path outside a comment is a use of module `X`), so a
//! change that closes a circle fails here, naming it.

use astragal_tests::workspace_root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module of the crate at `src` and the top-level modules it names.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let module = name.strip_suffix(".rs").unwrap_or(&name).to_owned();
        if !["lib", "main", "bin"].contains(&module.as_str()) {
            modules.insert(module);
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> =
        modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    let mut stack = vec![src.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(src).unwrap().to_string_lossy().into_owned();
            let top = relative.split('/').next().unwrap();
            let top = top.strip_suffix(".rs").unwrap_or(top).to_owned();
            if path.is_dir() {
                if top != "bin" {
                    stack.push(path);
                }
                continue;
            }
            if !modules.contains(&top) || path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for used in crate_paths(&text) {
                if used != top && modules.contains(&used) {
                    graph.get_mut(&top).unwrap().insert(used);
                }
            }
        }
    }
    graph
}

/// A line's code: what comes before its comment. A comment starts at `//`
/// at the line's start or after a space (not in `http://`).
fn code_of(line: &str) -> &str {
    match line.find("//") {
        Some(at) if line[..at].trim().is_empty() || line[..at].ends_with(char::is_whitespace) => &line[..at],
        _ => line,
    }
}

/// The first segments of the `crate::` paths in `text`, comments left out.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let mut rest = code_of(line);
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().last();
            rest = &rest[at + "crate::".len()..];
            // `some_crate::x` is another crate's path.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.insert(name);
        }
    }
    found
}

/// A circle of modules, if the graph has one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        at: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(at.to_owned(), Mark::Open);
        path.push(at.to_owned());
        for next in &graph[at] {
            match marks[next] {
                Mark::Open => {
                    let from = path.iter().position(|m| m == next).unwrap();
                    let mut found = path[from..].to_vec();
                    found.push(next.clone());
                    return Some(found);
                }
                Mark::New => {
                    if let Some(found) = visit(next, graph, marks, path) {
                        return Some(found);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(at.to_owned(), Mark::Done);
        None
    }
    let mut marks: BTreeMap<String, Mark> = graph.keys().map(|k| (k.clone(), Mark::New)).collect();
    for start in graph.keys() {
        if marks[start] == Mark::New
            && let Some(found) = visit(start, graph, &mut marks, &mut Vec::new())
        {
            return Some(found);
        }
    }
    None
}

#[test]
fn no_crate_has_a_circle_of_modules() {
    let root = workspace_root();
    for krate in ["engine", "rating", "referee", "ladder", "bots", "python", "proto"] {
        let src = root.join(krate).join("src");
        if !src.is_dir() {
            continue;
        }
        let graph = module_graph(&src);
        if let Some(found) = circle(&graph) {
            panic!(
                "{krate}: the modules {} name each other in a circle",
                found.join(" -> ")
            );
        }
    }
}

#[test]
fn the_ladders_core_names_no_front_end_and_only_serve_wires_them() {
    let graph = module_graph(&workspace_root().join("ladder/src"));
    for front in ["grpc", "web", "serve", "worker", "conn"] {
        assert!(
            !graph["app"].contains(front),
            "the service (app) names {front}: {:?}",
            graph["app"]
        );
    }
    // The two front ends are siblings: neither names the other, and only
    // `serve` (and the binary) names both.
    for (module, uses) in &graph {
        for front in ["grpc", "web"] {
            assert!(
                module == "serve" || module == front || !uses.contains(front),
                "{module} names the front end {front}"
            );
        }
    }
    for core in ["app", "grpc", "web", "serve", "worker"] {
        assert!(!graph["store"].contains(core), "the store names {core}");
    }
    for pure in ["season", "dealing", "clock"] {
        assert!(
            !graph[pure].contains("store"),
            "{pure} reads the store: {:?}",
            graph[pure]
        );
    }
}

/// Where the ladder may name a transport (tonic, or a type of
/// `ladder.proto`): the gRPC front end, the worker (a gRPC client through and
/// through), the listeners, the wiring and the binary.
const TRANSPORT_PLACES: &[&str] = &["grpc/", "worker/", "serve/", "conn.rs", "bin/"];

/// The lines of `text` whose code (comments left out) names tonic or a proto type.
fn transport_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| {
            let code = code_of(line);
            code.contains("tonic") || code.contains("proto::")
        })
        .map(|line| line.trim().to_owned())
        .collect()
}

#[test]
fn outside_its_front_ends_no_file_of_the_ladder_names_a_transport() {
    let src = workspace_root().join("ladder/src");
    let mut found = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let relative = path.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            if path.extension().is_none_or(|e| e != "rs")
                || TRANSPORT_PLACES.iter().any(|p| relative.starts_with(p))
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            found.extend(
                transport_lines(&text)
                    .into_iter()
                    .map(|l| format!("{relative}: {l}")),
            );
        }
    }
    assert!(
        found.is_empty(),
        "these name a transport outside its front ends:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_transport_check_finds_tonic_and_proto_in_code_not_in_comments() {
    let code = "use tonic::Status;\n// tonic in a comment\nlet x = proto::ladder::LeaseReply::default(); // fine\n/// [`proto::ladder`]\nlet y = 1; // tonic\n";
    assert_eq!(
        transport_lines(code),
        [
            "use tonic::Status;",
            "let x = proto::ladder::LeaseReply::default(); // fine"
        ]
    );
}

/// The check itself finds what it must: a circle, a path in code, and not a
/// path in a comment or another crate's.
#[test]
fn the_check_finds_a_circle_and_ignores_comments() {
    let text = "use crate::web::x; // crate::store\n/// [`crate::season`]\nlet a = other_crate::b; crate::clock::now()";
    let found: Vec<String> = crate_paths(text).into_iter().collect();
    assert_eq!(found, ["clock", "web"]);
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(circle(&graph).unwrap(), ["a", "b", "c", "a"]);
    let mut open = graph.clone();
    open.get_mut("c").unwrap().clear();
    assert_eq!(circle(&open), None);
}

/// The tuples of three or more in the `pub` signatures of `text`: each as
/// `function: (A, B, C)`. A signature runs from `pub … fn` to its `{` or `;`; a
/// tuple is a `(` that follows `<`, `-> `, `: `, `[` or `, ` inside it.
fn wide_tuples(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("pub") {
        rest = &rest[at + 3..];
        // `pub(crate)`, `pub(super)`: the visibility's own parentheses.
        let head = match rest.strip_prefix('(') {
            Some(inner) => inner.split_once(')').map_or("", |(_, after)| after),
            None => rest,
        }
        .trim_start();
        let Some(after_fn) = head
            .strip_prefix("fn ")
            .or_else(|| head.strip_prefix("async fn "))
        else {
            continue;
        };
        let end = after_fn.find(['{', ';']).unwrap_or(after_fn.len());
        let signature = &after_fn[..end];
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let bytes = signature.as_bytes();
        for (i, _) in signature.match_indices('(') {
            let before = &signature[..i];
            if !["<", "-> ", ": ", "[", ", "].iter().any(|p| before.ends_with(p)) {
                continue;
            }
            let (mut depth, mut commas, mut close) = (0, 0, signature.len());
            for (j, &b) in bytes.iter().enumerate().skip(i) {
                match b {
                    b'(' | b'<' | b'[' => depth += 1,
                    b')' | b'>' | b']' if !signature[..j].ends_with('-') => {
                        depth -= 1;
                        if depth == 0 {
                            close = j;
                            break;
                        }
                    }
                    b',' if depth == 1 => commas += 1,
                    _ => {}
                }
            }
            if commas >= 2 {
                found.push(format!(
                    "{name}: {}",
                    &signature[i..=close.min(signature.len() - 1)]
                ));
            }
        }
    }
    found
}

/// No public signature of the ladder takes or gives a tuple of three or more:
/// such a value gets a struct whose fields say what each part is.
#[test]
fn no_public_signature_of_the_ladder_has_a_tuple_of_three() {
    let mut wide = Vec::new();
    let mut stack = vec![workspace_root().join("ladder/src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                wide.extend(
                    wide_tuples(&text)
                        .into_iter()
                        .map(|t| format!("{}: {t}", path.display())),
                );
            }
        }
    }
    assert!(
        wide.is_empty(),
        "tuples of three or more in public signatures:\n{}",
        wide.join("\n")
    );
}

#[test]
fn the_tuple_check_finds_a_wide_tuple_and_passes_a_pair() {
    let code = "pub async fn logs(&self, bot: BotId) -> Result<(Option<String>, String, String)> {\n\
                pub(crate) fn pair(x: (u32, u32)) -> Vec<(u8, u16)> {\n\
                pub fn closure(f: impl Fn(u8, u8, u8) -> u8) {\n\
                pub fn take(x: &[(u8, Vec<(u8, u8)>, u8)]);\n";
    assert_eq!(
        wide_tuples(code),
        vec![
            "logs: (Option<String>, String, String)",
            "take: (u8, Vec<(u8, u8)>, u8)"
        ]
    );
}

/// Every word a status column of the store holds, from the enums themselves.
fn status_words() -> Vec<&'static str> {
    use ladder::store::{BotStatus, CompetitionStatus, GroupStatus, Phase, StatusBy};
    let mut words: Vec<&'static str> = Vec::new();
    words.extend(BotStatus::ALL.iter().map(|s| s.as_str()));
    words.extend(GroupStatus::ALL.iter().map(|s| s.as_str()));
    words.extend(CompetitionStatus::ALL.iter().map(|s| s.as_str()));
    words.extend(Phase::ALL.iter().map(|s| s.as_str()));
    words.extend(StatusBy::ALL.iter().map(|s| s.as_str()));
    words
}

/// The quoted status words (`'done'`) in the code of `text`, comments left out.
fn spelt_status_words(text: &str, words: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let code = code_of(line);
        for word in words {
            if code.contains(&format!("'{word}'")) {
                found.push(format!("'{word}' in: {}", line.trim()));
            }
        }
    }
    found
}

#[test]
fn no_statement_of_the_store_spells_a_status_word() {
    let words = status_words();
    let store = workspace_root().join("ladder/src/store");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&store).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            found.extend(
                spelt_status_words(&text, &words)
                    .into_iter()
                    .map(|f| format!("{name}: {f}")),
            );
        }
    }
    assert!(
        found.is_empty(),
        "write these from their enums (sql_text!, or .quoted()):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_status_word_check_finds_a_spelt_word_in_code_only() {
    let words = status_words();
    assert!(words.contains(&"build-failed") && words.contains(&"scheduled") && words.contains(&"frozen"));
    let code = "sqlx::query(\"UPDATE bots SET status = 'suspended' WHERE id = $1\")\n\
                // status <> 'done' is implied\n\
                sql_text!(\"WHERE status = \", GroupStatus::Done)\n";
    let found = spelt_status_words(code, &words);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("'suspended'"), "{found:?}");
}
