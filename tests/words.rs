//! Every tracked file speaks of the tool and its users, never of how the tool was developed:
//! no "stop 12", "issue 18", "the sixteenth machine" or "the note of issue 7". Other projects'
//! issues are fine when the project is named (etcd issue 11456, `#11456`). A measured figure
//! stays, with its command, its date and the kind of machine.

mod repo_support;
use repo_support::{root, tracked};
/// What a sentence about the project's own history looks like.
const DIARY: &[(&str, &str)] = &[
    (r"(?i)\bstops? \d+\b", "a development step (\"stop N\")"),
    (
        r"(?i)\bissues? \d+\b",
        "the project's own issue (\"issue N\")",
    ),
    (
        r"(?i)\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|\d+(?:st|nd|rd|th)) (?:machine|host)\b",
        "a machine counted in the project's diary (\"the Nth machine\")",
    ),
    (
        r"(?i)\b(?:the note of|'s note has|tried and not kept)",
        "a diary of tries",
    ),
    (
        r"(?i)\bthe issue's\b",
        "the project's own issue (\"the issue's bound\")",
    ),
];

/// Mentions that look like the above but are about something else.
const ALLOWED: &[&str] = &[
    // Another project's issue, named with its project.
    r"(?i)\b(?:etcd|redis|zookeeper|curator|redisson|jepsen|tokio|clap|mdbook|rust)(?:'s)? issues? #?\d+",
    // A SIGSTOP/SIGCONT order of worker processes in a test, as the nemesis writes it.
    r#""stop \d+""#,
];

/// Every diary phrase in `text`, as (line number, what it is, the line).
fn diary_words(text: &str) -> Vec<(usize, &'static str, String)> {
    let diary: Vec<(regex::Regex, &str)> = DIARY
        .iter()
        .map(|(re, what)| (regex::Regex::new(re).unwrap(), *what))
        .collect();
    let allowed: Vec<regex::Regex> = ALLOWED
        .iter()
        .map(|re| regex::Regex::new(re).unwrap())
        .collect();
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut clean = line.to_string();
        for a in &allowed {
            clean = a.replace_all(&clean, "").into_owned();
        }
        for (re, what) in &diary {
            if re.is_match(&clean) {
                found.push((n + 1, *what, line.trim().chars().take(160).collect()));
            }
        }
    }
    found
}

#[test]
fn no_tracked_file_narrates_the_projects_development() {
    let mut problems = Vec::new();
    for file in tracked() {
        // This file names the phrases it looks for.
        if file == "tests/words.rs" {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue; // binary, or gone from the work tree
        };
        for (line, what, text) in diary_words(&text) {
            problems.push(format!("{file}:{line}: {what}: {text}"));
        }
    }
    assert!(
        problems.is_empty(),
        "words about the project's own development (say what a user needs: the fact, the \
         command, the date and the kind of machine):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_phrases_are_caught_and_other_projects_issues_are_not() {
    for bad in [
        "// stop 12 made this faster",
        "See issue 22, item 2.",
        "on the sixteenth machine",
        "the 3rd machine of this kind",
        "the note of issue 12 has the tries",
        "(the issue's bound is 20 requests per client-second)",
    ] {
        assert!(!diary_words(bad).is_empty(), "not caught: {bad}");
    }
    for good in [
        "the re-check of etcd issue 11456",
        "(etcd's issue #11456)",
        r#"["stop 0", "cont 0"]"#,
        "a 2-core machine, 2026-12-04",
        "stops work across processes",
    ] {
        assert!(diary_words(good).is_empty(), "wrongly caught: {good}");
    }
}
