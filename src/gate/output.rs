//! The gate's outcome as a Markdown table (a CI job summary) and as JUnit XML.

use super::compare::{Judgement, Outcome};

/// The outcome as Markdown: a verdict line, the table (cell, metric, baseline, current,
/// change, threshold, verdict), the evidence of each unsafe row, and the notes.
pub fn markdown(o: &Outcome) -> String {
    let count = |f: fn(&Judgement) -> bool| o.rows.iter().filter(|r| f(&r.verdict)).count();
    let regressed = count(|v| *v == Judgement::Regressed);
    let unsafe_ = count(|v| *v == Judgement::Unsafe);
    let improved = count(|v| *v == Judgement::Improved);
    let cells: std::collections::BTreeSet<&str> = o
        .rows
        .iter()
        .filter(|r| !super::compare::is_factor_row(&r.cell))
        .map(|r| r.cell.as_str())
        .collect();
    let mut out = format!(
        "## lockbench gate: {}\n\n{} cells: {regressed} regressed, {unsafe_} unsafe, {improved} \
         improved (improvements never fail).\n\n",
        if o.passed() { "pass" } else { "FAIL" },
        cells.len()
    );
    out.push_str("| cell | metric | baseline | current | change | threshold | verdict |\n");
    out.push_str("|---|---|---|---|---:|---|---|\n");
    for r in &o.rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            cell_text(&r.cell),
            r.metric,
            cell_text(&r.baseline),
            cell_text(&r.current),
            r.change,
            cell_text(&r.threshold),
            cell_text(&r.verdict.word())
        ));
    }
    let evidence: Vec<String> = o
        .rows
        .iter()
        .filter_map(|r| r.evidence.as_ref().map(|e| format!("- {}: {e}", r.cell)))
        .collect();
    if !evidence.is_empty() {
        out.push_str(
            "\nViolations (first of each cell; the run folder's report has them all):\n\n",
        );
        out.push_str(&evidence.join("\n"));
        out.push('\n');
    }
    if !o.notes.is_empty() {
        out.push_str("\nNotes:\n\n");
        for n in &o.notes {
            out.push_str(&format!("- {n}\n"));
        }
    }
    out
}

/// A table cell's text with `|` escaped.
fn cell_text(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The outcome as JUnit XML: one test case per row (class = cell, name = metric), a failure
/// for each failing row, skipped for rows not gated.
pub fn junit(o: &Outcome) -> String {
    let failures = o.failures();
    let skipped = o
        .rows
        .iter()
        .filter(|r| matches!(r.verdict, Judgement::NotGated(_)))
        .count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"lockbench gate\" tests=\"{n}\" failures=\"{failures}\">\n  \
         <testsuite name=\"lockbench gate\" tests=\"{n}\" failures=\"{failures}\" \
         skipped=\"{skipped}\" errors=\"0\">\n",
        n = o.rows.len()
    ));
    for r in &o.rows {
        let summary = format!(
            "baseline {}; current {}; change {}; threshold {}",
            r.baseline,
            r.current,
            if r.change.is_empty() { "-" } else { &r.change },
            r.threshold
        );
        out.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\">",
            xml(&r.cell),
            xml(&r.metric)
        ));
        match &r.verdict {
            v if v.fails() => {
                let body = match &r.evidence {
                    Some(e) => format!("{summary}\n{e}"),
                    None => summary.clone(),
                };
                out.push_str(&format!(
                    "\n      <failure message=\"{} {}\" type=\"{}\">{}</failure>\n    ",
                    xml(&r.metric),
                    xml(&v.word()),
                    xml(&v.word()),
                    xml(&body)
                ));
            }
            Judgement::NotGated(why) => {
                out.push_str(&format!("<skipped message=\"{}\"/>", xml(why)));
            }
            _ => out.push_str(&format!("<system-out>{}</system-out>", xml(&summary))),
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// `s` escaped for XML text and attributes (control characters other than tab and newline
/// dropped: XML 1.0 cannot carry them). The gate writes its own JUnit XML: the report's HTML
/// escaping sits above the gate, which must not import it.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}
