//! The suite's layers (ARCHITECTURE.md), checked over the source so they
//! stay true: no top-level module imports one it may not, and no two files
//! depend on each other in a cycle (a parent module and its own children
//! aside: a `mod.rs` declares and re-exports its children by nature).
//!
//! Imports are read from `crate::` and `super::` paths outside comments.
//! Test-only code (`#[cfg(test)]` modules and files) is left out: a test of
//! a mechanism may drive it through the harness above it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module of the suite and the ones it may import.
const ALLOWED: &[(&str, &[&str])] = &[
    ("transport", &[]),
    ("host", &[]),
    ("record", &["host"]),
    ("mechanisms", &["transport", "host"]),
    ("harness", &["transport"]),
    ("workloads", &["transport", "host", "record", "harness"]),
    ("suite", &["workloads", "harness", "record", "transport", "host"]),
    ("report", &["workloads", "record"]),
];

/// A module path: `["workloads", "paxos", "roles"]`; the crate root is `[]`.
type Module = Vec<String>;

struct Source {
    module: Module,
    text: String,
}

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text without comments and without `#[cfg(test)]` items; the names of
/// child modules declared test-only are returned beside it.
fn strip(text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_children = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let code = line.split("//").next().unwrap_or("");
        if code.trim() == "#[cfg(test)]" {
            let Some(item) = lines.next() else { break };
            let item = item.trim();
            if let Some(name) = item.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                test_children.push(name.trim().to_string());
                continue;
            }
            // Skip the item's braces.
            let mut depth = item.matches('{').count() as i64 - item.matches('}').count() as i64;
            while depth > 0 {
                let Some(l) = lines.next() else { break };
                let l = l.split("//").next().unwrap_or("");
                depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
            }
            continue;
        }
        out.push_str(code);
        out.push('\n');
    }
    (out, test_children)
}

/// Every module path the text names through `crate::` or `super::`.
fn references(text: &str, me: &Module) -> Vec<Module> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    for (start, keyword) in text
        .match_indices("crate::")
        .map(|(i, _)| (i, "crate"))
        .chain(text.match_indices("super::").map(|(i, _)| (i, "super")))
    {
        // `corecast_bench::` and `$crate::` are not this crate's paths.
        if start > 0
            && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_' || bytes[start - 1] == b'$')
        {
            continue;
        }
        let rest = &text[start..];
        let path: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':').collect();
        // A `use a::{b, c}` group stops at the brace: the module is `a`.
        let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Module = if keyword == "crate" {
            Vec::new()
        } else {
            // `super` is the parent of the module the file defines.
            let mut m = me.clone();
            m.pop();
            m
        };
        for s in segments.iter().skip(1) {
            if *s == "super" {
                base.pop();
            } else if !s.is_empty() {
                base.push(s.to_string());
            }
        }
        out.push(base);
    }
    out
}

fn is_ancestor(a: &Module, b: &Module) -> bool {
    a.len() < b.len() && b[..a.len()] == a[..]
}

fn load(src: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut parsed: Vec<(PathBuf, Module, String, Vec<String>)> = files
        .into_iter()
        .map(|f| {
            let (text, tests) = strip(&std::fs::read_to_string(&f).expect("readable source"));
            let module = module_of(src, &f);
            (f, module, text, tests)
        })
        .collect();
    // Drop files declared `#[cfg(test)] mod x;` by their parent.
    let test_only: BTreeSet<Module> = parsed
        .iter()
        .flat_map(|(_, m, _, tests)| {
            tests.iter().map(move |t| {
                let mut c = m.clone();
                c.push(t.clone());
                c
            })
        })
        .collect();
    parsed.retain(|(_, m, _, _)| !test_only.iter().any(|t| t == m || is_ancestor(t, m)));
    parsed.into_iter().map(|(_, module, text, _)| Source { module, text }).collect()
}

/// The known module a path refers to: its longest prefix that is a module.
fn resolve(path: &Module, modules: &BTreeSet<Module>) -> Option<Module> {
    (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains(p))
}

fn edges(sources: &[Source]) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules: BTreeSet<Module> = sources.iter().map(|s| s.module.clone()).collect();
    let mut out: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for s in sources {
        let set = out.entry(s.module.clone()).or_default();
        for r in references(&s.text, &s.module) {
            if let Some(target) = resolve(&r, &modules) {
                if target != s.module {
                    set.insert(target);
                }
            }
        }
    }
    out
}

fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    // Parent/child edges are declarations and re-exports, not dependencies.
    let dep = |a: &Module, b: &Module| !is_ancestor(a, b) && !is_ancestor(b, a);
    let mut found = Vec::new();
    for (a, targets) in edges {
        for b in targets.iter().filter(|b| dep(a, b)) {
            // Is there a path back from b to a?
            let mut seen = BTreeSet::new();
            let mut stack = vec![(b.clone(), vec![a.join("::"), b.join("::")])];
            while let Some((m, trail)) = stack.pop() {
                if !seen.insert(m.clone()) {
                    continue;
                }
                for n in edges.get(&m).into_iter().flatten().filter(|n| dep(&m, n)) {
                    if n == a {
                        found.push(trail.join(" -> ") + " -> " + &a.join("::"));
                    } else {
                        let mut t = trail.clone();
                        t.push(n.join("::"));
                        stack.push((n.clone(), t));
                    }
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(krate).join("src")
}

#[test]
fn every_layer_imports_only_the_layers_below_it() {
    let sources = load(&src("corecast-bench"));
    let mut wrong = Vec::new();
    for (from, targets) in edges(&sources) {
        let (Some(top), false) = (from.first(), from.is_empty()) else { continue };
        let allowed = ALLOWED
            .iter()
            .find(|(m, _)| m == top)
            .unwrap_or_else(|| panic!("module `{top}` has no layer in ALLOWED (and ARCHITECTURE.md)"))
            .1;
        for t in targets {
            let Some(t_top) = t.first() else { continue };
            if t_top != top && !allowed.contains(&t_top.as_str()) {
                wrong.push(format!("{} imports {}", from.join("::"), t.join("::")));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layers of ARCHITECTURE.md:\n{}", wrong.join("\n"));
}

#[test]
fn no_two_files_depend_on_each_other() {
    for krate in ["corecast-bench", "corecast", "corecast-process", "corecast-torture", "corecast-cli"] {
        let found = cycles(&edges(&load(&src(krate))));
        assert!(found.is_empty(), "{krate}: module cycles:\n{}", found.join("\n"));
    }
}

#[test]
fn the_checker_sees_imports_and_cycles() {
    let me: Module = vec!["workloads".into(), "fanout".into()];
    let (text, tests) = strip(
        "use crate::harness::{run_job, Job}; // crate::record in a comment\n\
         use super::stream::Expect;\n#[cfg(test)]\nmod tests {\n    use crate::suite::x;\n}\n#[cfg(test)]\nmod extra;\n",
    );
    assert_eq!(tests, vec!["extra".to_string()]);
    let refs = references(&text, &me);
    assert!(refs.contains(&vec!["harness".to_string()]), "{refs:?}");
    assert!(refs.contains(&vec!["workloads".to_string(), "stream".to_string(), "Expect".to_string()]), "{refs:?}");
    assert!(!refs.iter().any(|r| r.first().is_some_and(|f| f == "record" || f == "suite")), "{refs:?}");
    let m = |s: &str| -> Module { s.split("::").map(String::from).collect() };
    let mut e: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    e.entry(m("a::x")).or_default().insert(m("a::y"));
    e.entry(m("a::y")).or_default().insert(m("a::x"));
    e.entry(m("a")).or_default().insert(m("a::x"));
    e.entry(m("a::x")).or_default().insert(m("a"));
    let c = cycles(&e);
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(c.iter().all(|c| c.contains("a::x") && c.contains("a::y")), "{c:?}");
}
