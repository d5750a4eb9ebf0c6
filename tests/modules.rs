//! The module graph of each crate of the workspace (`src/`, `crates/domain/src`,
//! `crates/store/src`, `crates/core/src`): which module names which, and no cycle in it. A
//! cycle makes a rule impossible to change in one place (each side must be read to change
//! the other), so the test fails on any.
//!
//! A module is a file (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`); a reference is any
//! `crate::…` or `super::…` path in its code (comments and its `#[cfg(test)] mod tests` are
//! not its code), resolved to the longest module it names. A module's use of its own
//! ancestors or descendants is not an edge: a parent declares its children and re-exports
//! them, and that is not a cycle between rules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut inner = prefix.to_vec();
            inner.push(name);
            modules(&path, &inner, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            let mut module = prefix.to_vec();
            if !matches!(stem, "mod" | "lib" | "main") {
                module.push(stem.to_owned());
            }
            if module.is_empty() {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            out.entry(module.join("::")).or_default().push_str(&code(&text));
        }
    }
}

/// A file's code: without its comments (a doc link is not a dependency) and its unit tests.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
    text.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The paths of `text` that name modules of the crate, from its root: `crate::…`, and
/// `super::…` from `module`'s parent; `x::{y, z::w}` groups expanded one level.
fn crate_paths(text: &str, module: &str) -> Vec<String> {
    let parent: Vec<&str> = module.split("::").collect();
    let parent = parent[..parent.len().saturating_sub(1)].join("::");
    let mut paths = Vec::new();
    for (at, root) in text.match_indices("crate::").map(|(at, m)| (at, (m, ""))).chain(
        text.match_indices("super::")
            .filter(|(at, _)| !text[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':'))
            .map(|(at, m)| (at, (m, parent.as_str()))),
    ) {
        let (marker, base) = root;
        let join = |path: &str| match (base.is_empty(), path.is_empty()) {
            (true, _) => path.to_owned(),
            (false, true) => base.to_owned(),
            (false, false) => format!("{base}::{path}"),
        };
        let rest = &text[at + marker.len()..];
        let path: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
        let path = path.trim_end_matches(':').to_owned();
        let after = &rest[path.len()..];
        if let Some(group) = after.strip_prefix("::{").or_else(|| rest.strip_prefix("{")) {
            let inner = group.split('}').next().unwrap_or_default();
            for item in inner.split(',') {
                let item = item.trim().split(" as ").next().unwrap_or_default().trim();
                if !item.is_empty() && item != "self" && item != "*" {
                    paths.push(join(&if path.is_empty() { item.to_owned() } else { format!("{path}::{item}") }));
                }
            }
        }
        if !path.is_empty() {
            paths.push(join(&path));
        }
    }
    paths
}

fn related(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"))
}

/// Tarjan's strongly connected components with more than one module.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[w].min(s.low[v]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.index[w].min(s.low[v]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.insert(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.found
}

/// The module graph of one crate's sources (`src/` of the workspace's root, or a crate's).
fn graph(src: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut texts = BTreeMap::new();
    modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join(src), &[], &mut texts);
    let names: BTreeSet<String> = texts.keys().cloned().collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in &texts {
        let edges = graph.entry(module.clone()).or_default();
        for path in crate_paths(text, module) {
            let mut parts: Vec<&str> = path.split("::").collect();
            while !parts.is_empty() && !names.contains(&parts.join("::")) {
                parts.pop();
            }
            let target = parts.join("::");
            if !target.is_empty() && !related(module, &target) {
                edges.insert(target);
            }
        }
    }
    graph
}

/// Within each crate of the workspace; between them, the compiler refuses a cycle (a crate
/// cannot name one that depends on it).
#[test]
fn no_module_cycle() {
    for src in ["src", "crates/domain/src", "crates/store/src", "crates/core/src"] {
        let graph = graph(src);
        assert!(graph.len() > 20, "the modules of {src} were not found: {}", graph.len());
        let new: Vec<String> =
            cycles(&graph).into_iter().map(|cycle| cycle.into_iter().collect::<Vec<_>>().join(", ")).collect();
        assert!(new.is_empty(), "modules of {src} that reach one another (take the cycle apart):\n{}", new.join("\n"));
    }
}

#[test]
fn paths_are_read_whole_and_groups_expanded() {
    let text = "use crate::domain::{money::Pence, listing}; let x = crate::store::Store::open;";
    assert_eq!(
        crate_paths(text, "web"),
        ["domain::money::Pence", "domain::listing", "domain", "store::Store::open"].map(str::to_owned)
    );
    let text = "use super::{pages::render, extract::PageError}; use super::super::x;";
    assert_eq!(
        crate_paths(text, "web::people"),
        ["web::pages::render", "web::extract::PageError", "web::super::x"].map(str::to_owned)
    );
    assert_eq!(
        code("use crate::a;\n/// [`crate::b`]\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}"),
        "use crate::a;"
    );
    let graph = BTreeMap::from([
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["a".to_owned(), "c".to_owned()])),
        ("c".to_owned(), BTreeSet::new()),
    ]);
    assert_eq!(cycles(&graph), [BTreeSet::from(["a".to_owned(), "b".to_owned()])]);
}

/// Every `.rs` file under `dir` with its code (see [`code`]).
fn files(dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "html" || e == "txt") {
            out.push((path.display().to_string(), code(&std::fs::read_to_string(&path).unwrap_or_default())));
        }
    }
}

/// The edges (API, dashboard, storefront and their templates) show what the use cases answer,
/// the domain's read models (`domain::view`), and never name a type of the store: a store
/// change then stops at the use cases.
#[test]
fn no_store_type_reaches_an_edge() {
    let mut found = Vec::new();
    for dir in ["src/http", "src/web", "src/storefront", "templates"] {
        files(Path::new(dir), &mut found);
    }
    assert!(found.len() > 50, "the edges were not found: {}", found.len());
    let named: Vec<String> = found
        .iter()
        .flat_map(|(path, code)| {
            code.lines()
                .filter(|line| line.contains("store::") || line.contains("rehome_store"))
                .map(move |line| format!("{path}: {}", line.trim()))
        })
        .collect();
    assert!(
        named.is_empty(),
        "store types named at an edge (answer a domain view from a use case):\n{}",
        named.join("\n")
    );
}

/// The domain writes no SQL: it names sqlx only in its `stored.rs` modules (the timestamp's
/// two encodings, a read model's column decoding) and, on its read models, to derive the row
/// mapping, each behind the `sqlx` feature (which only the store turns on).
#[test]
fn the_domain_names_sqlx_only_behind_its_feature() {
    let mut found = Vec::new();
    files(Path::new("crates/domain/src"), &mut found);
    assert!(found.len() > 30, "the domain was not found: {}", found.len());
    let named: Vec<String> = found
        .iter()
        .filter(|(path, _)| !path.ends_with("/stored.rs"))
        .flat_map(|(path, code)| {
            code.lines()
                .filter(|line| line.contains("sqlx") && !line.trim_start().starts_with("#[cfg_attr(feature = \"sqlx\""))
                .filter(|line| line.trim() != "#[cfg(feature = \"sqlx\")]")
                .map(move |line| format!("{path}: {}", line.trim()))
        })
        .collect();
    assert!(named.is_empty(), "sqlx named in the domain outside its feature's derives:\n{}", named.join("\n"));
}

/// No operation's error answer is documented by hand: its statuses come from what it can
/// refuse (`http::docs::refusals`), the catalogue's kinds, so the document cannot say one
/// status while the API answers another.
#[test]
fn no_error_status_is_written_by_hand_in_the_api_document() {
    let mut found = Vec::new();
    files(Path::new("src/http"), &mut found);
    assert!(found.len() > 30, "the API was not found: {}", found.len());
    let written: Vec<String> = found
        .iter()
        .flat_map(|(path, code)| {
            code.lines()
                .filter(|line| line.contains("(status = 4") || line.contains("(status = 5"))
                .map(move |line| format!("{path}: {}", line.trim()))
        })
        .collect();
    assert!(written.is_empty(), "error answers written by hand (declare them with refusals!):\n{}", written.join("\n"));
}

/// A client error of the API is made in one place: from the catalogue's outcomes or the
/// API's own refusals (`HttpRefusal`), both in `src/error.rs`; nowhere else writes a code.
#[test]
fn client_errors_are_made_only_from_the_catalogues() {
    let mut found = Vec::new();
    for dir in ["src/http", "src/web", "src/storefront"] {
        files(Path::new(dir), &mut found);
    }
    let written: Vec<String> = found
        .iter()
        .flat_map(|(path, code)| {
            code.lines()
                .filter(|line| line.contains("ApiError::Client") || line.contains("ApiError::client("))
                .map(move |line| format!("{path}: {}", line.trim()))
        })
        .collect();
    assert!(
        written.is_empty(),
        "client errors made by hand (use an Outcome or an HttpRefusal):\n{}",
        written.join("\n")
    );
}

/// What a use case refused is placed once, in the core, beside its error (`From<…> for
/// Refusal`, matched without a catch-all): the edges answer a `Refusal` one way each
/// (`src/error.rs`), so no edge converts a use case's error on its own and no refusal can
/// become a 500 by being forgotten.
#[test]
fn use_case_errors_reach_the_edges_only_as_a_refusal() {
    let mut found = Vec::new();
    for dir in ["src/http", "src/web", "src/storefront", "crates/core/src"] {
        files(Path::new(dir), &mut found);
    }
    let written: Vec<String> = found
        .iter()
        .filter(|(path, _)| !path.ends_with("usecases/refusal.rs"))
        .flat_map(|(path, code)| {
            code.lines()
                .filter(|line| {
                    let line = line.trim_start();
                    (line.starts_with("impl From<")
                        && (line.contains("for ApiError") || line.contains("for PageError")))
                        || line.contains("pub fn outcome(&self) -> Option<Outcome>")
                        || line.contains("pub fn field_error(&self)")
                })
                .map(move |line| format!("{path}: {}", line.trim()))
        })
        .collect();
    assert!(
        written.is_empty(),
        "a use case's error answered apart from its Refusal (write `From<…> for Refusal` beside it):\n{}",
        written.join("\n")
    );
}

/// The domain documents nothing itself: it names utoipa only in `openapi.rs` and in the
/// derives behind the `openapi` feature, which only the edge (the API's document) turns on.
#[test]
fn the_domain_names_utoipa_only_behind_its_feature() {
    let mut found = Vec::new();
    files(Path::new("crates/domain/src"), &mut found);
    assert!(found.len() > 30, "the domain was not found: {}", found.len());
    let named: Vec<String> = found
        .iter()
        .filter(|(path, _)| !path.ends_with("/openapi.rs"))
        .flat_map(|(path, code)| {
            code.lines()
                .filter(|line| line.contains("utoipa") || line.contains("ToSchema") || line.contains("#[schema("))
                .filter(|line| !line.trim_start().starts_with("#[cfg_attr(feature = \"openapi\""))
                .map(move |line| format!("{path}: {}", line.trim()))
        })
        .collect();
    assert!(named.is_empty(), "utoipa named in the domain outside its feature:\n{}", named.join("\n"));
    let manifest = std::fs::read_to_string("crates/domain/Cargo.toml").unwrap_or_default();
    assert!(
        manifest.lines().any(|l| l.starts_with("utoipa") && l.contains("optional = true")),
        "the domain depends on utoipa only through its openapi feature"
    );
}

/// Who may act is made in few places: an `Actor` only by the two checks of who is calling
/// (an API key's, a dashboard session's: it cannot be written as a literal outside the
/// domain), an `Admin` only by the authorisation check at each edge and, as the operator,
/// by the command line's and the demo data's use cases.
#[test]
fn actors_and_admins_are_made_only_by_the_checks() {
    let mut found = Vec::new();
    for dir in ["src", "crates/core/src", "crates/store/src"] {
        files(Path::new(dir), &mut found);
    }
    let allowed: &[(&str, &[&str])] = &[
        ("Actor::authenticated(", &["usecases/people/callers.rs", "usecases/people/sessions.rs"]),
        ("Admin::check(", &["src/http/auth.rs", "usecases/people/sessions.rs"]),
        ("Admin::operator(", &["usecases/demo.rs", "usecases/accounts.rs"]),
    ];
    let made: Vec<String> = found
        .iter()
        .flat_map(|(path, code)| {
            allowed
                .iter()
                .filter(move |(call, places)| code.contains(call) && !places.iter().any(|p| path.ends_with(p)))
                .map(move |(call, _)| format!("{path}: {call}"))
        })
        .collect();
    assert!(made.is_empty(), "who may act made outside the checks:\n{}", made.join("\n"));
}
