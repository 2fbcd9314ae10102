//! `report.html`: one self-contained page per run, rewritten after every cell like `report.md`:
//! the comparison table (sortable), the safety verdicts with each unsafe cell's first findings
//! linked to its safety timeline, the fault windows, every plot of `plots/index.json` inline
//! (as `data:` URIs), the plan and the environment. Inline CSS and one small inline script; no
//! reference to anything outside the file, so it opens anywhere and can be attached to a ticket.

use std::fmt::Write as _;

use base64::Engine as _;

use super::model::{RunView, StoredPlan, StoredPlots};
use super::plot_index::{PLOTS_DIR, PlotEntry, PlotIndex, shows_svg};
use super::sections::{Section, sections};
use super::table::{self, Standing, Table};
use super::writer::OutFile;
use super::{ExportError, Exporter};
use crate::check::faults::CLOCK_MODEL;
use crate::environment::RunEnvironment;
use crate::plan::Plan;
use crate::results::CellSummary;

/// The file name in the run folder.
pub const REPORT_FILE: &str = "report.html";

/// The HTML exporter.
pub struct Html;

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }

    fn run_files(&self, run: &RunView) -> Result<Vec<OutFile>, ExportError> {
        Ok(vec![OutFile::new(run.dir.join(REPORT_FILE), page(run))])
    }
}

/// `text` safe to put between tags and inside double- or single-quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The whole page for `run`: a header, then each of its [`sections`]. Never fails: a file of
/// the run folder that could not be read is said in the page where its content would be.
pub fn page(run: &RunView) -> String {
    let name = run.name();
    let mut h = String::with_capacity(64 * 1024);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>lockbench report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&name)
    );
    h.push_str(&header(run, &name));
    h.push_str("<main>\n");
    for s in sections(run) {
        h.push_str(&section(run, &s));
    }
    h.push_str("</main>\n");
    let _ = write!(h, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    h
}

/// One section of `run` in HTML; empty for the cells not run, which the header says.
pub fn section(run: &RunView, s: &Section) -> String {
    match s {
        Section::Findings(f) => findings_section(f),
        Section::Comparison => comparison_section(&run.cells),
        Section::Repetitions(t) => repetitions_section(t),
        Section::Rates(t) => titled(s.id(), "Rates", super::rates::RATES_TEXT, t),
        Section::Versions(t) => titled(s.id(), "Versions", super::versions::VERSIONS_TEXT, t),
        Section::Libraries(t) => titled(s.id(), "Libraries", super::libraries::LIBRARIES_TEXT, t),
        Section::Reentry(t) => titled(s.id(), "Re-entries", super::markdown::REENTRY_TEXT, t),
        Section::RwLock(t) => titled(s.id(), "Read-write lock", super::markdown::RWLOCK_TEXT, t),
        Section::Semaphore(t) => titled(s.id(), "Semaphore", super::markdown::SEMAPHORE_TEXT, t),
        Section::Pacing(t) => titled(s.id(), "Pacing", super::pacing::PACING_TEXT, t),
        Section::Capacity { table, lines } => capacity_section(table, lines),
        Section::Safety => safety_section(&run.cells, &run.plots.index),
        Section::Faults => faults_section(&run.cells),
        Section::NotRun => String::new(),
        Section::Plots => plots_section(&run.plots),
        Section::Plan => plan_section(&run.plan),
        Section::Environment => environment_section(&run.environment),
    }
}

/// What the figures say: the method, then per system its summary and one item per metric.
fn findings_section(f: &super::findings::Findings) -> String {
    let mut h = format!(
        "<section id=\"findings\">\n<h2>Findings</h2>\n<p>{}</p>\n<ul>\n",
        escape(&f.method)
    );
    for x in &f.findings {
        let _ = write!(
            h,
            "<li><strong>{}</strong>: {}.\n<ul>\n",
            escape(&x.subject),
            escape(&x.summary)
        );
        for d in &x.details {
            let _ = writeln!(h, "<li>{}</li>", escape(d));
        }
        h.push_str("</ul>\n</li>\n");
    }
    h.push_str("</ul>\n</section>\n");
    h
}

/// A section `id` of a title, a paragraph saying what its table shows, and the table.
fn titled(id: &str, title: &str, what: &str, t: &Table) -> String {
    format!(
        "<section id=\"{id}\">\n<h2>{title}</h2>\n<p>{}</p>\n{}</section>\n",
        escape(what),
        html_table(t, id, |_| String::new(), |_, _, text| text)
    )
}

fn header(run: &RunView, name: &str) -> String {
    let mut status = format!(
        "{} cell{} finished",
        run.cells.len(),
        if run.cells.len() == 1 { "" } else { "s" }
    );
    if run.interrupted {
        status.push_str("; the run was interrupted");
    }
    if !run.not_run.is_empty() {
        status.push_str(&format!("; not run: {}", run.not_run.join(", ")));
    }
    for f in &run.failed {
        status.push_str(&format!("; {} failed: {}", f.id, f.reason));
    }
    let unsafe_cells = run
        .cells
        .iter()
        .filter(|c| table::standing(c) == Standing::Broken)
        .count();
    if unsafe_cells > 0 {
        status.push_str(&format!(
            "; {unsafe_cells} cell{} UNSAFE where the lock should hold",
            if unsafe_cells == 1 { "" } else { "s" }
        ));
    }
    format!(
        "<header>\n<h1>lockbench report</h1>\n<p>Run folder <code>{}</code>: {}.</p>\n\
         <nav><a href=\"#comparison\">Comparison</a> · <a href=\"#safety\">Safety</a> · \
         <a href=\"#faults\">Faults</a> · <a href=\"#plots\">Plots</a> · \
         <a href=\"#plan\">Plan</a> · <a href=\"#environment\">Environment</a></nav>\n</header>\n",
        escape(name),
        escape(&status)
    )
}

fn standing_class(s: Standing) -> &'static str {
    match s {
        Standing::AsExpected => "ok",
        Standing::Broken => "broken",
        Standing::Doubtful => "doubtful",
        Standing::Absent => "absent",
    }
}

/// `t` as an HTML table; `decorate(row, column, escaped text)` may wrap a cell's content.
fn html_table(
    t: &Table,
    class: &str,
    row_attrs: impl Fn(usize) -> String,
    decorate: impl Fn(usize, usize, String) -> String,
) -> String {
    let mut s = format!("<div class=\"scroll\"><table class=\"{class}\">\n<thead><tr>");
    for c in &t.columns {
        let _ = write!(
            s,
            "<th{}>{}</th>",
            if c.numeric { " class=\"num\"" } else { "" },
            escape(c.name)
        );
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for (r, row) in t.rows.iter().enumerate() {
        let _ = write!(s, "<tr{}>", row_attrs(r));
        for (col, text) in row.iter().enumerate() {
            let numeric = t.columns.get(col).is_some_and(|c| c.numeric);
            let _ = write!(
                s,
                "<td{}>{}</td>",
                if numeric { " class=\"num\"" } else { "" },
                decorate(r, col, escape(text))
            );
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table></div>\n");
    s
}

fn comparison_section(cells: &[CellSummary]) -> String {
    let mut s = String::from("<section id=\"comparison\">\n<h2>Comparison</h2>\n");
    if cells.is_empty() {
        s.push_str("<p>No cell has finished yet.</p>\n</section>\n");
        return s;
    }
    s.push_str(
        "<p class=\"hint\">One row per cell; click a column heading to sort by it. Latencies \
         in ms; n/a marks a figure the client cannot see.</p>\n",
    );
    let t = table::comparison(cells);
    let last = t.columns.len() - 1;
    s.push_str(&html_table(
        &t,
        "sortable",
        |r| format!(" data-cell=\"{}\"", escape(&cells[r].id.to_string())),
        |r, col, text| {
            if col != last {
                return text;
            }
            let c = &cells[r];
            let class = standing_class(table::standing(c));
            if table::safety_findings(std::slice::from_ref(c)).is_empty() {
                format!("<span class=\"{class}\">{text}</span>")
            } else {
                format!(
                    "<a class=\"{class}\" href=\"#safety-{}\">{text}</a>",
                    escape(&c.id.to_string())
                )
            }
        },
    ));
    s.push_str("</section>\n");
    s
}

/// Each cell over its repetitions.
fn repetitions_section(t: &Table) -> String {
    format!(
        "<section id=\"repetitions\">\n<h2>Repetitions</h2>\n<p>Each cell over its \
         repetitions (run in rounds, each on fresh clusters): the median and the interquartile range, which \
         <code>lockbench gate</code> reads.</p>\n{}</section>\n",
        html_table(t, "repetitions", |_| String::new(), |_, _, text| text)
    )
}

/// The capacity report (`capacity.json`): its summary lines, then its table.
fn capacity_section(t: &Table, lines: &[String]) -> String {
    let mut s = String::from("<section id=\"capacity\">\n<h2>Capacity</h2>\n<ul>\n");
    for l in lines {
        let _ = writeln!(s, "<li>{}</li>", escape(l));
    }
    s.push_str("</ul>\n");
    s.push_str(&html_table(
        t,
        "capacity",
        |_| String::new(),
        |_, _, text| text,
    ));
    s.push_str("</section>\n");
    s
}

fn safety_section(cells: &[CellSummary], index: &PlotIndex) -> String {
    let mut s = String::from("<section id=\"safety\">\n<h2>Safety</h2>\n");
    let judged: Vec<&CellSummary> = cells.iter().filter(|c| c.safety.is_some()).collect();
    if judged.is_empty() {
        s.push_str("<p>No cell has a safety verdict yet.</p>\n</section>\n");
        return s;
    }
    s.push_str(
        "<div class=\"scroll\"><table>\n<thead><tr><th>cell</th><th>expected</th><th>verdict</th>\
         <th>what the checkers counted</th></tr></thead>\n<tbody>\n",
    );
    for c in &judged {
        let Some(safety) = &c.safety else { continue };
        let counts = crate::check::expectation::why(safety);
        let counts = counts.split("; first:").next().unwrap_or_default();
        let _ = writeln!(
            s,
            "<tr><td><code>{}</code></td><td>{}</td><td><span class=\"{}\">{}</span></td><td>{}</td></tr>",
            escape(&c.id.to_string()),
            format!("{:?}", safety.expected).to_lowercase(),
            standing_class(table::standing(c)),
            escape(&table::verdict(c)),
            escape(counts)
        );
    }
    s.push_str("</tbody>\n</table></div>\n");
    for f in table::safety_findings(cells) {
        let id = f.cell.id.to_string();
        let _ = write!(
            s,
            "<article id=\"safety-{0}\" class=\"finding\">\n<h3><code>{0}</code>: <span class=\"{1}\">{2}</span></h3>\n<p>{3}.</p>\n",
            escape(&id),
            standing_class(table::standing(f.cell)),
            escape(&f.verdict),
            escape(&f.counts)
        );
        if !f.findings.is_empty() {
            s.push_str("<ol>\n");
            for v in &f.findings {
                let lines: Vec<String> = v.lines.iter().map(usize::to_string).collect();
                let _ = writeln!(
                    s,
                    "<li><strong>{}</strong>: {} <span class=\"lines\">(<code>cells/{}/history.jsonl</code> lines {})</span></li>",
                    escape(&v.source),
                    escape(&v.what),
                    escape(&id),
                    escape(&lines.join(", "))
                );
            }
            s.push_str("</ol>\n");
        }
        let timeline = index
            .plots
            .iter()
            .find(|p| p.kind == "safety-timeline" && p.cell.as_deref() == Some(id.as_str()));
        match timeline {
            Some(p) => {
                let _ = writeln!(
                    s,
                    "<p><a href=\"#{}\">See the cell's safety timeline</a>.</p>",
                    escape(&p.anchor())
                );
            }
            None => s.push_str("<p>No safety timeline was drawn for this cell.</p>\n"),
        }
        s.push_str("</article>\n");
    }
    s.push_str("</section>\n");
    s
}

fn faults_section(cells: &[CellSummary]) -> String {
    let mut s = String::from("<section id=\"faults\">\n<h2>Faults</h2>\n");
    let chaotic: Vec<&CellSummary> = cells.iter().filter(|c| !c.faults.is_empty()).collect();
    if chaotic.is_empty() {
        s.push_str("<p>No cell had a fault window.</p>\n</section>\n");
        return s;
    }
    let _ = writeln!(
        s,
        "<p class=\"hint\">Each nemesis fault window, with the findings, lost leases and errors \
         from its start to its heal + a settle of 2 × the longest lease (at least 1 s), or to the \
         end of the history if it was not healed; applying ms is the time from asking for the \
         fault to its effect, and acquisitions and the first grant count from the effect. The \
         clock fault is {CLOCK_MODEL} (see \
         <code>docs/book/src/results-schema.md</code>, <code>faults</code>).</p>",
    );
    for c in chaotic {
        let id = c.id.to_string();
        let (t, notes) = table::faults(c);
        let _ = writeln!(
            s,
            "<h3 id=\"faults-{0}\"><code>{0}</code></h3>",
            escape(&id)
        );
        s.push_str(&html_table(&t, "faults", |_| String::new(), |_, _, t| t));
        if !notes.is_empty() {
            s.push_str("<ul>\n");
            for n in notes {
                let _ = writeln!(s, "<li>{}</li>", escape(&n));
            }
            s.push_str("</ul>\n");
        }
    }
    s.push_str("</section>\n");
    s
}

/// A plot's image as a `data:` URI, or why neither can be shown: the SVG when it is small
/// enough or no larger than the PNG, else the PNG ([`shows_svg`]: an SVG of thousands of
/// points would make the page slow to open), and whichever of the two is there when the other
/// is missing or empty.
fn plot_source(images: &StoredPlots, p: &PlotEntry) -> Result<String, String> {
    // Names come from a file: only plain file names inside plots/ are looked up.
    let plain = |name: &str| {
        !name.is_empty()
            && !name.contains(['/', '\\'])
            && name != ".."
            && name != "."
            && !name.starts_with("..")
    };
    let mut why = Vec::new();
    let mut stored: [Option<&Vec<u8>>; 2] = [None, None];
    for (slot, name) in stored.iter_mut().zip([&p.svg, &p.png]) {
        if !plain(name) {
            why.push(format!("{name:?} is not a file name inside {PLOTS_DIR}/"));
            continue;
        }
        match images.images.get(name.as_str()) {
            Some(bytes) if !bytes.is_empty() => *slot = Some(bytes),
            Some(_) => why.push(format!("{PLOTS_DIR}/{name} is empty")),
            None => why.push(format!("{PLOTS_DIR}/{name} is missing")),
        }
    }
    let (mime, bytes) = match stored {
        [Some(svg), png] if shows_svg(svg.len(), png.map(Vec::len)) => ("image/svg+xml", svg),
        [_, Some(png)] => ("image/png", png),
        _ => return Err(why.join("; ")),
    };
    Ok(format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

fn figure(images: &StoredPlots, p: &PlotEntry) -> String {
    let body = match plot_source(images, p) {
        Ok(src) => format!("<img alt=\"{}\" src=\"{src}\">", escape(&p.title)),
        Err(why) => format!(
            "<p class=\"missing\">Not shown: {} (`lockbench report DIR` draws the plots again).</p>",
            escape(&why)
        ),
    };
    format!(
        "<figure id=\"{}\" class=\"plot\" data-kind=\"{}\">\n{body}\n<figcaption><strong>{}</strong>. {}</figcaption>\n</figure>\n",
        escape(&p.anchor()),
        escape(&p.kind),
        escape(&p.title),
        escape(&p.caption)
    )
}

fn plots_section(plots: &StoredPlots) -> String {
    let index: &PlotIndex = &plots.index;
    let mut s = String::from("<section id=\"plots\">\n<h2>Plots</h2>\n");
    if let Some(p) = &plots.problem {
        let _ = writeln!(s, "<p class=\"missing\">{}</p>", escape(p));
    }
    if index.plots.is_empty() {
        s.push_str("<p>No plots were drawn for this run.</p>\n</section>\n");
        return s;
    }
    for p in index.plots.iter().filter(|p| p.cell.is_none()) {
        s.push_str(&figure(plots, p));
    }
    let mut cells: Vec<&str> = Vec::new();
    for c in index.plots.iter().filter_map(|p| p.cell.as_deref()) {
        if !cells.contains(&c) {
            cells.push(c);
        }
    }
    for cell in cells {
        let _ = writeln!(
            s,
            "<h3 id=\"plots-{0}\"><code>{0}</code></h3>",
            escape(cell)
        );
        for p in index
            .plots
            .iter()
            .filter(|p| p.cell.as_deref() == Some(cell))
        {
            s.push_str(&figure(plots, p));
        }
    }
    s.push_str("</section>\n");
    s
}

fn plan_section(stored: &StoredPlan) -> String {
    let mut s = String::from("<section id=\"plan\">\n<h2>Plan</h2>\n");
    let (text, plan) = match stored {
        StoredPlan::Absent => {
            s.push_str("<p>Not recorded (the run folder has no plan.toml).</p>\n</section>\n");
            return s;
        }
        StoredPlan::Unreadable(why) => {
            let _ = writeln!(s, "<p class=\"missing\">{}</p>\n</section>", escape(why));
            return s;
        }
        StoredPlan::Stored { text, plan } => (text, plan),
    };
    match plan {
        Ok(plan) => s.push_str(&plan_cells(plan)),
        Err(e) => {
            let _ = writeln!(s, "<p class=\"missing\">{}</p>", escape(e));
        }
    }
    let _ = write!(
        s,
        "<details>\n<summary><code>plan.toml</code> as written</summary>\n<pre>{}</pre>\n</details>\n</section>\n",
        escape(text)
    );
    s
}

fn plan_cells(plan: &Plan) -> String {
    let mut s = format!(
        "<p>Run id <code>{}</code>; seed {}; {} cells.</p>\n",
        escape(&plan.run_id),
        plan.seed
            .map_or_else(|| "each workload's own".to_string(), |n| n.to_string()),
        plan.cells.len()
    );
    s.push_str(
        "<div class=\"scroll\"><table>\n<thead><tr><th>cell</th><th>system</th><th>strategy</th>\
         <th>workload</th><th>chaos</th><th class=\"num\">clients</th><th class=\"num\">nodes</th>\
         <th>length</th><th class=\"num\">workload seed</th><th class=\"num\">chaos seed</th>\
         <th>expected</th></tr></thead>\n<tbody>\n",
    );
    for c in &plan.cells {
        let length = match c.workload.stop {
            crate::workload::Stop::Duration(d) => humantime::format_duration(d).to_string(),
            crate::workload::Stop::Acquisitions(n) => format!("{n} acquisitions"),
        };
        let chaos_seed = if c.chaos.is_calm() {
            "-".to_string()
        } else {
            c.chaos.seed.to_string()
        };
        let _ = writeln!(
            s,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td>{}</td></tr>",
            escape(&c.id().to_string()),
            c.system,
            c.strategy,
            escape(&c.workload.name),
            escape(&c.chaos.name),
            c.workload.clients,
            c.cluster_size(),
            escape(&length),
            c.workload.seed,
            chaos_seed,
            format!("{:?}", c.expect()).to_lowercase()
        );
    }
    s.push_str("</tbody>\n</table></div>\n");
    if !plan.skipped.is_empty() {
        s.push_str("<p>Left out of the matrix:</p>\n<ul>\n");
        for k in &plan.skipped {
            let _ = writeln!(s, "<li>{}</li>", escape(k));
        }
        s.push_str("</ul>\n");
    }
    // Each workload and schedule once, in its file's syntax (the first cell's: a clients
    // sweep differs only in `clients`, which the table shows).
    let mut seen: Vec<String> = Vec::new();
    for c in &plan.cells {
        let key = format!("workload {}", c.workload.name);
        if !seen.contains(&key) {
            let text = toml::to_string_pretty(&c.workload.to_table()).unwrap_or_default();
            let _ = writeln!(
                s,
                "<h3>Workload <code>{}</code></h3>\n<pre>{}</pre>",
                escape(&c.workload.name),
                escape(&text)
            );
            seen.push(key);
        }
        let key = format!("chaos {}", c.chaos.name);
        if !c.chaos.is_calm() && !seen.contains(&key) {
            let text = toml::to_string_pretty(&c.chaos.to_table()).unwrap_or_default();
            let _ = writeln!(
                s,
                "<h3>Chaos schedule <code>{}</code></h3>\n<pre>{}</pre>",
                escape(&c.chaos.name),
                escape(&text)
            );
            seen.push(key);
        }
    }
    s
}

fn environment_section(env: &RunEnvironment) -> String {
    let mut s = String::from("<section id=\"environment\">\n<h2>Environment</h2>\n<table>\n");
    for (label, value) in env.machine_rows() {
        let _ = writeln!(
            s,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(label),
            escape(&value)
        );
    }
    s.push_str("</table>\n");
    if env.clusters.is_empty() {
        s.push_str("<p>Clusters: not recorded (no <code>clusters/*.json</code>).</p>\n");
    } else {
        s.push_str(
            "<div class=\"scroll\"><table>\n<thead><tr><th>cluster file</th><th>system</th>\
             <th class=\"num\">nodes</th><th>server version</th><th>leader</th>\
             <th class=\"num\">start s</th><th>settings</th></tr></thead>\n<tbody>\n",
        );
        for c in &env.clusters {
            let _ = writeln!(
                s,
                "<tr><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                escape(&c.file),
                escape(&c.system),
                c.size(),
                escape(&c.server_version),
                escape(&c.leader),
                c.start_seconds
                    .map_or_else(|| "n/a".to_string(), |x| format!("{x:.1}")),
                escape(c.settings_mode())
            );
        }
        s.push_str("</tbody>\n</table></div>\n");
        s.push_str(&settings_table(env));
    }
    for p in &env.problems {
        let _ = writeln!(s, "<p class=\"missing\">{}</p>", escape(p));
    }
    s.push_str("</section>\n");
    s
}

/// The server settings each cluster ran with that differed from the packages' defaults;
/// nothing when no cluster recorded any.
pub(super) fn settings_table(env: &RunEnvironment) -> String {
    let mut rows = String::new();
    for c in &env.clusters {
        for [node, name, value, default] in c.setting_rows() {
            let _ = writeln!(
                rows,
                "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                escape(&c.file),
                escape(node),
                escape(name),
                escape(value),
                escape(default)
            );
        }
    }
    if rows.is_empty() {
        return rows;
    }
    format!(
        "<p>Server settings that differed from the packages' defaults (the guide's systems \
         chapter says why each):</p>\n<div class=\"scroll\"><table>\n<thead><tr><th>cluster \
         file</th><th>node</th><th>setting</th><th>value</th><th>package default</th></tr>\
         </thead>\n<tbody>\n{rows}</tbody>\n</table></div>\n"
    )
}

/// Readable in greyscale too: a broken verdict is bold and underlined, not only red.
const STYLE: &str = "
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1b1b1b;background:#fff}
header,main{max-width:1400px;margin:0 auto;padding:0 1.2rem}
header{border-bottom:1px solid #ccc;padding-bottom:.6rem}
h1{margin:.8rem 0 .2rem}h2{margin-top:2rem;border-bottom:1px solid #ddd}
nav a{color:#0b4f8a}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
pre{background:#f5f5f5;padding:.6rem;overflow:auto;max-height:30rem}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:.5rem 0}
th,td{border:1px solid #ccc;padding:.2rem .45rem;text-align:left;vertical-align:top}
th{background:#f0f0f0}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[data-dir=asc]::after{content:' \\25B2'}
table.sortable th[data-dir=desc]::after{content:' \\25BC'}
.ok{color:#1d6b2f}.doubtful{color:#8a5a00;font-style:italic}
.broken{color:#b00020;font-weight:bold;text-decoration:underline}
.absent{color:#666}
.hint{color:#555}.lines{color:#555}
.missing{color:#b00020}
article.finding{border-left:4px solid #999;padding-left:.8rem;margin:1rem 0}
figure.plot{margin:1.2rem 0;padding:.6rem;border:1px solid #ddd}
figure.plot img{max-width:100%;height:auto;display:block}
figcaption{margin-top:.4rem;color:#333}
:target{outline:3px solid #0b4f8a}
";

/// Sorts a `table.sortable` by the clicked column: numbers (their leading figure) as numbers
/// before words, clicking again reverses.
const SCRIPT: &str = "
document.querySelectorAll('table.sortable').forEach(function(t){
  var heads=t.querySelectorAll('th');
  heads.forEach(function(th,i){
    th.title='sort by '+th.textContent;
    th.addEventListener('click',function(){
      var asc=th.getAttribute('data-dir')!=='asc';
      heads.forEach(function(h){h.removeAttribute('data-dir');});
      th.setAttribute('data-dir',asc?'asc':'desc');
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      var key=function(r){var s=r.cells[i].textContent.trim(),n=parseFloat(s);return isNaN(n)?s:n;};
      rows.sort(function(a,b){
        var x=key(a),y=key(b),c;
        if(typeof x==='number'&&typeof y==='number'){c=x-y;}
        else if(typeof x==='number'){c=-1;}else if(typeof y==='number'){c=1;}
        else{c=x.localeCompare(y);}
        return asc?c:-c;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("plain ✓"), "plain ✓");
    }

    #[test]
    fn an_empty_run_gives_a_whole_page_saying_what_is_missing() {
        // A hand-made view: nothing on disk is read.
        let mut run = RunView::empty(std::path::Path::new("/nonexistent/run-x"));
        run.not_run = vec!["a-b-c-c1".into()];
        (run.interrupted, run.finished) = (true, true);
        let html = page(&run);
        for id in [
            "comparison",
            "safety",
            "faults",
            "plots",
            "plan",
            "environment",
        ] {
            assert!(html.contains(&format!("<section id=\"{id}\">")), "{id}");
        }
        assert!(html.contains("<title>lockbench report: run-x</title>"));
        assert!(html.contains("No cell has finished yet."));
        assert!(html.contains("No plots were drawn for this run."));
        assert!(html.contains("the run was interrupted; not run: a-b-c-c1"));
        assert!(html.contains("Not recorded (the run folder has no plan.toml)"));
        assert!(html.contains("<td>not recorded</td>"));
        assert!(html.ends_with("</html>\n"));
    }

    #[test]
    fn a_plot_is_inlined_and_a_bad_name_is_refused() {
        let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"3\"/>";
        let mut plots = StoredPlots::default();
        plots.images.insert("a.svg".into(), svg.as_bytes().to_vec());
        let entry = |svg: &str, cell: Option<&str>| PlotEntry {
            kind: "fairness".into(),
            title: "T<1>".into(),
            caption: "c & d".into(),
            svg: svg.into(),
            png: "none.png".into(),
            cell: cell.map(str::to_string),
        };
        let ok = figure(&plots, &entry("a.svg", None));
        let b64 = base64::engine::general_purpose::STANDARD.encode(svg);
        assert!(
            ok.contains(&format!("src=\"data:image/svg+xml;base64,{b64}\"")),
            "{ok}"
        );
        assert!(
            ok.contains("id=\"fairness\"") && ok.contains("<strong>T&lt;1&gt;</strong>. c &amp; d")
        );
        let bad = figure(&plots, &entry("../../etc/passwd", Some("x")));
        assert!(bad.contains("id=\"fairness-x\""), "{bad}");
        assert!(bad.contains("is not a file name inside plots/"), "{bad}");
        assert!(bad.contains("plots/none.png is missing"), "{bad}");
        assert!(!bad.contains("<img"), "{bad}");
    }

    #[test]
    fn a_plot_whose_svg_is_over_the_bound_is_shown_as_its_png() {
        use crate::report::plot_index::SVG_INLINE_MAX_BYTES;
        let entry = PlotEntry {
            kind: "latency-over-time".into(),
            title: "T".into(),
            caption: "c".into(),
            svg: "p.svg".into(),
            png: "p.png".into(),
            cell: Some("c1".into()),
        };
        let shown = |svg_bytes: usize, png_bytes: usize| -> String {
            let mut plots = StoredPlots::default();
            let svg = format!("<svg>{}</svg>", " ".repeat(svg_bytes - 11));
            plots.images.insert("p.svg".into(), svg.into_bytes());
            plots.images.insert("p.png".into(), vec![0x89; png_bytes]);
            let src = plot_source(&plots, &entry).unwrap();
            src[..src.find(';').unwrap()].to_string()
        };
        // At the bound the SVG, however small its PNG; past it the smaller of the two.
        assert_eq!(shown(SVG_INLINE_MAX_BYTES, 1_000), "data:image/svg+xml");
        assert_eq!(shown(SVG_INLINE_MAX_BYTES + 1, 1_000), "data:image/png");
        assert_eq!(shown(300_000, 40_000), "data:image/png");
        assert_eq!(shown(300_000, 400_000), "data:image/svg+xml");
        // A big SVG with no PNG beside it is still shown.
        let mut plots = StoredPlots::default();
        plots
            .images
            .insert("p.svg".into(), vec![b' '; SVG_INLINE_MAX_BYTES * 2]);
        assert!(
            plot_source(&plots, &entry)
                .unwrap()
                .starts_with("data:image/svg+xml;base64,")
        );
    }
}
