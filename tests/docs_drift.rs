//! The user's guide (`docs/book/`) against the code it documents: the generated reference
//! pages (the command line, the fault kinds) must equal what the code renders now, the
//! hand-written field tables (workload files, results schema) must list exactly the fields the
//! code reads and writes, the systems table exactly the systems, and every pointer from code,
//! help text, scripts or the guide into a document must land on a file and heading that exist.
//!
//! Regenerate the generated pages with `LOCKBENCH_BLESS=1 cargo test --test docs_drift`.

mod repo_support;
use repo_support::{root, tracked};

use std::collections::BTreeSet;
use std::path::Path;

const BOOK: &str = "docs/book/src";
const BLESS_HINT: &str = "regenerate with LOCKBENCH_BLESS=1 cargo test --test docs_drift";

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

/// Compares a generated page with its committed copy, or writes it under LOCKBENCH_BLESS=1.
fn generated(rel: &str, now: &str) {
    let path = root().join(rel);
    if std::env::var_os("LOCKBENCH_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, now).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == now {
        return;
    }
    let old: Vec<&str> = committed.lines().collect();
    let new: Vec<&str> = now.lines().collect();
    let mut diff = String::new();
    for l in old.iter().filter(|l| !new.contains(l)).take(20) {
        diff.push_str(&format!("- {l}\n"));
    }
    for l in new.iter().filter(|l| !old.contains(l)).take(20) {
        diff.push_str(&format!("+ {l}\n"));
    }
    panic!(
        "{rel} is not what the code renders now (- committed, + from the code):\n{diff}\n{BLESS_HINT}"
    );
}

#[test]
fn cli_reference_is_the_code() {
    generated(
        &format!("{BOOK}/reference/cli.md"),
        &lockbench::cli::reference::markdown(),
    );
}

#[test]
fn fault_kinds_reference_is_the_code() {
    generated(
        &format!("{BOOK}/reference/fault-kinds.md"),
        &lockbench::cli::reference::fault_kinds_markdown(),
    );
}

/// The backticked names in the first column of the table that follows `<!-- marker -->`.
fn table_after(text: &str, file: &str, marker: &str) -> BTreeSet<String> {
    let tag = format!("<!-- {marker} -->");
    let start = text
        .find(&tag)
        .unwrap_or_else(|| panic!("{file} has no table marked {tag}"));
    let mut names = BTreeSet::new();
    let mut in_table = false;
    for line in text[start + tag.len()..].lines() {
        let line = line.trim();
        if line.starts_with('|') {
            in_table = true;
            let first = line.trim_start_matches('|').split('|').next().unwrap_or("");
            let first = first.trim();
            if let Some(name) = first.strip_prefix('`').and_then(|s| s.split('`').next()) {
                names.insert(name.to_string());
            }
        } else if in_table {
            break;
        }
    }
    names
}

fn same(what: &str, file: &str, code: BTreeSet<String>, doc: BTreeSet<String>) {
    let missing: Vec<_> = code.difference(&doc).collect();
    let extra: Vec<_> = doc.difference(&code).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{file}: the {what} table and the code differ: in the code but not in the table: \
         {missing:?}; in the table but not in the code: {extra:?}"
    );
}

#[test]
fn workload_field_tables_list_every_field() {
    let file = format!("{BOOK}/reference/workload-fields.md");
    let text = read(&file);
    for (table, fields) in lockbench::workload::file_fields() {
        let code = fields.iter().map(|f| f.to_string()).collect();
        same(
            &format!("`{table}`"),
            &file,
            code,
            table_after(&text, &file, &format!("fields: {table}")),
        );
    }
}

#[test]
fn chaos_chapter_lists_every_fault_kind_with_its_parameters() {
    let file = format!("{BOOK}/chaos.md");
    let text = read(&file);
    let code = lockbench::fault::KINDS
        .iter()
        .map(|k| k.name.to_string())
        .collect();
    same(
        "fault kinds",
        &file,
        code,
        table_after(&text, &file, "fault kinds"),
    );
    for k in lockbench::fault::KINDS {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", k.name)))
            .unwrap();
        for p in k.parameters {
            assert!(
                row.contains(&format!("`{}`", p.name)),
                "{file}: the row of fault kind `{}` does not name its parameter `{}`",
                k.name,
                p.name
            );
        }
    }
}

#[test]
fn systems_chapter_lists_every_system() {
    let file = format!("{BOOK}/systems.md");
    let text = read(&file);
    let code = lockbench::system::FACTS
        .iter()
        .map(|f| f.name.to_string())
        .collect();
    same("systems", &file, code, table_after(&text, &file, "systems"));
}

#[test]
fn systems_chapter_lists_every_version() {
    let file = format!("{BOOK}/systems.md");
    let text = read(&file);
    let code = lockbench::system::FACTS
        .iter()
        .flat_map(|f| {
            f.system
                .versions()
                .into_iter()
                .map(move |v| format!("{}@{}", f.name, v.name()))
        })
        .collect();
    same(
        "versions",
        &file,
        code,
        table_after(&text, &file, "versions"),
    );
}

/// The systems chapter's table of server settings is the code's
/// (`system::settings::markdown_table`, from each system's `settings.rs`); LOCKBENCH_BLESS=1
/// writes it in place.
#[test]
fn systems_chapter_settings_table_is_the_code() {
    let file = format!("{BOOK}/systems.md");
    let text = read(&file);
    let tag = "<!-- server settings -->\n";
    let start = text
        .find(tag)
        .unwrap_or_else(|| panic!("{file} has no {tag:?} before the table of server settings"))
        + tag.len();
    let len: usize = text[start..]
        .split_inclusive('\n')
        .take_while(|l| l.starts_with('|'))
        .map(str::len)
        .sum();
    let (committed, now) = (
        &text[start..start + len],
        lockbench::system::settings::markdown_table(),
    );
    if committed == now {
        return;
    }
    if std::env::var_os("LOCKBENCH_BLESS").is_some() {
        let fixed = format!("{}{now}{}", &text[..start], &text[start + len..]);
        std::fs::write(root().join(&file), fixed).unwrap();
        return;
    }
    panic!("{file}: the table of server settings is not the code's:\n{now}\n{BLESS_HINT}");
}

#[test]
fn image_environment_table_is_the_entrypoints() {
    let file = format!("{BOOK}/systems.md");
    let text = read(&file);
    let var = regex::Regex::new(r"\$\{([A-Z_][A-Z0-9_]*):-([^}]*)\}").unwrap();
    let mut code = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(root().join("docker")).unwrap() {
        let script = entry.unwrap().path().join("entrypoint.sh");
        let Ok(sh) = std::fs::read_to_string(&script) else {
            continue;
        };
        for c in var.captures_iter(&sh) {
            code.insert(c[1].to_string(), c[2].to_string());
        }
    }
    let names = table_after(&text, &file, "image environment");
    same(
        "image environment",
        &file,
        code.keys().cloned().collect(),
        names,
    );
    for (name, default) in &code {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap();
        let shown = row.split('|').nth(3).unwrap_or("").trim();
        let want = if default.is_empty() {
            "(empty)".to_string()
        } else {
            format!("`{default}`")
        };
        assert_eq!(
            shown, want,
            "{file}: `{name}` defaults to {want} in its entrypoint, the table says {shown}"
        );
    }
}

/// The JSON names of a struct's fields, read from its source: `rename` honoured, `skip`
/// dropped, `flatten` expanded into the flattened struct's fields.
fn struct_fields(name: &str) -> BTreeSet<String> {
    const SOURCES: [&str; 5] = [
        "src/results/summary.rs",
        "src/results/cell.rs",
        "src/results/safety.rs",
        "src/results/floor.rs",
        "src/plan.rs",
    ];
    for src in SOURCES {
        let text = read(src);
        let Some(start) = text.find(&format!("pub struct {name} {{")) else {
            continue;
        };
        let body = &text[start..];
        let body = &body[..body.find("\n}").unwrap()];
        let mut fields = BTreeSet::new();
        let mut attrs = String::new();
        let mut in_attr = false;
        for line in body.lines().skip(1) {
            let line = line.trim();
            if line.starts_with("#[") || in_attr {
                attrs.push_str(line);
                in_attr = !line.ends_with(']');
                continue;
            }
            if line.starts_with("///") || line.starts_with("//") || line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("pub ") {
                let (field, ty) = rest.split_once(':').unwrap();
                if attrs.contains("flatten") {
                    let ty = ty.trim().trim_end_matches(',');
                    fields.extend(struct_fields(ty));
                } else if !attrs.contains("skip)") && !attrs.contains("skip]") {
                    let json = attrs
                        .split("rename = \"")
                        .nth(1)
                        .and_then(|s| s.split('"').next())
                        .unwrap_or(field.trim());
                    fields.insert(json.to_string());
                }
            }
            attrs.clear();
        }
        return fields;
    }
    panic!("no `pub struct {name}` in {SOURCES:?}");
}

#[test]
fn results_schema_tables_list_every_field() {
    let file = format!("{BOOK}/results-schema.md");
    let text = read(&file);
    let markers: Vec<&str> = text
        .match_indices("<!-- fields: ")
        .map(|(i, _)| {
            let rest = &text[i + "<!-- fields: ".len()..];
            rest[..rest.find(" -->").unwrap()].trim()
        })
        .collect();
    for required in ["CellSummary", "SecondStats", "Safety"] {
        assert!(
            markers.contains(&required),
            "{file} has no table marked <!-- fields: {required} -->"
        );
    }
    for name in markers {
        same(
            &format!("`{name}`"),
            &file,
            struct_fields(name),
            table_after(&text, &file, &format!("fields: {name}")),
        );
    }
}

/// mdBook's id for a heading: lower case, spaces to `-`, only letters, digits, `-` and `_`.
fn anchor(heading: &str) -> String {
    let text: String = heading.chars().filter(|&c| c != '`' && c != '*').collect();
    text.trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The headings of a Markdown file (outside code blocks) and their anchors.
fn headings(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        } else if !fence && line.starts_with('#') {
            let h = line.trim_start_matches('#').trim().to_string();
            out.push((anchor(&h), h));
        }
    }
    out
}

fn check_target(from: &str, target: &Path, fragment: Option<&str>, problems: &mut Vec<String>) {
    if !target.exists() {
        problems.push(format!(
            "{from}: points to {}, which does not exist",
            target.display()
        ));
        return;
    }
    if let Some(f) = fragment
        && !headings(target).iter().any(|(a, _)| a == f)
    {
        problems.push(format!(
            "{from}: points to {}#{f}, which has no such heading",
            target.display()
        ));
    }
}

#[test]
fn every_pointer_into_the_docs_lands() {
    let mut problems = Vec::new();
    let readme_headings: Vec<String> = headings(&root().join("README.md"))
        .into_iter()
        .map(|(_, h)| h)
        .collect();
    let doc_path =
        regex::Regex::new(r"\b(docs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)(#[A-Za-z0-9_-]+)?").unwrap();
    let md_link = regex::Regex::new(r"\]\(([^)\s]+?\.md)(#[A-Za-z0-9_-]+)?\)").unwrap();
    let readme_section = regex::Regex::new(r#"README(?:'s)? "([^"]+)""#).unwrap();
    let vague = regex::Regex::new(r"(?i)\b(?:see |the )README(?:'s)? [a-z]").unwrap();
    for file in tracked() {
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue;
        };
        if file == "tests/docs_drift.rs" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let from = format!("{file}:{}", n + 1);
            for c in doc_path.captures_iter(line) {
                let target = root().join(&c[1]);
                check_target(
                    &from,
                    &target,
                    c.get(2).map(|m| &m.as_str()[1..]),
                    &mut problems,
                );
            }
            if file.ends_with(".md") {
                for c in md_link.captures_iter(line) {
                    let link = &c[1];
                    if link.contains("://") {
                        continue;
                    }
                    let base = Path::new(&file).parent().unwrap_or(Path::new(""));
                    let target = root().join(base).join(link);
                    check_target(
                        &from,
                        &target,
                        c.get(2).map(|m| &m.as_str()[1..]),
                        &mut problems,
                    );
                }
            }
            for c in readme_section.captures_iter(line) {
                if !readme_headings.iter().any(|h| h.contains(&c[1])) {
                    problems.push(format!(
                        "{from}: names the README section \"{}\", which does not exist",
                        &c[1]
                    ));
                }
            }
            if !file.ends_with(".md") && vague.is_match(line) {
                problems.push(format!(
                    "{from}: points into the README without naming a section or the guide's \
                     page: name the page (docs/book/src/<page>.md#<heading>)"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "pointers into the docs that do not land:\n{}",
        problems.join("\n")
    );
}

#[test]
fn readme_is_short() {
    let size = read("README.md").len();
    assert!(
        size <= 12 * 1024,
        "README.md is {size} bytes, past 12 KB: move the detail into the guide (docs/book/src/)"
    );
}

#[test]
fn every_book_page_is_in_the_summary() {
    let summary = read(&format!("{BOOK}/SUMMARY.md"));
    let dir = root().join(BOOK);
    let mut pages = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                pages.push(p.strip_prefix(&dir).unwrap().display().to_string());
            }
        }
    }
    for page in pages.iter().filter(|p| *p != "SUMMARY.md") {
        assert!(
            summary.contains(&format!("({page})")),
            "{BOOK}/{page} is not in SUMMARY.md, so the book does not show it"
        );
    }
}
