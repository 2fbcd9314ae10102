//! Shared by the Docker-free tests that play a plan on the mock recipe (the gate, capacity and
//! plots tests): the run, as `lockbench run` makes it, into a fresh folder.

use std::path::Path;

use lockbench::plan::Plan;
use lockbench::recipe::mock::MockOptions;
use lockbench::report::Exporters;
use lockbench::runner::progress::PlainProgress;
use lockbench::runner::{MockBackend, RunFolder, RunOutcome, run_on};

/// Plays `plan` on the mock recipe with `opts` into a new run folder `name` under `out`,
/// writing the cells' files only (no plots or reports); panics with the error if the run fails.
pub async fn play(opts: MockOptions, plan: Plan, out: &Path, name: &str) -> RunOutcome {
    let folder = RunFolder::create(Some(out), name).expect("run folder");
    run_on(
        &MockBackend::new(opts),
        plan,
        folder,
        &PlainProgress,
        &Exporters::files_only(),
    )
    .await
    .expect("mock run")
}
