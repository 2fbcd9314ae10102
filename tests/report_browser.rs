//! report.html in a real headless browser (Chromium, Debian's `chromium` package; `.ci/run`
//! installs it): every image decodes, every inline SVG has a size, the sorting script runs,
//! and nothing logs an error. A copy of the page gets a probe script first in <head> that
//! records errors and, on load, writes what it measured into <pre id="check">, read back from
//! `--dump-dom`. Without Chromium the test fails saying how to install it.

mod report_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lockbench::report::plot_index::{PLOTS_DIR, PlotIndex};
use report_support::{mock_run, scratch};
use serde::Deserialize;

/// How long one Chromium run may take before it is killed.
const BROWSER_DEADLINE: Duration = Duration::from_secs(60);

/// Installed first in <head>: errors of scripts and of resources (capture phase), and every
/// console.error, are kept; on load the facts are written into <pre id="check">. It also clicks
/// the comparison table's acq/s heading twice and records the row order after each click.
const PROBE: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  var t = e.target && e.target !== window ? (e.target.tagName + ' ' + (e.target.alt || '')) : '';
  window.__errors.push('error: ' + (e.message || t));
}, true);
window.addEventListener('unhandledrejection', function (e) { window.__errors.push('rejection: ' + e.reason); });
(function () {
  var original = console.error;
  console.error = function () {
    window.__errors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
})();
window.addEventListener('load', function () {
  var out = {};
  try {
    var imgs = Array.prototype.slice.call(document.images);
    out.images = imgs.map(function (i) {
      return { alt: i.alt, complete: i.complete, natural_width: i.naturalWidth, shown_width: i.getBoundingClientRect().width };
    });
    out.svg_widths = Array.prototype.slice.call(document.querySelectorAll('svg')).map(function (s) {
      return s.getBoundingClientRect().width;
    });
    out.figures = Array.prototype.slice.call(document.querySelectorAll('figure.plot')).map(function (f) { return f.id; });
    var order = function () {
      return Array.prototype.slice.call(document.querySelectorAll('table.sortable tbody tr')).map(function (r) {
        return r.getAttribute('data-cell');
      });
    };
    out.rows = order();
    var th = Array.prototype.slice.call(document.querySelectorAll('table.sortable th')).filter(function (h) {
      return h.textContent === 'acq/s';
    })[0];
    if (th) { th.click(); out.rows_ascending = order(); th.click(); out.rows_descending = order(); }
  } catch (e) {
    window.__errors.push('probe: ' + e);
  }
  out.errors = window.__errors;
  var pre = document.createElement('pre');
  pre.id = 'check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"#;

#[derive(Debug, Deserialize)]
struct Probed {
    images: Vec<Image>,
    svg_widths: Vec<f64>,
    figures: Vec<String>,
    rows: Vec<String>,
    #[serde(default)]
    rows_ascending: Vec<String>,
    #[serde(default)]
    rows_descending: Vec<String>,
    errors: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)] // read through Debug in failure messages
struct Image {
    alt: String,
    complete: bool,
    natural_width: f64,
    shown_width: f64,
}

/// The Chromium executable: $LOCKBENCH_CHROMIUM, else `chromium` or `chromium-browser` on PATH.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("LOCKBENCH_CHROMIUM") {
        return PathBuf::from(p);
    }
    for name in ["chromium", "chromium-browser"] {
        let found = Command::new(name)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if found {
            return PathBuf::from(name);
        }
    }
    panic!(
        "Chromium is not installed, and this test opens report.html in it: \
         `apt-get install chromium` (Debian; .ci/run installs it), or set LOCKBENCH_CHROMIUM \
         to a Chromium executable"
    );
}

/// Opens `page` in headless Chromium and returns the DOM after load and the console messages,
/// killing the browser after [`BROWSER_DEADLINE`].
fn dump_dom(page: &Path, work: &Path) -> (String, Vec<String>) {
    let dom = work.join("dom.html");
    let log = work.join("chromium.log");
    let exe = chromium();
    let mut child = Command::new(&exe)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--window-size=1400,2000",
            "--virtual-time-budget=10000",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!(
            "--user-data-dir={}",
            work.join("profile").display()
        ))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&dom).expect("dom file"))
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "starting {}: {e} (`apt-get install chromium`, or set LOCKBENCH_CHROMIUM)",
                exe.display()
            )
        });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for chromium") {
            break s;
        }
        if started.elapsed() > BROWSER_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish within {} s; its log: {}",
                BROWSER_DEADLINE.as_secs(),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "chromium failed ({status}): {log_text}");
    // Every console message of the page reaches the log, whatever its level, as
    // `INFO:CONSOLE:<line>] "<message>", source: ...`; the report itself logs nothing.
    let console = log_text
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let dom = std::fs::read_to_string(&dom).expect("read the dumped DOM");
    (dom, console)
}

/// Copies `report` with the probe first in its <head> (and `extra_body` at the end of <main>),
/// opens it and returns what the probe measured and the console messages.
fn probe(report: &Path, work: &Path, extra_body: &str) -> (Probed, Vec<String>) {
    let html = std::fs::read_to_string(report).expect("report.html");
    let html = html.replacen("<head>", &format!("<head>\n{PROBE}"), 1);
    let html = html.replacen("</main>", &format!("{extra_body}</main>"), 1);
    let page = work.join("probed.html");
    std::fs::write(&page, html).expect("probed copy");
    let (dom, console) = dump_dom(&page, work);
    let start = dom
        .find("<pre id=\"check\">")
        .unwrap_or_else(|| panic!("the probe wrote nothing; the DOM ends: {}", tail(&dom)))
        + "<pre id=\"check\">".len();
    let end = start
        + dom[start..]
            .find("</pre>")
            .expect("end of the probe's output");
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let probed = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    (probed, console)
}

fn tail(s: &str) -> &str {
    let mut at = s.len().saturating_sub(400);
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[at..]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_html_renders_every_plot_in_chromium_without_errors() {
    chromium();
    let out = scratch("browser");
    let outcome = mock_run(&out).await;
    let run = outcome.folder.clone();
    let ids: Vec<String> = outcome.summaries.iter().map(|s| s.id.to_string()).collect();
    // What `lockbench report` does: the plots and reports drawn again from the folder.
    lockbench::report::rebuild::rebuild(&run, &lockbench::report::Exporters::reports())
        .expect("rebuild the reports");
    let index = PlotIndex::read(&run).expect("plots/index.json");
    assert!(!index.plots.is_empty());
    let work = out.join("browser");
    std::fs::create_dir_all(&work).unwrap();

    let (seen, console) = probe(&run.join("report.html"), &work, "");
    assert!(
        seen.errors.is_empty(),
        "errors in the page: {:?}",
        seen.errors
    );
    assert!(console.is_empty(), "console messages: {console:?}");
    let anchors: Vec<String> = index.plots.iter().map(|p| p.anchor()).collect();
    assert_eq!(seen.figures, anchors, "every plot of index.json, in order");
    assert_eq!(seen.images.len(), index.plots.len(), "{:?}", seen.images);
    for (img, p) in seen.images.iter().zip(&index.plots) {
        // Each decoded at the size its SVG declares.
        let svg = std::fs::read_to_string(run.join(PLOTS_DIR).join(&p.svg)).unwrap();
        let width: f64 = svg
            .split("width=\"")
            .nth(1)
            .and_then(|w| w.split('"').next())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("{}: no width attribute", p.svg));
        assert!(img.complete, "{img:?}");
        assert_eq!(img.natural_width, width, "{}: {img:?}", p.svg);
        assert!(img.natural_width > 0.0 && img.shown_width > 0.0, "{img:?}");
    }
    assert!(
        seen.svg_widths.iter().all(|w| *w > 0.0),
        "{:?}",
        seen.svg_widths
    );
    // The sorting script ran: by acq/s as shown (one decimal) ascending, then descending; the
    // browser's sort is stable, so ties keep the order they had.
    assert_eq!(seen.rows, ids);
    let shown = |id: &String| -> f64 {
        let s = outcome.summaries.iter().find(|s| s.id.to_string() == *id);
        format!("{:.1}", s.expect("cell").throughput_per_s)
            .parse()
            .expect("a number")
    };
    let mut ascending = ids.clone();
    ascending.sort_by(|a, b| shown(a).total_cmp(&shown(b)));
    assert_eq!(seen.rows_ascending, ascending);
    let mut descending = ascending.clone();
    descending.sort_by(|a, b| shown(b).total_cmp(&shown(a)));
    assert_eq!(seen.rows_descending, descending);

    // The probe sees what it checks for: a broken image and a logged error are caught.
    let broken = "<img alt=\"broken\" src=\"data:image/png;base64,AAAA\">\
                  <svg width=\"0\" height=\"0\"></svg>\
                  <script>console.error('planted');</script>";
    let (seen, console) = probe(&run.join("report.html"), &work, broken);
    assert!(
        console.iter().any(|l| l.contains("\"planted\"")),
        "{console:?}"
    );
    let img = seen.images.last().expect("the planted image");
    assert_eq!((img.alt.as_str(), img.natural_width), ("broken", 0.0));
    assert_eq!(seen.svg_widths, [0.0]);
    assert!(
        seen.errors
            .iter()
            .any(|e| e.contains("console.error: planted")),
        "{:?}",
        seen.errors
    );
    assert!(
        seen.errors.iter().any(|e| e.contains("IMG broken")),
        "{:?}",
        seen.errors
    );
    let _ = std::fs::remove_dir_all(&out);
}
