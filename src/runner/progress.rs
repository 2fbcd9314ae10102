//! What a run shows while it works: a progress bar on a terminal, plain lines otherwise (CI logs,
//! pipes), with the same content either way.

use std::io::IsTerminal;

use crate::results::CellSummary;

/// Receives a run's progress. Implementations must not block: they are called from the runner.
pub trait Progress: Sync {
    /// A free-form status line (cluster started, image built, ...).
    fn line(&self, msg: &str);
    /// Cell `index` (1-based) of `total` starts.
    fn cell_started(&self, index: usize, total: usize, id: &str);
    /// The cell that started last has finished with this summary.
    fn cell_finished(&self, summary: &CellSummary);
    /// The run is over (finished or interrupted).
    fn finish(&self) {}
}

/// The one-line result of a cell, shared by both displays.
pub fn cell_line(s: &CellSummary) -> String {
    format!(
        "    {:.1} acquisitions/s, p50 {:.2} ms, p99 {:.2} ms, wakeups/acq {}, timeouts {}, errors {}",
        s.throughput_per_s,
        s.acquire_latency_us.p50 as f64 / 1000.0,
        s.acquire_latency_us.p99 as f64 / 1000.0,
        s.wakeups_per_acquisition
            .map_or("n/a".to_string(), |w| format!("{w:.2}")),
        s.timeouts,
        s.errors.values().sum::<u64>()
    )
}

/// Plain `lockbench: ...` lines on stderr.
pub struct PlainProgress;

impl Progress for PlainProgress {
    fn line(&self, msg: &str) {
        eprintln!("lockbench: {msg}");
    }
    fn cell_started(&self, index: usize, total: usize, id: &str) {
        eprintln!("lockbench: [{index}/{total}] {id}");
    }
    fn cell_finished(&self, s: &CellSummary) {
        eprintln!("lockbench: {}", cell_line(s));
    }
}

/// An indicatif bar over the cells, with status lines printed above it.
pub struct BarProgress(indicatif::ProgressBar);

impl BarProgress {
    fn new(total: usize) -> Self {
        let bar = indicatif::ProgressBar::new(total as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} {msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        BarProgress(bar)
    }
}

impl Progress for BarProgress {
    fn line(&self, msg: &str) {
        self.0.println(format!("lockbench: {msg}"));
    }
    fn cell_started(&self, index: usize, _total: usize, id: &str) {
        self.0.set_position(index as u64 - 1);
        self.0.set_message(id.to_string());
    }
    fn cell_finished(&self, s: &CellSummary) {
        self.0.println(format!(
            "lockbench: {} {}",
            self.0.message(),
            cell_line(s).trim_start()
        ));
        self.0.inc(1);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// A bar when stderr is a terminal, plain lines otherwise.
pub fn for_stderr(total: usize) -> Box<dyn Progress> {
    if std::io::stderr().is_terminal() {
        Box::new(BarProgress::new(total))
    } else {
        Box::new(PlainProgress)
    }
}
