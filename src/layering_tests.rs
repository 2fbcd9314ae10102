//! The layering drawn in `lib.rs`, checked on the sources: the import graph between top-level
//! modules (`crate::x` paths in src/**/*.rs, comments and literals left out, as
//! `scripts/module-deps.py` reads it) must keep the results layer importing only downward, and
//! hold no circle at all. A new `use` that points up or closes a circle fails here, naming the
//! files behind it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The results layer, lowest first: each may import only modules before it, and [`BELOW`].
const LAYERS: [&str; 7] = [
    "history", "results", "stats", "check", "capacity", "gate", "report",
];

/// What the results layer may import besides itself: the cell's coordinates and the workload
/// (plan, workload, system, recipe), what a cell records (resource, environment). Not `nemesis`,
/// `cluster` or `image`: nothing the results need lives there.
const BELOW: [&str; 8] = [
    "plan",
    "system",
    "strategy",
    "recipe",
    "resource",
    "environment",
    "workload",
    "sync",
];

/// The source without comments, string and char literals.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let (mut out, mut i) = (String::with_capacity(src.len()), 0);
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if let Some(body) = rest.strip_prefix("/*") {
            i += body.find("*/").map_or(rest.len(), |j| j + 4);
        } else if rest.starts_with('r') && (i == 0 || !ident(b[i - 1])) && {
            let hashes = rest[1..].bytes().take_while(|&c| c == b'#').count();
            rest[1 + hashes..].starts_with('"')
        } {
            let hashes = rest[1..].bytes().take_while(|&c| c == b'#').count();
            let end = format!("\"{}", "#".repeat(hashes));
            let body = 2 + hashes;
            i += rest[body..]
                .find(&end)
                .map_or(rest.len(), |j| body + j + end.len());
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
            out.push_str("\"\"");
        } else if let Some(len) = char_literal(rest) {
            i += len;
            out.push_str("' '");
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of the char literal `rest` starts with (`'a'`, `'\n'`, `'\u{7f}'`), if it does
/// (a lifetime `'a` does not).
fn char_literal(rest: &str) -> Option<usize> {
    let mut cs = rest.char_indices();
    if cs.next()?.1 != '\'' {
        return None;
    }
    let (_, c) = cs.next()?;
    if c == '\\' {
        let close = rest[2..].find('\'')?;
        return (close <= 10).then_some(close + 3);
    }
    let (j, q) = cs.next()?;
    (q == '\'').then_some(j + 1)
}

/// The first name of each item of the `{...}` group at the start of `code`.
fn group_heads(code: &str) -> Vec<String> {
    let (mut depth, mut items, mut cur) = (0, Vec::new(), String::new());
    for c in code.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    items.push(cur);
                    break;
                }
            }
            ',' if depth == 1 => {
                items.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    items
        .iter()
        .filter_map(|it| {
            let name: String = it
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let p = entry.expect("src/ is readable").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

type Edges = BTreeMap<(String, String), BTreeSet<String>>;

/// The imports between top-level modules, with the files behind each.
fn module_graph() -> Edges {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let top = |p: &Path| -> Option<String> {
        let rel = p.strip_prefix(&src).ok()?;
        let first = rel.components().next()?.as_os_str().to_str()?;
        let name = first.strip_suffix(".rs").unwrap_or(first);
        (!matches!(name, "lib" | "main")).then(|| name.to_string())
    };
    let modules: BTreeSet<String> = files.iter().filter_map(|p| top(p)).collect();
    let mut edges = Edges::new();
    for f in &files {
        let Some(from) = top(f) else { continue };
        let code = strip(&std::fs::read_to_string(f).expect("a source file is readable"));
        for (at, _) in code.match_indices("crate::") {
            if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue; // `lockbench_crate::`, not this crate
            }
            let rest = &code[at + "crate::".len()..];
            let names = if rest.starts_with('{') {
                group_heads(rest)
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                vec![name]
            };
            for to in names {
                if to != from && modules.contains(&to) {
                    let file = f.strip_prefix(&src).unwrap_or(f).display().to_string();
                    edges.entry((from.clone(), to)).or_default().insert(file);
                }
            }
        }
    }
    edges
}

/// The modules `from` reaches through `edges`.
fn reach(edges: &Edges, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(v) = todo.pop() {
        for (a, b) in edges.keys() {
            if *a == v && seen.insert(b.clone()) {
                todo.push(b.clone());
            }
        }
    }
    seen
}

fn files(edges: &Edges, from: &str, to: &str) -> String {
    let key = (from.to_string(), to.to_string());
    edges[&key].iter().cloned().collect::<Vec<_>>().join(", ")
}

#[test]
fn the_results_layer_imports_only_downward() {
    let edges = module_graph();
    let mut wrong = Vec::new();
    for ((from, to), _) in edges.iter() {
        let Some(rank) = LAYERS.iter().position(|m| m == from) else {
            continue;
        };
        let ok = match LAYERS.iter().position(|m| m == to) {
            Some(r) => r < rank,
            None => BELOW.contains(&to.as_str()),
        };
        if !ok {
            wrong.push(format!("{from} -> {to} ({})", files(&edges, from, to)));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that point up or out of the results layer (src/lib.rs draws the layers; move \
         the type down, or pass it in):\n{}",
        wrong.join("\n")
    );
}

/// The groups of more than one module in which every module reaches every other (the strongly
/// connected ones), each sorted, in order.
fn circles(edges: &Edges) -> BTreeSet<Vec<String>> {
    let modules: BTreeSet<String> = edges
        .keys()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let reached: BTreeMap<&String, BTreeSet<String>> =
        modules.iter().map(|m| (m, reach(edges, m))).collect();
    modules
        .iter()
        .filter(|m| reached[m].contains(*m))
        .map(|m| {
            modules
                .iter()
                .filter(|x| reached[m].contains(*x) && reached[x].contains(m))
                .cloned()
                .collect()
        })
        .collect()
}

#[test]
fn no_import_circle_between_top_level_modules() {
    let edges = module_graph();
    // The parser sees the imports this test is about; if it did not, nothing below would fail.
    for (from, to) in [
        ("check", "results"),
        ("report", "check"),
        ("runner", "report"),
        ("nemesis", "workload"),
        ("service", "cluster"),
    ] {
        assert!(
            edges.contains_key(&(from.to_string(), to.to_string())),
            "{from} -> {to} not found: the import parser is broken"
        );
    }
    let found: Vec<String> = circles(&edges)
        .iter()
        .map(|g| {
            let inner: Vec<String> = edges
                .keys()
                .filter(|(a, b)| g.contains(a) && g.contains(b))
                .map(|(a, b)| format!("  {a} -> {b} ({})", files(&edges, a, b)))
                .collect();
            format!("{{{}}}:\n{}", g.join(" "), inner.join("\n"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "import circles between top-level modules (move the shared type down into the module \
         that owns it, or pass it in; src/lib.rs draws the layers, scripts/module-deps.py \
         --edges lists every import):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_parser_reads_grouped_paths_and_skips_comments_and_strings() {
    let code = strip(
        "use crate::{a::X, b, c::{d, e}};\n// crate::f\nlet s = \"crate::g\"; let c = '\"'; \
         fn l<'a>(x: &'a str) { crate::h::i(); }",
    );
    assert!(
        !code.contains("crate::f") && !code.contains("crate::g"),
        "{code}"
    );
    assert!(code.contains("crate::h::i"), "{code}");
    let at = code.find("crate::{").expect("the group stays") + "crate::".len();
    assert_eq!(group_heads(&code[at..]), ["a", "b", "c"]);
}

#[test]
fn circles_are_the_groups_that_reach_each_other() {
    let mut edges = Edges::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a"), ("e", "f")] {
        edges
            .entry((a.to_string(), b.to_string()))
            .or_default()
            .insert(format!("src/{a}.rs"));
    }
    let abc = vec!["a".to_string(), "b".to_string(), "c".to_string()];
    assert_eq!(circles(&edges), BTreeSet::from([abc]));
    edges.remove(&("c".to_string(), "a".to_string()));
    assert!(circles(&edges).is_empty());
}
