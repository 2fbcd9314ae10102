//! The verbs that read finished runs, with no Docker: `check`, `report`, `baseline save`,
//! `gate`.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{Exit, GateArgs};
use crate::{check, gate, report};

/// `lockbench check DIR`: every cell's verdicts recomputed from its stored history (and
/// written back with `write`), the table on stderr, and how they compare with the stored ones.
pub fn check(dir: &Path, write: bool, strict: bool) -> anyhow::Result<Exit> {
    let files = report::Exporters::files_only();
    let cells = check::folder::recheck(dir, write.then_some(&files))?;
    let summaries: Vec<_> = cells
        .iter()
        .map(|c| c.result.analysis.summary.clone())
        .collect();
    print!("{}", report::terminal::text(dir, &summaries));
    eprintln!("lockbench: {}", check::folder::comparison(&cells, write));
    Ok(verdicts(&summaries, strict))
}

/// `lockbench report DIR`: the run's reports rebuilt from its cell folders.
pub fn report(dir: &Path) -> anyhow::Result<Exit> {
    let done = report::rebuild::rebuild(dir, &report::Exporters::reports())?;
    for w in &done.warnings {
        eprintln!("lockbench: {w}");
    }
    if !done.unfinished.is_empty() {
        eprintln!(
            "lockbench: {} cell folder(s) without summary.json left out (the run stopped inside them)",
            done.unfinished.len()
        );
    }
    println!(
        "{} cells: {} and {}",
        done.cells,
        dir.join(report::markdown::REPORT_FILE).display(),
        dir.join(report::html::REPORT_FILE).display()
    );
    Ok(Exit::Ok)
}

/// `lockbench baseline save FILE`: a baseline from finished runs (default: the latest).
pub fn baseline_save(file: &Path, mut from: Vec<PathBuf>) -> anyhow::Result<Exit> {
    if from.is_empty() {
        from.push(gate::baseline::latest_run());
    }
    let b = gate::Baseline::of_runs(&from)?;
    b.save(file)?;
    let reps: Vec<u32> = b.cells.iter().map(|c| c.repetitions).collect();
    println!(
        "{}: {} cells from {} ({} to {} repetitions each)",
        file.display(),
        b.cells.len(),
        b.source,
        reps.iter().min().unwrap_or(&0),
        reps.iter().max().unwrap_or(&0)
    );
    Ok(Exit::Ok)
}

/// `lockbench baseline upgrade FILE`: a baseline of an older layout converted in place.
pub fn baseline_upgrade(file: &Path) -> anyhow::Result<Exit> {
    println!("{}", gate::baseline::upgrade_file(file)?);
    Ok(Exit::Ok)
}

/// `lockbench gate`: the table on stdout, JUnit when asked; exit 1 on a failure, 2 when the
/// gate cannot judge.
pub fn gate(args: GateArgs) -> anyhow::Result<Exit> {
    let current = if args.current.is_empty() {
        vec![gate::baseline::latest_run()]
    } else {
        args.current
    };
    let th = gate::Thresholds {
        normalize: args.normalize,
        normalize_by: args.normalize_by,
        ..gate::Thresholds::with(&args.thresholds, args.sigmas)
    };
    let outcome = match &args.pair {
        Some(pair) => gate::gate_paired(&current, pair, &th)?,
        None => gate::gate(&args.baseline, &current, &th)?,
    };
    print!("{}", gate::output::markdown(&outcome));
    if let Some(path) = &args.junit {
        std::fs::write(path, gate::output::junit(&outcome))
            .with_context(|| format!("writing the JUnit file {}", path.display()))?;
    }
    Ok(if outcome.passed() {
        Exit::Ok
    } else {
        Exit::UnsafeOrRegression
    })
}

/// Says which cells are not as their workloads expect, and whether that fails the command.
pub(crate) fn verdicts(summaries: &[crate::stats::CellSummary], strict: bool) -> Exit {
    let judgement = check::expectation::Judgement::of_summaries(summaries);
    for line in judgement.lines(strict) {
        eprintln!("lockbench: {line}");
    }
    if judgement.fails(strict) {
        Exit::UnsafeOrRegression
    } else {
        Exit::Ok
    }
}
