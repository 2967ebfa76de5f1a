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

/// Every Rust file of the ladder's crate: its path below `ladder/src`, and its text.
fn ladder_sources() -> Vec<(String, String)> {
    let src = workspace_root().join("ladder/src");
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
                files.push((relative, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    assert!(files.len() > 50, "the ladder's sources were not found");
    files
}

/// Where the ladder may name a transport (tonic, or a type of
/// `ladder.proto`): the gRPC front end, the worker's client (the one file where
/// its calls and replies become the service's own types), the listeners, the
/// wiring and the binary.
const TRANSPORT_PLACES: &[&str] = &["grpc/", "worker/client.rs", "serve/", "conn.rs", "bin/"];

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
    let mut found = Vec::new();
    for (relative, text) in ladder_sources() {
        if TRANSPORT_PLACES.iter().any(|p| relative.starts_with(p)) {
            continue;
        }
        found.extend(
            transport_lines(&text)
                .into_iter()
                .map(|l| format!("{relative}: {l}")),
        );
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

/// The module a source file is, as its path's segments inside its crate:
/// `app/service.rs` is `app::service`, `app/mod.rs` is `app`, the crate's root
/// file is the empty path.
fn module_of(relative: &Path) -> Vec<String> {
    let mut segments: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if segments.last().is_some_and(|s| s == "mod") || segments == ["lib"] || segments == ["main"] {
        segments.pop();
    }
    segments
}

/// The paths of a use tree or a path in code, from just after its `crate::`,
/// `super::` or `self::` (or a `use `): `a::{b, c::d as e}, …` gives `a::b` and
/// `a::c::d`, each with the name it is known by (`b`, `e`).
fn path_tree(code: &str) -> Vec<(Vec<String>, String)> {
    fn skip_space(s: &[u8], i: &mut usize) {
        while *i < s.len() && s[*i].is_ascii_whitespace() {
            *i += 1;
        }
    }
    fn word(s: &[u8], i: &mut usize) -> String {
        let start = *i;
        while *i < s.len() && (s[*i].is_ascii_alphanumeric() || s[*i] == b'_' || s[*i] == b'*') {
            *i += 1;
        }
        String::from_utf8_lossy(&s[start..*i]).into_owned()
    }
    fn tree(s: &[u8], i: &mut usize, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
        let outer = prefix.len();
        loop {
            skip_space(s, i);
            if *i < s.len() && s[*i] == b'{' {
                // A group: each item a tree of its own under the prefix.
                *i += 1;
                loop {
                    skip_space(s, i);
                    if *i >= s.len() || s[*i] == b'}' {
                        *i += 1;
                        break;
                    }
                    tree(s, i, prefix, out);
                    skip_space(s, i);
                    match s.get(*i) {
                        Some(b',') => *i += 1,
                        Some(b'}') => {
                            *i += 1;
                            break;
                        }
                        _ => break,
                    }
                }
                prefix.truncate(outer);
                return;
            }
            let segment = word(s, i);
            if segment.is_empty() {
                break;
            }
            prefix.push(segment);
            if s[*i..].starts_with(b"::") {
                *i += 2;
                continue;
            }
            break;
        }
        if prefix.len() > outer {
            let mut known_as = prefix.last().cloned().unwrap_or_default();
            skip_space(s, i);
            if s[*i..].starts_with(b"as ") {
                *i += 3;
                skip_space(s, i);
                known_as = word(s, i);
            }
            out.push((prefix.clone(), known_as));
        }
        prefix.truncate(outer);
    }
    let mut out = Vec::new();
    tree(code.as_bytes(), &mut 0, &mut Vec::new(), &mut out);
    out
}

/// The code of a source file: comments left out, and its test module (which
/// reaches into what it tests) cut off.
fn code_without_tests(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
    text.lines().map(code_of).collect::<Vec<_>>().join("\n")
}

/// What the file of module `at` names, as absolute paths inside its crate: its
/// `crate::`, `super::` and `self::` paths, and its other `use` trees (which
/// start at its own submodules), each with the name it brings in.
fn named_paths(code: &str, at: &[String]) -> Vec<(Vec<String>, String)> {
    let mut found = Vec::new();
    for prefix in ["crate::", "super::", "self::", "use "] {
        let mut rest = code;
        while let Some(k) = rest.find(prefix) {
            let before = rest[..k].chars().last();
            rest = &rest[k + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let base: Vec<String> = match prefix {
                "crate::" => Vec::new(),
                "super::" => at[..at.len().saturating_sub(1)].to_vec(),
                _ => at.to_vec(),
            };
            for (path, known_as) in path_tree(rest) {
                let mut absolute = base.clone();
                let mut segments = path.into_iter().peekable();
                // `super::super::x`, and `use crate::…` / `use super::…`, which
                // the other prefixes read.
                if prefix == "use "
                    && segments
                        .peek()
                        .is_some_and(|s| ["crate", "super", "self"].contains(&s.as_str()))
                {
                    continue;
                }
                while segments.peek().is_some_and(|s| s == "super") {
                    segments.next();
                    absolute.pop();
                }
                absolute.extend(segments);
                found.push((absolute, known_as));
            }
        }
    }
    found
}

/// Each module of the crate rooted at `root` (its `lib.rs` or `main.rs` and the
/// folders beside it; `skip` left out) that has submodules, with the graph of
/// its submodules: which names which, by a path through the module or through
/// a name the module's own file brings in from a submodule (`pub use`).
fn submodule_graphs(root: &Path, skip: &[&str]) -> BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> {
    let mut files: Vec<(Vec<String>, String)> = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap();
            if skip.iter().any(|s| relative == Path::new(s)) {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let code = code_without_tests(&std::fs::read_to_string(&path).unwrap());
                files.push((module_of(relative), code));
            }
        }
    }
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for module in &modules {
        for depth in 0..module.len() {
            graphs
                .entry(module[..depth].to_vec())
                .or_default()
                .entry(module[depth].clone())
                .or_default();
        }
    }
    // The names a module's own file brings in from its submodules.
    let mut brought: BTreeMap<(Vec<String>, String), String> = BTreeMap::new();
    for (module, code) in &files {
        let Some(children) = graphs.get(module) else {
            continue;
        };
        for (path, known_as) in named_paths(code, module) {
            if let Some(child) = path.get(module.len())
                && path.starts_with(module)
                && children.contains_key(child)
                && path.len() > module.len() + 1
            {
                brought.insert((module.clone(), known_as), child.clone());
            }
        }
    }
    for (module, code) in &files {
        for (parent, graph) in &mut graphs {
            if module.len() <= parent.len() || !module.starts_with(parent) {
                continue;
            }
            let from = &module[parent.len()];
            for (path, _) in named_paths(code, module) {
                let Some(next) = path.get(parent.len()).filter(|_| path.starts_with(parent)) else {
                    continue;
                };
                let to = if graph.contains_key(next) {
                    next.clone()
                } else if let Some(child) = brought.get(&(parent.clone(), next.clone())) {
                    child.clone()
                } else {
                    continue;
                };
                if &to != from {
                    graph.get_mut(from).unwrap().insert(to);
                }
            }
        }
    }
    graphs
}

/// The crates' roots: each library's `src` and each binary of its own folder
/// or file under `src/bin`.
fn crate_roots() -> Vec<(std::path::PathBuf, Vec<&'static str>)> {
    let root = workspace_root();
    let mut roots = Vec::new();
    for krate in [
        "engine", "rating", "referee", "ladder", "bots", "python", "proto", "tests",
    ] {
        let src = root.join(krate).join("src");
        if !src.is_dir() {
            continue;
        }
        roots.push((src.clone(), vec!["bin"]));
        let Ok(bins) = std::fs::read_dir(src.join("bin")) else {
            continue;
        };
        for bin in bins {
            let path = bin.unwrap().path();
            if path.is_dir() {
                roots.push((path, vec![]));
            }
        }
    }
    roots
}

/// No module of any crate (a library, or a binary with its own folder) has
/// submodules that name each other in a circle, at any depth: the ladder's
/// `app` as much as the crate's top level.
#[test]
fn no_module_has_a_circle_of_submodules() {
    let mut seen = 0;
    for (root, skip) in crate_roots() {
        for (module, graph) in submodule_graphs(&root, &skip) {
            seen += 1;
            if let Some(found) = circle(&graph) {
                panic!(
                    "{}: in module `{}`, the submodules {} name each other in a circle",
                    root.display(),
                    if module.is_empty() {
                        "crate".to_owned()
                    } else {
                        module.join("::")
                    },
                    found.join(" -> ")
                );
            }
        }
    }
    assert!(seen > 20, "the check read the modules ({seen} with submodules)");
}

/// The submodule check reads what it must: groups, `as`, `super::super`, a
/// test module left out, and a name a module brings in from a submodule.
#[test]
fn the_submodule_check_reads_groups_supers_and_brought_names() {
    assert_eq!(
        path_tree("a::{b, c::d as e}, x;"),
        [
            (vec!["a".to_owned(), "b".to_owned()], "b".to_owned()),
            (
                vec!["a".to_owned(), "c".to_owned(), "d".to_owned()],
                "e".to_owned()
            )
        ]
    );
    let at = vec!["app".to_owned(), "auth".to_owned()];
    let named: Vec<Vec<String>> = named_paths(
        "use super::{service::S, tokens::T};\nlet r = super::super::store::x();\n",
        &at,
    )
    .into_iter()
    .map(|(p, _)| p)
    .collect();
    for expected in [
        vec!["app", "service", "S"],
        vec!["app", "tokens", "T"],
        vec!["store", "x"],
    ] {
        let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        assert!(named.contains(&expected), "{expected:?} in {named:?}");
    }
    // A circle through a name `mod.rs` brings in: a uses S (from b), b uses a.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("m")).unwrap();
    std::fs::write(dir.path().join("lib.rs"), "mod m;\n").unwrap();
    std::fs::write(dir.path().join("m/mod.rs"), "mod a;\nmod b;\npub use b::S;\n").unwrap();
    std::fs::write(dir.path().join("m/a.rs"), "use super::S;\n").unwrap();
    std::fs::write(dir.path().join("m/b.rs"), "pub struct S;\n").unwrap();
    let graphs = submodule_graphs(dir.path(), &[]);
    assert_eq!(circle(&graphs[&vec!["m".to_owned()]]), None);
    std::fs::write(
        dir.path().join("m/b.rs"),
        "pub struct S;\nfn f() { super::a::g() }\n#[cfg(test)]\nmod tests { use super::super::a; }\n",
    )
    .unwrap();
    let graphs = submodule_graphs(dir.path(), &[]);
    assert_eq!(circle(&graphs[&vec!["m".to_owned()]]).unwrap(), ["a", "b", "a"]);
    // Only the test module names a: no circle.
    std::fs::write(
        dir.path().join("m/b.rs"),
        "pub struct S;\n#[cfg(test)]\nmod tests { use super::super::a; }\n",
    )
    .unwrap();
    assert_eq!(
        circle(&submodule_graphs(dir.path(), &[])[&vec!["m".to_owned()]]),
        None
    );
}

/// The proofs that a caller's token passed (`AdminCall`, `HostCall`) are made
/// in one file, the one that checks the token: any other file of `app` could
/// (their field is the module's), so this keeps it to the checks.
#[test]
fn only_the_token_checks_make_a_proof_of_a_caller() {
    let app = workspace_root().join("ladder/src/app");
    let (mut made, mut in_auth) = (Vec::new(), [false; 2]);
    for entry in std::fs::read_dir(&app).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let code = code_of(line);
            for (k, proof) in ["AdminCall", "HostCall"].into_iter().enumerate() {
                if !proof_made(code, proof) {
                    continue;
                }
                if name == "auth.rs" {
                    in_auth[k] = true;
                } else {
                    made.push(format!("{name}: {}", line.trim()));
                }
            }
        }
    }
    assert!(
        made.is_empty(),
        "a proof of a caller made outside auth.rs:\n{}",
        made.join("\n")
    );
    assert_eq!(
        in_auth, [true; 2],
        "auth.rs makes both proofs where it checks the token"
    );
    // The check sees a proof made, and not a type named.
    assert!(proof_made("Ok(AdminCall(()))", "AdminCall"));
    assert!(proof_made("let p = HostCall (());", "HostCall"));
    assert!(!proof_made(
        "pub async fn f(&self, _: &AdminCall) -> Result<(), E>",
        "AdminCall"
    ));
    assert!(!proof_made("pub struct AdminCall(pub(super) ());", "AdminCall"));
}

/// Whether `code` makes a `proof` (calls its constructor), not only names it
/// or declares it.
fn proof_made(code: &str, proof: &str) -> bool {
    code.match_indices(proof).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + proof.len()..].trim_start();
        before.is_none_or(|c| !c.is_alphanumeric() && c != '_')
            && after.starts_with('(')
            && !code[..at].trim_end().ends_with("struct")
    })
}

/// The functions of `code` (a file of the store, its tests left out): each
/// one's signature line and its text up to the next function.
fn functions(code: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in code.lines() {
        let t = line.trim_start();
        let t = t
            .strip_prefix("pub(super) ")
            .or_else(|| t.strip_prefix("pub(crate) "))
            .unwrap_or(t);
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let t = t.strip_prefix("async ").unwrap_or(t);
        if t.starts_with("fn ") {
            out.push((String::new(), String::new()));
        }
        if let Some((sig, body)) = out.last_mut() {
            // A signature may run over lines: all of it up to the body.
            if !body.contains('{') {
                sig.push_str(line.trim());
                sig.push(' ');
            }
            body.push_str(code_of(line));
            body.push('\n');
        }
    }
    out
}

/// The transactions a function's text opens.
fn transactions_opened(body: &str) -> usize {
    ["write_tx()", "read_tx()", ".begin()", ".begin_with("]
        .iter()
        .map(|t| body.matches(t).count())
        .sum()
}

/// The store's functions that break "one use case, one transaction": that
/// open more than one, or open one while handed their caller's.
fn transaction_breaches(code: &str) -> Vec<String> {
    functions(code)
        .into_iter()
        .filter(|(sig, _)| !sig.contains("fn write_tx(") && !sig.contains("fn read_tx("))
        .filter_map(|(sig, body)| {
            let opened = transactions_opened(&body);
            let handed = sig.contains("tx: &mut");
            (opened > 1 || (handed && opened > 0)).then(|| format!("{sig} opens {opened}"))
        })
        .collect()
}

/// One use case is one transaction, by construction: only the store can open
/// one (its pool is its own, and no file of the ladder outside `store/` and
/// the bench's scratch database names sqlx); each of its operations opens at
/// most one; and a helper handed its caller's transaction opens none, so an
/// operation built of helpers is still one transaction.
#[test]
fn each_operation_of_the_store_is_one_transaction_and_only_the_store_opens_one() {
    let (mut breaches, mut opening) = (Vec::new(), 0);
    let mut sqlx_outside = Vec::new();
    for (relative, text) in ladder_sources() {
        let code = code_without_tests(&text);
        if relative.starts_with("store/") {
            breaches.extend(
                transaction_breaches(&code)
                    .into_iter()
                    .map(|b| format!("{relative}: {b}")),
            );
            opening += functions(&code)
                .iter()
                .filter(|(_, body)| transactions_opened(body) > 0)
                .count();
        } else if !relative.starts_with("bin/ladder/commands/bench/")
            && code.lines().any(|l| code_of(l).contains("sqlx"))
        {
            sqlx_outside.push(relative);
        }
    }
    assert!(
        breaches.is_empty(),
        "operations of more than one transaction:\n{}",
        breaches.join("\n")
    );
    // The check read the store: its writes open their transactions in it.
    assert!(
        opening >= 20,
        "only {opening} functions of the store open a transaction"
    );
    assert!(
        sqlx_outside.is_empty(),
        "sqlx named outside the store: {sqlx_outside:?}"
    );
}

#[test]
fn the_transaction_check_finds_two_in_one_and_one_in_a_helper() {
    let code = "impl Bots<'_> {
    pub async fn one(self) -> Result<()> {
        let mut tx = self.store.write_tx().await?;
        helper(&mut tx).await?;
        tx.commit().await?;
        Ok(())
    }
    pub async fn two(self) -> Result<()> {
        let a = self.store.write_tx().await?; // the first
        let b = self.store.pool.begin().await?;
        Ok(())
    }
    async fn helper(
        self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    ) -> Result<()> {
        let inner = self.store.write_tx().await?;
        Ok(())
    }
    async fn fine(self, tx: &mut sqlx::Transaction<'static, sqlx::Any>) -> Result<()> {
        // write_tx() in a comment is not a transaction
        Ok(())
    }
}
";
    let found = transaction_breaches(code);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].contains("fn two") && found[0].ends_with("opens 2"),
        "{found:?}"
    );
    assert!(
        found[1].contains("fn helper") && found[1].contains("tx: &mut"),
        "{found:?}"
    );
}

/// The store is found by name: each aggregate's repository (`store.bots()`,
/// `store.groups()`, … declared in `store/mod.rs`) is written in the file of
/// its name, and `Store` itself keeps only what is the whole database's (its
/// opening and clock in `mod.rs`, the host's operations in `ops.rs` and
/// `upkeep.rs`).
#[test]
fn each_repository_of_the_store_lives_in_the_file_of_its_name() {
    let store = workspace_root().join("ladder/src/store");
    let declared = std::fs::read_to_string(store.join("mod.rs")).unwrap();
    let repositories: BTreeMap<String, String> = declared
        .lines()
        .filter_map(|l| {
            let (repo, accessor) = code_of(l).trim().strip_suffix(';')?.split_once(" => ")?;
            Some((repo.to_owned(), accessor.to_owned()))
        })
        .collect();
    assert!(repositories.len() >= 10, "{repositories:?}");
    let mut misplaced = Vec::new();
    for entry in std::fs::read_dir(&store).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines().filter(|l| l.starts_with("impl ")) {
            let name = line["impl ".len()..].split(['<', ' ']).next().unwrap_or_default();
            let home_ok = match repositories.get(name) {
                Some(accessor) => *accessor == file,
                None if name == "Store" => ["mod", "ops", "upkeep"].contains(&file.as_str()),
                None => true,
            };
            if !home_ok {
                misplaced.push(format!("store/{file}.rs: {line}"));
            }
        }
    }
    assert!(
        misplaced.is_empty(),
        "written outside the file of its name:\n{}",
        misplaced.join("\n")
    );
}

/// The functions of `code` whose error is a plain string (`Result<T, String>`,
/// or a `FromStr` whose `Err` is one): a caller can only print it.
fn string_errors(code: &str) -> Vec<String> {
    let mut found: Vec<String> = functions(code)
        .into_iter()
        .filter_map(|(signature, _)| {
            let head = signature.split('{').next().unwrap_or_default();
            let head = head.split(" where ").next().unwrap_or_default();
            let returns = head.split_once("->")?.1;
            let compact: String = returns.chars().filter(|c| !c.is_whitespace()).collect();
            let result = compact.starts_with("Result<") || compact.starts_with("std::result::Result<");
            (result && compact.ends_with(",String>")).then(|| head.trim().to_owned())
        })
        .collect();
    found.extend(
        code.lines()
            .filter(|l| code_of(l).replace(' ', "").contains("typeErr=String;"))
            .map(|l| l.trim().to_owned()),
    );
    found
}

/// The ladder's library and the rating crate give typed errors (thiserror):
/// no function of theirs outside the binary returns its error as a string.
#[test]
fn the_ladders_library_and_the_rating_crate_return_no_string_errors() {
    let mut found = Vec::new();
    let mut read = 0;
    for root in ["ladder/src", "rating/src"] {
        let mut stack = vec![workspace_root().join(root)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() && !path.ends_with("bin") {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let code = code_without_tests(&std::fs::read_to_string(&path).unwrap());
                    read += functions(&code).len();
                    found.extend(
                        string_errors(&code)
                            .into_iter()
                            .map(|f| format!("{}: {f}", path.display())),
                    );
                }
            }
        }
    }
    assert!(read > 500, "only {read} functions read");
    assert!(
        found.is_empty(),
        "string errors in a library:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_string_error_check_finds_one_over_lines_and_passes_typed_ones() {
    let code = "pub fn a(x: u8) -> Result<u8, String> {\n}\n\
                fn b(\n    x: u8,\n) -> std::result::Result<Vec<(u8, String)>, String>\nwhere\n    T: Clone,\n{\n}\n\
                pub fn c() -> Result<HashMap<u8, String>> {\n}\n\
                pub fn d() -> Result<String, ParseError> {\n}\n\
                impl FromStr for X {\n    type Err = String;\n}\n";
    assert_eq!(
        string_errors(code),
        vec![
            "pub fn a(x: u8) -> Result<u8, String>",
            "fn b( x: u8, ) -> std::result::Result<Vec<(u8, String)>, String>",
            "type Err = String;"
        ]
    );
}
