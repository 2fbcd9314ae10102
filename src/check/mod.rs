//! Checkers: what a cell's history says about the lock, as three-valued verdicts with the
//! evidence a reader can walk to (Jepsen's `checker` protocol). They read only the stored
//! history and the cell's `cell.json`, so `lockbench check DIR` recomputes offline, with no
//! Docker, exactly what `lockbench run` wrote.
//!
//! [`evaluate`] is the one entry point both use: statistics and every checker over one cell
//! folder. Each checker lives in a file of its own and is listed in [`checkers`]; [`faults`]
//! then attributes their complete findings ([`Verdict::findings`]) to the nemesis' fault
//! windows (the summary's `faults`). A checker returns its counts typed ([`Counts`]), and they
//! fill the fields of the cell's [`Safety`] it owns. A checker that panics gives an `unknown`
//! verdict carrying the panic's message, and the others' verdicts stand (Jepsen's
//! `check-safe`).

pub mod availability;
#[cfg(test)]
mod equivalence_tests;
mod evidence;
pub mod expectation;
pub mod faults;
pub mod fencing;
pub mod folder;
#[cfg(test)]
mod kind_figures_tests;
pub mod lost_update;
pub mod mutex;
pub mod reentrant;
pub mod rwlock;
pub mod safety;
#[cfg(test)]
mod scale_tests;
pub mod semaphore;
#[cfg(test)]
pub(crate) mod testkit;

pub use evidence::{Evidence, EvidenceLog, Finding, MAX_EVIDENCE};
// The verdict types and file names are the results schema's, where the statistics and the
// reports read them too; the checkers' paths stay as they were.
pub use crate::results::{
    CELL_FILE, Expect, FaultWindow, HISTORY_FILE, LockKind, Overlaps, Safety, SafetyVerdict,
    Violation,
};

use std::collections::BTreeMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::{Serialize, Serializer};

use crate::history::{
    Event, Events, HistoryError, Operations, Section, into_time_order, read_events,
};
use crate::results::CellInfo;
use crate::stats::{self, Analysis};

/// What one checker counted, typed: each checker has a struct of its own counts, which puts
/// them where the cell's [`Safety`] shows them and names them for the verdict as written. A
/// checker that adds a count changes its own file and the [`Safety`] field that shows it.
pub trait Counts: fmt::Debug + Send + Sync {
    /// Sets the fields of `safety` this checker owns (and only those) to its counts.
    fn add_to(&self, safety: &mut Safety);
    /// Every count by its name in the verdict's `counts` (snake_case), in any order; a count
    /// the history could not give (nothing granted, no TTL known) is left out, never 0.
    fn named(&self) -> Vec<(&'static str, u64)>;
}

/// The counts of a checker that counted nothing (one that panicked).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCounts;

impl Counts for NoCounts {
    fn add_to(&self, _: &mut Safety) {}
    fn named(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// A verdict's counts: its checker's own [`Counts`], behind one type every verdict shares.
/// Written as an object of the counts by name, sorted (as the map they were before they were
/// typed), and compared by those.
#[derive(Debug, Clone)]
pub struct VerdictCounts(Arc<dyn Counts>);

impl VerdictCounts {
    /// A checker's counts.
    pub fn new(counts: impl Counts + 'static) -> VerdictCounts {
        VerdictCounts(Arc::new(counts))
    }

    /// The count named `name`, if the checker has it.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0
            .named()
            .into_iter()
            .find_map(|(n, v)| (n == name).then_some(v))
    }

    /// Sets the fields of `safety` the checker owns ([`Counts::add_to`]).
    pub fn add_to(&self, safety: &mut Safety) {
        self.0.add_to(safety)
    }

    fn by_name(&self) -> BTreeMap<&'static str, u64> {
        self.0.named().into_iter().collect()
    }

    fn is_empty(&self) -> bool {
        self.0.named().is_empty()
    }
}

impl PartialEq for VerdictCounts {
    fn eq(&self, other: &Self) -> bool {
        self.by_name() == other.by_name()
    }
}

impl Serialize for VerdictCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.by_name().serialize(s)
    }
}

/// One checker's judgement of one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The checker's name.
    pub checker: String,
    /// Whether its property held.
    pub validity: SafetyVerdict,
    /// The counts it found, in a line.
    pub summary: String,
    /// The first findings, each with the history lines to read.
    pub evidence: Vec<Evidence>,
    /// What it counted (complete, unlike `evidence`), for the cell's `safety`.
    #[serde(skip_serializing_if = "VerdictCounts::is_empty")]
    pub counts: VerdictCounts,
    /// Every finding, in time order (complete, unlike `evidence`), for the per-fault figures
    /// ([`faults`]); not written, since it is recomputed from the history.
    #[serde(skip)]
    pub findings: Vec<Finding>,
}

/// A cell's history with each event's line number, as checkers read it.
///
/// The operations and critical sections several checkers fold over are derived once, when
/// first asked for, and kept: `events` must not change after that.
#[derive(Debug, Clone)]
pub struct History {
    /// Events in file order (or in time order, with `lines` saying where each stood), held
    /// compactly ([`Events`]).
    pub events: Events,
    /// `lines[i]` is the 1-based line of `events[i]` in `history.jsonl`.
    pub lines: Vec<usize>,
    operations: OnceLock<Operations>,
    sections: OnceLock<Vec<Section>>,
}

impl History {
    /// A history whose events stand on consecutive lines from 1 (as the recorder writes them).
    pub fn new(events: Vec<Event>) -> History {
        let lines = (1..=events.len()).collect();
        History::with_lines(Events::from(events), lines)
    }

    /// A history whose event `i` stands on line `lines[i]` of its file.
    pub fn with_lines(events: Events, lines: Vec<usize>) -> History {
        History {
            events,
            lines,
            operations: OnceLock::new(),
            sections: OnceLock::new(),
        }
    }

    /// The history without a reentrant lock's re-entries (acquire and release events with a
    /// `depth` above 1), each event keeping its line: the outer holds, which statistics and
    /// every checker but the reentrant one judge (a re-entry is not a new grant: it repeats the
    /// outer grant's token, and answers without the server).
    pub fn outer_holds(&self) -> History {
        let mut events = Events::new();
        let mut lines = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            if !stats::reentry::is_reentry(e.depth()) {
                events.push(&e.to_event());
                lines.push(self.lines[i]);
            }
        }
        History::with_lines(events, lines)
    }

    /// [`Events::operations`] of the events, derived once.
    pub fn operations(&self) -> &Operations {
        self.operations.get_or_init(|| self.events.operations())
    }

    /// [`Events::sections`] (the critical sections, as event indices), derived once.
    pub fn critical_sections(&self) -> &[Section] {
        self.sections.get_or_init(|| self.events.sections())
    }

    /// When the history ends: the cell's end, or its last event if that is later (or the
    /// cell's end is not known).
    pub fn end_us(&self, cell: &CellInfo) -> u64 {
        let last = self.events.iter().map(|e| e.t_us()).max().unwrap_or(0);
        cell.end_us.map_or(last, |end| end.max(last))
    }
}

/// Judges one property of a cell's history.
///
/// Contract: reads only `history` and `cell`; returns [`SafetyVerdict::Unsafe`] only with evidence
/// naming the events, and [`SafetyVerdict::Unknown`] where an unknown (`info`) outcome could explain
/// what it saw.
pub trait Checker: Send + Sync {
    /// A short snake_case name, used as the verdict's `checker`.
    fn name(&self) -> &'static str;
    /// Whether it reads a reentrant lock's re-entries: only the reentrant checker does; every
    /// other checker is given the outer holds ([`History::outer_holds`]).
    fn sees_reentries(&self) -> bool {
        false
    }
    /// The verdict on `history`.
    fn check(&self, history: &History, cell: &CellInfo) -> Verdict;
}

/// Every checker the suite runs on a cell whose clients took a `lock`, in report order: the
/// kind's exclusion checker first (the property that makes it a lock of that kind: `mutex`,
/// `reentrant`, `rwlock` or `semaphore`), then those every kind shares. A mutex cell gets
/// exactly the checkers it always had; a read-write lock or a semaphore is never judged by the
/// exclusive `mutex` checker (readers, or up to N holders, overlapping is what they are for).
/// The others read the protected register and the grants, whatever the kind (a semaphore's
/// holders each have a register of their own: its `slot`, which `lost_update` keys by).
pub fn checkers(lock: LockKind) -> Vec<Box<dyn Checker>> {
    let exclusion: Box<dyn Checker> = match lock {
        LockKind::Mutex => Box::new(mutex::Mutex),
        LockKind::Reentrant { .. } => Box::new(reentrant::Reentrant),
        LockKind::RwLock { .. } => Box::new(rwlock::RwLock),
        LockKind::Semaphore { .. } => Box::new(semaphore::Semaphore),
    };
    #[allow(unused_mut)]
    let mut all: Vec<Box<dyn Checker>> = vec![
        exclusion,
        Box::new(lost_update::LostUpdate),
        Box::new(fencing::Fencing),
        Box::new(availability::Availability),
    ];
    #[cfg(test)]
    PLANTED.with(|p| all.extend(p.borrow().iter().map(|make| make())));
    all
}

/// Makes a checker (what a test plants).
#[cfg(test)]
pub(crate) type MakeChecker = fn() -> Box<dyn Checker>;

#[cfg(test)]
thread_local! {
    /// Checkers this crate's tests add after the suite's own, on their thread only (so tests
    /// running beside them are untouched): a checker that panics inside a whole run.
    pub(crate) static PLANTED: std::cell::RefCell<Vec<MakeChecker>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Everything known about one finished cell: its parameters, statistics and verdicts.
#[derive(Debug, Clone)]
pub struct CellResult {
    /// What the history does not say.
    pub info: CellInfo,
    /// Statistics and histograms.
    pub analysis: Analysis,
    /// One verdict per checker.
    pub verdicts: Vec<Verdict>,
    /// The verdicts merged ([`SafetyVerdict::merge`]).
    pub validity: SafetyVerdict,
}

/// Why a cell folder could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The history is missing or damaged.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// `cell.json` is missing or unreadable.
    #[error(
        "{path}: {message} (a cell folder of `lockbench run` has cell.json beside history.jsonl)"
    )]
    Cell { path: PathBuf, message: String },
}

/// Statistics and every checker over the cell folder `dir` (`cell.json` and `history.jsonl`);
/// a tryLock workload's (`workload_spec.acquire_timeout` of `"0s"`) summary gets its `try_lock`,
/// and a cell behind latency relays its `client_latency_us` and `client_jitter_us` (between
/// its servers, `peer_latency_us` and `peer_jitter_us`); a cell whose cluster's floor was
/// measured its `handoff_floor` and `handoff_over_floor`.
pub fn evaluate(dir: &Path) -> Result<CellResult, CheckError> {
    let path = dir.join(CELL_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| CheckError::Cell {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let info: CellInfo = serde_json::from_str(&text).map_err(|e| CheckError::Cell {
        path: path.clone(),
        message: e.to_string(),
    })?;
    crate::results::check_cell_version(&text).map_err(|e| CheckError::Cell {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let (mut events, mut lines) = read_events(&dir.join(HISTORY_FILE))?;
    // Sorted once here, every checker's time-order pass is a scan; `lines` keep the evidence
    // pointing at the file.
    into_time_order(&mut events, &mut lines);
    let history = History::with_lines(events, lines);
    let try_lock = crate::results::spec_acquire_timeout(&text) == Some(std::time::Duration::ZERO);
    let try_figures =
        try_lock.then(|| stats::try_lock::figures(&history.events, history.operations(), &info));
    let mut result = evaluate_history(&history, info);
    let summary = &mut result.analysis.summary;
    summary.try_lock = try_figures;
    let us = |field| crate::results::spec_duration(&text, field).map(|d| d.as_micros() as u64);
    summary.client_latency_us = us("client_latency");
    summary.client_jitter_us = us("client_jitter");
    summary.peer_latency_us = us("peer_latency");
    summary.peer_jitter_us = us("peer_jitter");
    if let Some(floor) = crate::results::floor::of_cell_json(&text) {
        let h = &summary.handoff_latency_us;
        summary.handoff_over_floor = floor.ratio(h.p50, h.count);
        summary.handoff_floor = Some(floor);
    }
    Ok(result)
}

/// [`evaluate`] on a history in memory: the summary's `safety` is filled from the verdicts of
/// the checkers of the cell's kind of lock ([`checkers`]).
pub fn evaluate_history(history: &History, info: CellInfo) -> CellResult {
    let checkers = checkers(info.lock);
    evaluate_with(history, info, &checkers)
}

/// [`evaluate_history`] with the checkers given (a test adds its own).
pub(crate) fn evaluate_with(
    history: &History,
    info: CellInfo,
    checkers: &[Box<dyn Checker>],
) -> CellResult {
    // A reentrant lock's re-entries are judged by its own checker alone; everything else reads
    // the outer holds.
    let reentrant = matches!(info.lock, crate::workload::LockKind::Reentrant { .. });
    let outer = reentrant.then(|| history.outer_holds());
    let judged = outer.as_ref().unwrap_or(history);
    // Statistics and checkers read the history alone and share nothing: side by side, on a
    // thread each, the time is the longer of the two.
    let (mut analysis, verdicts) = std::thread::scope(|s| {
        let stats = s.spawn(|| stats::analyze_with(&judged.events, judged.operations(), &info));
        let verdicts: Vec<Verdict> = checkers
            .iter()
            .map(|c| {
                let sees = if c.sees_reentries() { history } else { judged };
                check_safe(c.as_ref(), sees, &info)
            })
            .collect();
        let analysis = stats
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (analysis, verdicts)
    });
    let validity = SafetyVerdict::merge(verdicts.iter().map(|v| v.validity));
    analysis.summary.safety = Some(Safety::of(&verdicts, validity, info.expect));
    analysis.summary.faults = faults::fault_windows(judged, &info, &verdicts);
    if reentrant {
        analysis.summary.reentry =
            stats::reentry::cost(&history.events, info.warmup.as_micros() as u64);
    }
    add_kind_figures(&mut analysis.summary, judged, &info);
    CellResult {
        info,
        analysis,
        verdicts,
        validity,
    }
}

/// The figures of the cell's kind of lock, beside the mutex's: a read-write lock's readers and
/// writers apart (`rwlock`), a semaphore's occupancy (`semaphore`); other kinds add none.
fn add_kind_figures(summary: &mut stats::CellSummary, judged: &History, info: &CellInfo) {
    let (events, sections) = (&judged.events, judged.critical_sections());
    match info.lock {
        LockKind::RwLock { .. } => {
            summary.rwlock = Some(stats::rwlock::figures(
                events,
                judged.operations(),
                sections,
                info,
            ));
        }
        LockKind::Semaphore { .. } => {
            let wakeups = summary.wakeups_per_acquisition;
            summary.semaphore = Some(stats::semaphore::figures(events, sections, info, wakeups));
        }
        LockKind::Mutex | LockKind::Reentrant { .. } => {}
    }
}

/// The class of the evidence of a checker that panicked.
pub const PANICKED: &str = "checker_panicked";

/// `checker`'s verdict, or, when it panics, an `unknown` one whose evidence carries the panic's
/// message (Jepsen's `check-safe`): a bug in one checker says nothing about the lock, so it
/// must neither abort the run nor pass for `valid`, and the other checkers' verdicts stand.
fn check_safe(checker: &dyn Checker, history: &History, cell: &CellInfo) -> Verdict {
    // Unwind safety: a checker reads the history and the cell and owns everything it writes;
    // what a panic can leave behind is at most a derived view (`OnceLock`) left unset.
    match std::panic::catch_unwind(AssertUnwindSafe(|| checker.check(history, cell))) {
        Ok(v) => v,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            let what = format!(
                "the {} checker panicked, so it judged nothing: {message}",
                checker.name()
            );
            Verdict {
                checker: checker.name().into(),
                validity: SafetyVerdict::Unknown,
                summary: what.clone(),
                evidence: vec![Evidence::new(SafetyVerdict::Unknown, PANICKED, what)],
                counts: VerdictCounts::new(NoCounts),
                findings: Vec::new(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_jepsens_merge_valid() {
        use SafetyVerdict::*;
        assert_eq!(SafetyVerdict::merge([Safe, Safe]), Safe);
        assert_eq!(SafetyVerdict::merge([Safe, Unknown, Safe]), Unknown);
        assert_eq!(SafetyVerdict::merge([Unknown, Unsafe, Safe]), Unsafe);
        assert_eq!(
            SafetyVerdict::merge([]),
            Unknown,
            "no evidence settles nothing"
        );
        assert_eq!(serde_json::to_string(&Unsafe).unwrap(), "\"unsafe\"");
    }

    #[test]
    fn a_folder_without_cell_json_names_the_file_and_the_fix() {
        let dir = std::env::temp_dir().join(format!("lockbench-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = evaluate(&dir).unwrap_err().to_string();
        assert!(
            e.contains("cell.json") && e.contains("lockbench run"),
            "{e}"
        );
    }

    #[test]
    fn a_cell_json_of_a_newer_schema_is_refused_and_an_older_one_read() {
        let dir = std::env::temp_dir().join(format!("lockbench-cellv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(HISTORY_FILE), "").unwrap();
        let mut file = serde_json::to_value(cell(1)).unwrap();
        // Written before cell.json had a version: read.
        std::fs::write(dir.join(CELL_FILE), file.to_string()).unwrap();
        assert!(evaluate(&dir).is_ok());
        file["schema_version"] = crate::results::SCHEMA_VERSION.into();
        std::fs::write(dir.join(CELL_FILE), file.to_string()).unwrap();
        assert!(evaluate(&dir).is_ok());
        file["schema_version"] = (crate::results::SCHEMA_VERSION + 1).into();
        std::fs::write(dir.join(CELL_FILE), file.to_string()).unwrap();
        let e = evaluate(&dir).unwrap_err().to_string();
        assert!(
            e.contains("cell.json")
                && e.contains(&format!(
                    "schema_version {}",
                    crate::results::SCHEMA_VERSION + 1
                ))
                && e.contains(&format!("reads up to {}", crate::results::SCHEMA_VERSION)),
            "{e}"
        );
    }

    use crate::check::testkit::*;

    fn safety(events: Vec<Event>) -> (CellResult, Safety) {
        safety_with(events, &checkers(LockKind::Mutex))
    }

    fn safety_with(events: Vec<Event>, checkers: &[Box<dyn Checker>]) -> (CellResult, Safety) {
        with_safety(evaluate_with(&History::new(events), cell(3), checkers))
    }

    /// A result and the safety it filled in.
    fn with_safety(r: CellResult) -> (CellResult, Safety) {
        let s = r
            .analysis
            .summary
            .safety
            .clone()
            .expect("evaluate fills safety");
        (r, s)
    }

    /// Client 0 (token 1) reads 0 and writes 1 from 10 to 90; client 1 (token 2) waits from 50,
    /// is granted at 100, reads 1 and writes 2, releases at 160.
    fn clean() -> Vec<Event> {
        let mut h = section(0, 0, "k", 1, 0);
        h.extend([
            invoke(50, 1, "k"),
            grant(100, 1, "k", 2, 1000),
            read(110, 1, "k", 2, 1),
            write(150, 1, "k", 2, 2),
            release(160, 1, "k"),
        ]);
        h
    }

    #[test]
    fn a_clean_history_is_safe() {
        let (r, s) = safety(clean());
        assert_eq!(r.validity, SafetyVerdict::Safe);
        assert!(
            r.verdicts.iter().all(|v| v.validity == SafetyVerdict::Safe),
            "{:?}",
            r.verdicts
        );
        assert_eq!((s.verdict, s.expected), (SafetyVerdict::Safe, Expect::Safe));
        assert_eq!(s.overlaps, Overlaps::default());
        assert_eq!(
            (
                s.lost_updates,
                s.stale_accesses_rejected,
                s.token_regressions,
                s.stuck_locks
            ),
            (0, 0, 0, 0)
        );
        // Windows: client 0 [0, 10], client 1 [50, 100]; first grant 10 µs after the first invoke.
        assert_eq!(
            (s.max_unavailable_ms, s.first_acquisition_ms),
            (0.05, Some(0.01))
        );
        assert!(s.violations.is_empty() && s.possible_violations.is_empty());
        let names: Vec<&str> = r.verdicts.iter().map(|v| v.checker.as_str()).collect();
        assert_eq!(names, ["mutex", "lost_update", "fencing", "availability"]);
    }

    #[test]
    fn only_unknown_overlaps_make_the_cell_unknown() {
        // Client 2's acquisition, invoked at 20 while client 0 holds, ends unknown at 40.
        let mut h = clean();
        h.extend([invoke(20, 2, "k"), info(40, 2, "k")]);
        let (r, s) = safety(h);
        assert_eq!(
            (r.validity, s.verdict),
            (SafetyVerdict::Unknown, SafetyVerdict::Unknown)
        );
        assert_eq!(
            s.overlaps,
            Overlaps {
                unknown: 1,
                ..Overlaps::default()
            }
        );
        assert!(s.violations.is_empty());
        assert_eq!(s.possible_violations.len(), 1);
        let p = &s.possible_violations[0];
        assert_eq!(
            (p.checker.as_str(), p.class.as_deref(), &p.clients[..]),
            ("mutex", Some("unknown"), &[0, 2][..])
        );
        // Lines of client 0's grant (2) and release (5), client 2's invoke (11) and info (12).
        assert_eq!(p.lines, [2, 5, 11, 12]);
    }

    /// Unfenced and granted twice: client 1 is granted at 30 inside client 0's hold, both read
    /// 0 and write 1; the register ends at 1 after two writes.
    fn granted_twice() -> Vec<Event> {
        vec![
            invoke(0, 0, "k"),
            grant(10, 0, "k", 1, 1000),
            read(20, 0, "k", 1, 0),
            invoke(25, 1, "k"),
            grant(30, 1, "k", 2, 1000),
            read(35, 1, "k", 2, 0),
            write(40, 1, "k", 2, 1),
            release(45, 1, "k"),
            write(80, 0, "k", 1, 1),
            release(90, 0, "k"),
        ]
    }

    #[test]
    fn a_double_grant_with_a_lost_update_is_unsafe_whatever_the_file_order() {
        let (r, s) = safety(granted_twice());
        assert_eq!(s.verdict, SafetyVerdict::Unsafe);
        assert_eq!(
            s.overlaps,
            Overlaps {
                granted_twice: 1,
                ..Overlaps::default()
            }
        );
        assert_eq!((s.lost_updates, s.token_regressions), (1, 0));
        // The overlap (at 10 µs) comes before the second write of 1 (at 80 µs).
        let classes: Vec<_> = s
            .violations
            .iter()
            .map(|v| (v.checker.as_str(), v.class.as_deref()))
            .collect();
        assert_eq!(
            classes,
            [
                ("mutex", Some("granted_twice")),
                ("lost_update", Some("lost_update"))
            ]
        );
        assert_eq!(s.violations[1].lines, [3, 6, 7, 9]);

        let mut reversed = granted_twice();
        reversed.reverse();
        let (back, t) = safety(reversed);
        assert_eq!(back.validity, r.validity);
        for (a, b) in r.verdicts.iter().zip(&back.verdicts) {
            assert_eq!(
                (a.validity, &a.counts),
                (b.validity, &b.counts),
                "{}",
                a.checker
            );
        }
        assert_eq!(t.overlaps, s.overlaps);
        // The same events, at mirrored lines: line n of 10 is line 11 - n reversed.
        let mirrored: Vec<usize> = s.violations[1].lines.iter().rev().map(|l| 11 - l).collect();
        assert_eq!(t.violations[1].lines, mirrored);
        assert_eq!(t.violations[1].t_us, s.violations[1].t_us);
    }

    use super::testkit::Panicking;

    #[test]
    fn a_checker_that_panics_gives_unknown_with_its_message_and_the_others_stand() {
        let mut all = checkers(LockKind::Mutex);
        all.push(Box::new(Panicking));
        let with = |events| safety_with(events, &all);

        // A clean history: the four checkers still judge it valid, the cell is unknown.
        let (r, s) = with(clean());
        let (plain, plain_safety) = safety(clean());
        assert_eq!(
            r.verdicts[..4],
            plain.verdicts[..],
            "the others' verdicts stand"
        );
        let p = &r.verdicts[4];
        assert_eq!(
            (p.checker.as_str(), p.validity),
            ("panicking", SafetyVerdict::Unknown)
        );
        assert!(
            p.summary.contains("index 7 out of range for length 3"),
            "{}",
            p.summary
        );
        assert_eq!(p.evidence[0].class.as_deref(), Some(PANICKED));
        assert_eq!(
            (r.validity, s.verdict),
            (SafetyVerdict::Unknown, SafetyVerdict::Unknown)
        );
        // Its message is the cell's first note, and the counts are the four checkers'.
        let note = &s.possible_violations[0];
        assert_eq!(note.checker, "panicking");
        assert!(
            note.what.contains("index 7 out of range for length 3"),
            "{}",
            note.what
        );
        assert_eq!(
            Safety {
                verdict: plain_safety.verdict,
                possible_violations: plain_safety.possible_violations.clone(),
                ..s.clone()
            },
            plain_safety
        );
        let why = expectation::why(&s);
        assert!(
            why.ends_with("first: the panicking checker panicked, so it judged nothing: index 7 out of range for length 3"),
            "{why}"
        );

        // An unsafe history stays unsafe: a violation found is found, whatever else panicked.
        let (r, s) = with(granted_twice());
        assert_eq!(
            (r.validity, s.verdict),
            (SafetyVerdict::Unsafe, SafetyVerdict::Unsafe)
        );
        assert_eq!(s.overlaps.granted_twice, 1);
        assert_eq!(r.verdicts[4].validity, SafetyVerdict::Unknown);
    }

    #[test]
    fn safety_is_in_summary_json_and_reads_back_equal() {
        let (r, _) = safety(granted_twice());
        let json = serde_json::to_value(&r.analysis.summary).unwrap();
        assert_eq!(json["schema_version"], crate::results::SCHEMA_VERSION);
        assert_eq!(json["safety"]["verdict"], "unsafe");
        assert_eq!(json["safety"]["expected"], "safe");
        assert_eq!(json["safety"]["overlaps"]["granted_twice"], 1);
        assert_eq!(
            json["safety"]["violations"][0]["tokens"],
            serde_json::json!([1, 2])
        );
        let back: crate::results::CellSummary = serde_json::from_value(json).unwrap();
        assert_eq!(back, r.analysis.summary, "lockbench check compares these");
        // Statistics alone leave it out.
        let plain = stats::analyze(&Events::from(granted_twice()), &cell(3)).summary;
        assert!(
            serde_json::to_value(&plain)
                .unwrap()
                .get("safety")
                .is_none()
        );
    }

    #[test]
    fn each_kind_of_lock_has_its_exclusion_checker_and_a_mutex_keeps_its_own() {
        let names =
            |lock| -> Vec<&'static str> { checkers(lock).iter().map(|c| c.name()).collect() };
        let shared = ["lost_update", "fencing", "availability"];
        assert_eq!(names(LockKind::Mutex), [&["mutex"][..], &shared].concat());
        assert_eq!(
            names(LockKind::Reentrant { depth: 2 }),
            [&["reentrant"][..], &shared].concat()
        );
        assert_eq!(
            names(LockKind::RwLock { read_ratio: 0.9 }),
            [&["rwlock"][..], &shared].concat()
        );
        assert_eq!(
            names(LockKind::Semaphore { permits: 3 }),
            [&["semaphore"][..], &shared].concat()
        );
    }

    /// Readers 0 (10 to 100) and 1 (30 to 110) of k.
    fn two_readers() -> Vec<Event> {
        vec![
            reading(invoke(0, 0, "k")),
            reading(grant(10, 0, "k", 1, 1000)),
            reading(invoke(20, 1, "k")),
            reading(grant(30, 1, "k", 2, 1000)),
            release(100, 0, "k"),
            release(110, 1, "k"),
        ]
    }

    #[test]
    fn a_cell_is_judged_by_the_checkers_of_its_kind_of_lock() {
        let of = |lock| {
            with_safety(evaluate_history(
                &History::new(two_readers()),
                CellInfo { lock, ..cell(2) },
            ))
        };
        // Readers sharing a read-write lock: safe.
        let (r, s) = of(LockKind::RwLock { read_ratio: 1.0 });
        assert_eq!(
            (r.validity, s.verdict),
            (SafetyVerdict::Safe, SafetyVerdict::Safe)
        );
        assert_eq!(r.verdicts[0].checker, rwlock::NAME);
        assert_eq!(r.verdicts[0].counts.get(rwlock::SHARED), Some(1));
        assert_eq!(s.overlaps, Overlaps::default());
        // The same holds in a mutex cell: granted twice.
        let (r, s) = of(LockKind::Mutex);
        assert_eq!(r.validity, SafetyVerdict::Unsafe);
        assert_eq!(s.overlaps.granted_twice, 1);
        // A semaphore of one permit finds them too, in its own count.
        let (r, s) = of(LockKind::Semaphore { permits: 1 });
        assert_eq!(r.validity, SafetyVerdict::Unsafe);
        assert_eq!(
            (
                s.over_permits,
                s.possible_over_permits,
                s.overlaps.granted_twice
            ),
            (Some(1), Some(0), 0)
        );
        let why = expectation::why(&s);
        assert!(
            why.starts_with("1 grants beyond the permits; first: key k: 2 holders at 30 µs"),
            "{why}"
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["over_permits"], 1);
        // Two permits: safe.
        assert_eq!(
            of(LockKind::Semaphore { permits: 2 }).0.validity,
            SafetyVerdict::Safe
        );
        // A reentrant cell: the clients' holds overlap, and nobody released what it did not hold.
        let (r, s) = of(LockKind::Reentrant { depth: 2 });
        assert_eq!(r.validity, SafetyVerdict::Unsafe);
        assert_eq!(
            (s.overlaps.granted_twice, s.releases_by_non_holder),
            (1, Some(0))
        );
    }

    #[test]
    fn a_mutex_cells_safety_has_no_field_of_another_kind() {
        let (_, s) = safety(granted_twice());
        assert_eq!(
            (
                s.releases_by_non_holder,
                s.over_permits,
                s.possible_over_permits
            ),
            (None, None, None)
        );
        let json = serde_json::to_value(&s).unwrap();
        for field in [
            "releases_by_non_holder",
            "over_permits",
            "possible_over_permits",
        ] {
            assert!(json.get(field).is_none(), "{field} in {json}");
        }
        assert_eq!(s.described_counts().len(), 8);
    }
}
