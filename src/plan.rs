//! The expanded matrix of a run: system (at a version) × strategy × workload × chaos ×
//! clients, validated before any container starts.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::nemesis::schedule::Schedule;
use crate::recipe::Strategy;
use crate::system::{System, SystemAt, Version};
use crate::workload::Expect;
use crate::workload::{ClientsAs, LockKind, Stop, Workload};

/// The chaos coordinate of a cell with no fault schedule.
pub use crate::nemesis::schedule::NO_CHAOS;

/// One cell of the matrix: a workload at one client count on one system under one strategy
/// and one chaos schedule.
#[derive(Debug, Clone)]
pub struct Cell {
    pub system: System,
    /// The server version lockbench starts for it; `None` where lockbench starts no server
    /// (a target, the in-memory mock).
    pub version: Option<Version>,
    pub strategy: Strategy,
    /// The workload with any command-line overrides (clients, duration, seed) applied.
    pub workload: Workload,
    /// The fault schedule ([`Schedule::none`] without chaos), with `--seed` applied.
    pub chaos: Schedule,
    /// Which run of this cell it is under `--repeat N` (1 to N); `None` without repetitions.
    pub repetition: Option<u32>,
    /// The lock library whose driver runs the clients (`--clients-from`); `None` for
    /// lockbench's own recipe under `strategy`.
    pub library: Option<ClientLibrary>,
}

/// A lock library as a coordinate: its name and the manifest of the driver that runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientLibrary {
    /// The library's name (`redis-py`), as its manifest gives it.
    pub name: String,
    /// The driver's manifest (`drivers/example-redis-py/driver.toml`).
    pub manifest: std::path::PathBuf,
    /// The systems the driver locks on.
    pub systems: Vec<System>,
    /// The library gives fencing tokens; without them it has no fenced cell.
    #[serde(default)]
    pub tokens: bool,
}

impl Cell {
    /// A cell without faults.
    pub fn calm(system: System, strategy: Strategy, workload: Workload) -> Cell {
        Cell {
            system,
            version: None,
            strategy,
            workload,
            chaos: Schedule::none(),
            repetition: None,
            library: None,
        }
    }

    /// The cell's coordinates.
    pub fn id(&self) -> CellId {
        CellId {
            system: self.system,
            version: self.version.map(|v| v.name().to_string()),
            strategy: self.strategy,
            workload: self.workload.name.clone(),
            chaos: self.chaos.name.clone(),
            clients: self.workload.clients,
            repetition: self.repetition,
            library: self.library.as_ref().map(|l| l.name.clone()),
        }
    }

    /// The verdict this cell is expected to get: the workload's and the schedule's merged,
    /// unsafe winning. A fault can break a design the workload alone does not, but it cannot
    /// make a design that is unsafe without faults safe, so a schedule only ever raises the
    /// expectation to unsafe.
    pub fn expect(&self) -> Expect {
        let workload = self.workload.expect_for(self.system, self.strategy);
        let schedule = self.chaos.expect_for(self.system, self.strategy);
        match (workload, schedule) {
            (Expect::Unsafe, _) | (_, Some(Expect::Unsafe)) => Expect::Unsafe,
            _ => Expect::Safe,
        }
    }

    /// Repetition `r` (1-based) of this cell: its seeds moved on by `r - 1` (the schedule's
    /// only where it draws, so a calm schedule stays `none`).
    pub fn repetition(&self, r: u32) -> Cell {
        let step = u64::from(r.saturating_sub(1));
        let mut cell = Cell {
            repetition: Some(r),
            ..self.clone()
        };
        cell.workload.seed = cell.workload.seed.wrapping_add(step) % SEED_LIMIT;
        if !cell.chaos.is_calm() {
            cell.chaos.seed = cell.chaos.seed.wrapping_add(step) % SEED_LIMIT;
        }
        cell
    }

    /// The number of server nodes its cluster runs.
    pub fn cluster_size(&self) -> usize {
        self.chaos.size_for(self.system)
    }
}

/// Seeds are stored as TOML integers: a repetition's seed stays below `i64::MAX`.
const SEED_LIMIT: u64 = i64::MAX as u64;

fn no_chaos() -> String {
    NO_CHAOS.to_string()
}

/// The coordinates of one cell, stored in its summary: what results are compared on (the
/// regression gate keys baselines on [`CellId::base`]). Displayed as the cell's folder name,
/// `<system>[@<version>]-<strategy>-<workload>[-<chaos>]-c<clients>[-r<repetition>]` (the
/// version only where it is not the system's default, no chaos part without a schedule, no
/// repetition part without `--repeat`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CellId {
    /// The system the cell runs on.
    pub system: System,
    /// The server version lockbench started for it (`3.5`, `valkey-8.1`); absent where it
    /// started none (a target) and in results from before versions were coordinates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The waiting strategy.
    pub strategy: Strategy,
    /// The workload's name.
    pub workload: String,
    /// The fault schedule's name, `none` without one.
    #[serde(default = "no_chaos")]
    pub chaos: String,
    /// Concurrent clients.
    pub clients: u32,
    /// Which run of the cell this is under `--repeat N` (1 to N); absent without repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<u32>,
    /// The lock library whose driver ran the clients, which then wait the library's own way
    /// (its name stands for the strategy in the id); absent for lockbench's own recipes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
}

impl CellId {
    /// The id of a cell that runs without faults.
    pub fn new(system: System, strategy: Strategy, workload: &str, clients: u32) -> CellId {
        CellId {
            system,
            version: None,
            strategy,
            workload: workload.to_string(),
            chaos: NO_CHAOS.to_string(),
            clients,
            repetition: None,
            library: None,
        }
    }

    /// How the cell's clients wait: the library's name for a library's cell (it waits its own
    /// way), else the recipe's strategy. Reports show it in the strategy column.
    pub fn waiting(&self) -> String {
        match &self.library {
            Some(library) => library.clone(),
            None => self.strategy.to_string(),
        }
    }

    /// The cell's coordinates without the repetition: what every repetition of a cell shares.
    pub fn base(&self) -> CellId {
        CellId {
            repetition: None,
            ..self.clone()
        }
    }
}

impl fmt::Display for CellId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.system)?;
        if let Some(v) = &self.version
            && *v != self.system.default_version().name()
        {
            write!(f, "@{v}")?;
        }
        match &self.library {
            Some(l) => write!(f, "-{l}-{}", self.workload)?,
            None => write!(f, "-{}-{}", self.strategy, self.workload)?,
        }
        if self.chaos != NO_CHAOS {
            write!(f, "-{}", self.chaos)?;
        }
        write!(f, "-c{}", self.clients)?;
        if let Some(r) = self.repetition {
            write!(f, "-r{r}")?;
        }
        Ok(())
    }
}

/// Everything a run will do, in order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub run_id: String,
    pub seed: Option<u64>,
    pub cells: Vec<Cell>,
    /// Combinations left out, with the reason (e.g. `native` on a system other than etcd).
    pub skipped: Vec<String>,
    /// Handoffs the floor probe measures on each cluster before its cells (`--floor-samples`);
    /// 0: no floor is measured, and no cell gets `handoff_over_floor`.
    pub floor_samples: usize,
}

/// Handoffs a floor probe measures on each cluster before its cells unless `--floor-samples`
/// says otherwise: a few seconds.
pub const DEFAULT_FLOOR_SAMPLES: usize = 200;

fn default_floor_samples() -> usize {
    DEFAULT_FLOOR_SAMPLES
}

/// A plan that cannot run, or a `plan.toml` that cannot be read back, with the fix.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("nothing to run: {0}")]
    Empty(String),
    /// Choices that cannot go together (two schedules of one name, a client pause on clients
    /// that are not processes).
    #[error("{0}")]
    Conflict(String),
    #[error("{origin}: not a lockbench plan: {message}")]
    Unreadable { origin: String, message: String },
}

/// Why `system` cannot run `lock` under `strategy`, if it cannot: its recipes do not take the
/// kind ([`System::lock_kinds`]), or the strategy serves other kinds
/// ([`Strategy::for_kinds`]: etcd's server-side `Lock` is a mutex, each calibration breaks one
/// kind). The plan skips such a cell with
/// this note, as it skips a schedule a system cannot run.
fn lock_unfit(system: System, strategy: Strategy, lock: LockKind) -> Option<String> {
    let kind = lock.name();
    if !system.lock_kinds().contains(&kind) {
        return Some(format!(
            "{system} × lock = \"{kind}\": no {system} recipe takes a {kind} (it offers {}; \
             the guide's lock kinds table, docs/book/src/workloads.md#lock-kinds, says why)",
            system.lock_kinds().join(", ")
        ));
    }
    let serves = strategy.for_kinds()?;
    (!serves.contains(&kind)).then(|| {
        format!(
            "{system}/{strategy} × lock = \"{kind}\": the {strategy} strategy is for {} only",
            serves.join(" and ")
        )
    })
}

/// One cell as `plan.toml` stores it: its coordinates and its workload in the workload file's
/// own syntax.
#[derive(Serialize, Deserialize)]
struct CellRow {
    id: String,
    system: System,
    /// The server version lockbench starts; absent where it starts none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    strategy: Strategy,
    #[serde(default = "no_chaos")]
    chaos: String,
    workload: toml::Table,
    /// The schedule in the chaos file's syntax; absent for `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schedule: Option<toml::Table>,
    /// Which repetition of the cell (`--repeat`); absent without repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    repetition: Option<u32>,
    /// The library whose driver runs the clients; absent for lockbench's own recipes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    library: Option<ClientLibrary>,
}

#[derive(Serialize, Deserialize)]
struct PlanFile {
    run_id: String,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    skipped: Vec<String>,
    /// Absent in plans written before the floor probe had a setting.
    #[serde(default = "default_floor_samples")]
    floor_samples: usize,
    cells: Vec<CellRow>,
}

/// One cluster's share of the plan: the cells that run on `system` at `size` nodes.
#[derive(Debug)]
pub struct ClusterGroup<'a> {
    /// The system.
    pub system: System,
    /// The server version to start; `None` where lockbench starts no server.
    pub version: Option<Version>,
    /// Its server nodes.
    pub size: usize,
    /// The delay between its nodes (the cells' `peer_latency`).
    pub peer_latency: crate::latency::Delay,
    /// Its cells, in plan order.
    pub cells: Vec<&'a Cell>,
}

/// A system as a plan names it: at the version lockbench starts ([`SystemAt`]), or a
/// [`System`] alone where lockbench starts no server of its own or takes the default (a
/// target, the in-memory mock, tests).
pub trait PlannedSystem {
    /// The system.
    fn system(&self) -> System;
    /// The version lockbench starts, `None` for whatever the cluster runs.
    fn version(&self) -> Option<Version>;
}

impl PlannedSystem for System {
    fn system(&self) -> System {
        *self
    }
    fn version(&self) -> Option<Version> {
        None
    }
}

impl PlannedSystem for SystemAt {
    fn system(&self) -> System {
        self.system
    }
    fn version(&self) -> Option<Version> {
        Some(self.version)
    }
}

/// The schedules of a run (`none` alone when none is given), with `--seed` applied, each
/// name once.
fn schedules(ov: &Overrides) -> Result<Vec<Schedule>, PlanError> {
    let mut out: Vec<Schedule> = Vec::new();
    let given = if ov.schedules.is_empty() {
        vec![Schedule::none()]
    } else {
        ov.schedules.clone()
    };
    for mut s in given {
        if out.iter().any(|o| o.name == s.name) {
            return Err(PlanError::Conflict(format!(
                "two chaos schedules are named {}: cell ids would collide; give one another \
                 'name' (it defaults to the file stem)",
                s.name
            )));
        }
        // A calm schedule draws nothing: its seed stays, so `none` stays `none` in plan.toml.
        if let Some(seed) = ov.seed.filter(|_| !s.is_calm()) {
            s.seed = seed;
        }
        out.push(s);
    }
    Ok(out)
}

/// `wl` at `clients` clients with the command-line overrides applied.
fn with_overrides(wl: &Workload, clients: u32, ov: &Overrides) -> Workload {
    let mut w = wl.clone();
    w.clients = clients;
    if let Some(st) = w.stampede {
        // Every client takes the lock once a round.
        w.stop = Stop::Acquisitions(u64::from(st.rounds) * u64::from(clients));
    }
    // A stampede's rounds end it: a duration would only cut its rounds short (the runner stops
    // clients at the duration plus a grace).
    if let Some(d) = ov.duration.filter(|_| w.stampede.is_none()) {
        w.stop = Stop::Duration(d);
        // Keep the warm-up a small part of a shortened run.
        w.warmup = w.warmup.min(d / 5);
    }
    if let Some(s) = ov.seed {
        w.seed = s;
    }
    if let Some(c) = ov.clients_as {
        w.clients_as = c.apply(w.clients_as);
    }
    w
}

/// Why `chaos` would inject nothing into a cell of `w`, if it would: every fault of its
/// timeline ends past the cell's `duration` (a fault that would outlast the cell is left out),
/// and such a cell's verdict would say nothing about faults. Cells that stop after a number of
/// acquisitions have no length to check against.
fn faultless(chaos: &Schedule, w: &Workload) -> Option<String> {
    let Stop::Duration(d) = w.stop else {
        return None;
    };
    if chaos.is_calm() || !chaos.timeline(d).is_empty() {
        return None;
    }
    let fmt = |d: Duration| humantime::format_duration(d).to_string();
    let need = chaos
        .shortest_cell()
        .map(|n| {
            format!(
                ": its earliest fault is over only {} into a cell. Give --duration {} or more \
                 (or raise duration in the workload)",
                fmt(n),
                fmt(Duration::from_secs(
                    n.as_secs() + u64::from(n.subsec_nanos() > 0)
                ))
            )
        })
        .unwrap_or_default();
    Some(format!(
        "chaos schedule {} starts no fault inside the {} cells of workload {}{need}",
        chaos.name,
        fmt(d),
        w.name
    ))
}

/// Command-line choices that override the workload files.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub strategies: Option<Vec<Strategy>>,
    pub clients: Option<Vec<u32>>,
    pub duration: Option<Duration>,
    pub seed: Option<u64>,
    /// Where clients run (`--clients-as`, `--clients-per-process`).
    pub clients_as: Option<ClientsOverride>,
    /// The chaos schedules (`--chaos`), each a coordinate of the matrix; empty for `none` only.
    pub schedules: Vec<Schedule>,
    /// One-way client latencies (`--client-latency`), each a coordinate of the matrix: every
    /// workload runs at each, renamed `<name>-lat<latency>` when there are several.
    pub client_latency: Option<Vec<Duration>>,
    /// One-way latencies between the servers (`--peer-latency`), each a coordinate of the
    /// matrix: every workload runs at each (on a cluster of its own), renamed
    /// `<name>-peer<latency>` when there are several.
    pub peer_latency: Option<Vec<Duration>>,
    /// Lock libraries whose drivers run cells of their own beside the recipes'
    /// (`--clients-from`), on the systems each names.
    pub libraries: Vec<ClientLibrary>,
}

/// `workloads` at each of the `--client-latency` values (their own `client_latency` when none
/// is given); with several values each copy's name gains `-lat<latency>`, so the cells differ.
/// Then likewise for `--peer-latency` and `-peer<latency>`.
fn at_latencies(
    workloads: &[Workload],
    client: Option<&[Duration]>,
    peer: Option<&[Duration]>,
) -> Vec<Workload> {
    let at_client = at_each(workloads, client, "lat", |w, l| w.client_latency.base = l);
    at_each(&at_client, peer, "peer", |w, l| w.peer_latency.base = l)
}

/// Each workload once per value in `values`, `set` to it, named `<name>-<tag><value>` when
/// there are several; `workloads` as they are when `values` is `None`.
fn at_each(
    workloads: &[Workload],
    values: Option<&[Duration]>,
    tag: &str,
    set: impl Fn(&mut Workload, Duration),
) -> Vec<Workload> {
    let Some(values) = values else {
        return workloads.to_vec();
    };
    let mut out = Vec::new();
    for wl in workloads {
        for &l in values {
            let mut w = wl.clone();
            set(&mut w, l);
            if values.len() > 1 {
                w.name = format!("{}-{tag}{}", wl.name, latency_label(l));
            }
            out.push(w);
        }
    }
    out
}

/// `1ms`, `500us`, `0ms`: a latency as a name part.
pub fn latency_label(d: Duration) -> String {
    let us = d.as_micros();
    if us.is_multiple_of(1000) {
        format!("{}ms", us / 1000)
    } else {
        format!("{us}us")
    }
}

/// The cells of each `--clients-from` library that locks on `system`: one per client count,
/// beside the recipes'. A library takes the whole lock only, and has no fenced cell unless its
/// driver gives tokens (the manifest says; checked where the driver is loaded).
fn library_cells(
    system: System,
    version: Option<Version>,
    wl: &Workload,
    chaos: &Schedule,
    ov: &Overrides,
    cells: &mut Vec<Cell>,
    skip: &mut impl FnMut(String),
) -> Result<(), PlanError> {
    for lib in ov.libraries.iter().filter(|l| l.systems.contains(&system)) {
        if wl.lock != LockKind::Mutex {
            skip(format!(
                "{system}/{} × lock = \"{}\": a library driver takes the whole lock only",
                lib.name,
                wl.lock.name()
            ));
            continue;
        }
        if wl.resource == crate::resource::ResourceMode::Fenced && !lib.tokens {
            skip(format!(
                "{system}/{} × resource = \"fenced\": the library gives no fencing token, so it \
                 has no fenced cell",
                lib.name
            ));
            continue;
        }
        for &c in ov.clients.as_deref().unwrap_or(&[wl.clients]) {
            let w = with_overrides(wl, c, ov);
            if let Some(why) = faultless(chaos, &w) {
                return Err(PlanError::Conflict(why));
            }
            cells.push(Cell {
                system,
                version,
                // The library waits its own way; the id names the library instead.
                strategy: system.strategies()[0],
                workload: w,
                chaos: chaos.clone(),
                repetition: None,
                library: Some(lib.clone()),
            });
        }
    }
    Ok(())
}

/// `--clients-as` over a workload's `clients_as`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientsOverride {
    /// Every cell's clients as tasks of the runner.
    Tasks,
    /// Every cell's clients as worker processes: `per_process` clients each, or, when `None`,
    /// as many as the workload says (1 if it said tasks).
    Processes { per_process: Option<u32> },
}

impl ClientsOverride {
    /// What `workload`'s clients run as under this override.
    pub fn apply(self, workload: ClientsAs) -> ClientsAs {
        match (self, workload) {
            (ClientsOverride::Tasks, _) => ClientsAs::Tasks,
            (
                ClientsOverride::Processes {
                    per_process: Some(n),
                },
                _,
            ) => ClientsAs::Processes { per_process: n },
            (ClientsOverride::Processes { per_process: None }, ClientsAs::Tasks) => {
                ClientsAs::Processes { per_process: 1 }
            }
            (ClientsOverride::Processes { per_process: None }, own) => own,
        }
    }
}

impl Plan {
    /// Expands systems × workloads × schedules × (strategies) × (clients). `native` applies to
    /// etcd only, a schedule to the systems it names and that can run its `cluster_size`;
    /// elsewhere the combination is skipped with a note.
    pub fn expand<S: PlannedSystem>(
        run_id: &str,
        systems: &[S],
        workloads: &[Workload],
        ov: &Overrides,
    ) -> Result<Plan, PlanError> {
        let schedules = schedules(ov)?;
        let workloads = &at_latencies(
            workloads,
            ov.client_latency.as_deref(),
            ov.peer_latency.as_deref(),
        );
        let mut cells = Vec::new();
        let mut skipped = Vec::new();
        let mut skip = |line: String| {
            // Each reason once, however many workloads or strategies meet it.
            if !skipped.contains(&line) {
                skipped.push(line);
            }
        };
        for planned in systems {
            let (system, version) = (planned.system(), planned.version());
            for wl in workloads {
                for chaos in &schedules {
                    if let Some(why) = chaos.unfit_for(system) {
                        skip(why);
                        continue;
                    }
                    let strategies = ov
                        .strategies
                        .clone()
                        .unwrap_or_else(|| wl.strategies.clone());
                    let clients = ov.clients.clone().unwrap_or_else(|| vec![wl.clients]);
                    for &strategy in &strategies {
                        if !system.strategies().contains(&strategy) {
                            skip(format!(
                                "{system}/{strategy}: {system} offers {}",
                                system.strategies_text()
                            ));
                            continue;
                        }
                        if let Some(why) = lock_unfit(system, strategy, wl.lock) {
                            skip(why);
                            continue;
                        }
                        for &c in &clients {
                            let w = with_overrides(wl, c, ov);
                            if chaos.pauses_clients() && w.clients_as == ClientsAs::Tasks {
                                return Err(PlanError::Conflict(format!(
                                    "schedule {} pauses client processes, but workload {} runs \
                                     its clients as tasks of the runner, which cannot be paused \
                                     one at a time: add --clients-as processes (or clients_as = \
                                     \"processes\" in the workload)",
                                    chaos.name, w.name
                                )));
                            }
                            if let Some(why) = faultless(chaos, &w) {
                                return Err(PlanError::Conflict(why));
                            }
                            cells.push(Cell {
                                system,
                                version,
                                strategy,
                                workload: w,
                                chaos: chaos.clone(),
                                repetition: None,
                                library: None,
                            });
                        }
                    }
                    library_cells(system, version, wl, chaos, ov, &mut cells, &mut skip)?;
                }
            }
        }
        if cells.is_empty() {
            return Err(PlanError::Empty(format!(
                "no cell left after expansion ({}). Choose a strategy the systems offer, and \
                 schedules that apply to them",
                skipped.join("; ")
            )));
        }
        Ok(Plan {
            run_id: run_id.to_string(),
            seed: ov.seed,
            cells,
            skipped,
            floor_samples: DEFAULT_FLOOR_SAMPLES,
        })
    }

    /// The plan with each cluster's floor probe taking `n` samples (0: none).
    pub fn with_floor_samples(mut self, n: usize) -> Plan {
        self.floor_samples = n;
        self
    }

    /// The plan with every cell run `n` times (`--repeat`), in rounds: the first repetition
    /// of every cell, then the second, and so on, so a drift of the machine over the run hits
    /// every cell alike instead of all repetitions of one. Each round starts its clusters
    /// afresh ([`Plan::by_cluster`] groups by round too): a cluster's own luck (which node
    /// leads, a JVM's warm-up) then weighs on one repetition of a cell, not on all of them, so
    /// the median of the repetitions sees past one slow cluster. Within a round the cells of
    /// each cluster turn by one place a round (round 2 starts with a cluster's second cell), so
    /// being first on a fresh cluster, or last on an aged one, falls on every cell in turn.
    /// Repetition `r` runs with the seeds `seed + r - 1`, the workload's and (where it draws)
    /// the schedule's, so the repetitions of a cell are distinct samples: a verdict over them
    /// is a rate over seeds, not one draw run again. `n` of 1 changes nothing.
    pub fn repeated(mut self, n: u32) -> Plan {
        if n <= 1 {
            return self;
        }
        // The cells of each cluster, in plan order (no repetitions yet: one group a cluster).
        let clusters: Vec<Vec<Cell>> = self
            .by_cluster()
            .iter()
            .map(|g| g.cells.iter().map(|c| (*c).clone()).collect())
            .collect();
        self.cells.clear();
        for r in 1..=n {
            for g in &clusters {
                let turn = (r as usize - 1) % g.len();
                self.cells
                    .extend(g[turn..].iter().chain(&g[..turn]).map(|c| c.repetition(r)));
            }
        }
        self
    }

    /// The cells grouped by the cluster they run on (system, size and delay between nodes, and
    /// under `--repeat` the round), in plan order, so each cluster is started once; a
    /// schedule's `cluster_size` gets its own cluster, as does each `peer_latency`, and each
    /// round of repetitions its own clusters.
    pub fn by_cluster(&self) -> Vec<ClusterGroup<'_>> {
        let mut out: Vec<ClusterGroup> = Vec::new();
        for c in &self.cells {
            let size = c.cluster_size();
            let peer_latency = c.workload.peer_latency;
            match out.iter_mut().find(|g| {
                g.system == c.system
                    && g.version == c.version
                    && g.size == size
                    && g.peer_latency == peer_latency
                    && g.cells[0].repetition == c.repetition
            }) {
                Some(g) => g.cells.push(c),
                None => out.push(ClusterGroup {
                    system: c.system,
                    version: c.version,
                    size,
                    peer_latency,
                    cells: vec![c],
                }),
            }
        }
        out
    }

    /// The resolved plan as written to `plan.toml`: each cell's workload in the workload
    /// file's syntax, so [`Plan::from_toml`] reads it back equal.
    pub fn to_toml(&self) -> String {
        let file = PlanFile {
            run_id: self.run_id.clone(),
            seed: self.seed,
            skipped: self.skipped.clone(),
            floor_samples: self.floor_samples,
            cells: self
                .cells
                .iter()
                .map(|c| CellRow {
                    id: c.id().to_string(),
                    system: c.system,
                    version: c.version.map(|v| v.name().to_string()),
                    strategy: c.strategy,
                    chaos: c.chaos.name.clone(),
                    workload: c.workload.to_table(),
                    schedule: (c.chaos != Schedule::none()).then(|| c.chaos.to_table()),
                    repetition: c.repetition,
                    library: c.library.clone(),
                })
                .collect(),
        };
        toml::to_string_pretty(&file)
            .unwrap_or_else(|e| format!("# plan could not be serialised: {e}\n"))
    }

    /// Reads a `plan.toml` back; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Plan, PlanError> {
        let bad = |message: String| PlanError::Unreadable {
            origin: origin.to_string(),
            message,
        };
        let file: PlanFile = toml::from_str(text).map_err(|e| bad(e.message().to_string()))?;
        let cells = file
            .cells
            .into_iter()
            .map(|row| {
                let text = toml::to_string(&row.workload).map_err(|e| bad(e.to_string()))?;
                let workload = Workload::from_str(&text, &format!("{origin} cell {}", row.id))
                    .map_err(|e| bad(e.to_string()))?;
                let chaos = match row.schedule {
                    None => Schedule::none(),
                    Some(t) => {
                        let text = toml::to_string(&t).map_err(|e| bad(e.to_string()))?;
                        Schedule::from_str(&text, &format!("{origin} cell {} schedule", row.id))
                            .map_err(|e| bad(e.to_string()))?
                    }
                };
                if chaos.name != row.chaos {
                    return Err(bad(format!(
                        "cell {}: chaos = \"{}\" but its schedule is named \"{}\"",
                        row.id, row.chaos, chaos.name
                    )));
                }
                let version = match &row.version {
                    None => None,
                    Some(v) => Some(
                        crate::system::Version::find(row.system, v)
                            .map_err(|e| bad(format!("cell {}: {e}", row.id)))?,
                    ),
                };
                Ok(Cell {
                    system: row.system,
                    version,
                    strategy: row.strategy,
                    workload,
                    chaos,
                    repetition: row.repetition,
                    library: row.library,
                })
            })
            .collect::<Result<Vec<_>, PlanError>>()?;
        Ok(Plan {
            run_id: file.run_id,
            seed: file.seed,
            cells,
            skipped: file.skipped,
            floor_samples: file.floor_samples,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_toml_reads_back_equal() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let workloads: Vec<Workload> = ["hot-lock", "open-loop", "stampede", "zipf-keys"]
            .iter()
            .map(|n| Workload::from_file(&dir.join(format!("{n}.toml"))).unwrap())
            .collect();
        let ov = Overrides {
            clients: Some(vec![2, 8]),
            duration: Some(Duration::from_secs(7)),
            seed: Some(99),
            clients_as: Some(ClientsOverride::Processes {
                per_process: Some(3),
            }),
            ..Overrides::default()
        };
        let systems = [System::Etcd, System::Redlock];
        let plan = Plan::expand("r1", &systems, &workloads, &ov).unwrap();
        let text = plan.to_toml();
        assert!(!text.contains("Uniform {"), "no Rust Debug text:\n{text}");
        let back = Plan::from_toml(&text, "plan.toml").unwrap();
        assert_eq!(back.run_id, "r1");
        assert_eq!(back.seed, Some(99));
        assert_eq!(back.skipped, plan.skipped);
        assert_eq!(back.cells.len(), plan.cells.len());
        for (a, b) in plan.cells.iter().zip(&back.cells) {
            assert_eq!((a.system, a.strategy), (b.system, b.strategy));
            assert_eq!(a.workload, b.workload, "{}", a.id());
            assert_eq!(
                b.workload.clients_as,
                ClientsAs::Processes { per_process: 3 }
            );
            assert_eq!(a.id(), b.id());
        }
        let e = Plan::from_toml("cells = 3", "x/plan.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x/plan.toml: not a lockbench plan"), "{e}");
    }

    #[test]
    fn floor_samples_are_kept_in_plan_toml_and_default_when_absent() {
        let plan =
            Plan::expand("r1", &[System::Redis], &[hot_lock()], &Overrides::default()).unwrap();
        assert_eq!(plan.floor_samples, DEFAULT_FLOOR_SAMPLES);
        let none = plan.clone().with_floor_samples(0);
        let back = Plan::from_toml(&none.to_toml(), "plan.toml").unwrap();
        assert_eq!(back.floor_samples, 0);
        // A plan.toml written before the setting existed reads back with the default.
        let old: String = plan
            .to_toml()
            .lines()
            .filter(|l| !l.starts_with("floor_samples"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(!old.contains("floor_samples"));
        let back = Plan::from_toml(&old, "plan.toml").unwrap();
        assert_eq!(back.floor_samples, DEFAULT_FLOOR_SAMPLES);
    }

    #[test]
    fn client_latencies_are_a_coordinate_named_into_the_workload() {
        let ov = Overrides {
            client_latency: Some(vec![Duration::ZERO, Duration::from_micros(1500)]),
            strategies: Some(vec![Strategy::Herd]),
            ..Overrides::default()
        };
        let plan = Plan::expand("r1", &[System::Etcd], &[hot_lock()], &ov).unwrap();
        let cells: Vec<(String, Duration)> = plan
            .cells
            .iter()
            .map(|c| (c.workload.name.clone(), c.workload.client_latency.base))
            .collect();
        assert_eq!(
            cells,
            vec![
                ("hot-lock-lat0ms".to_string(), Duration::ZERO),
                (
                    "hot-lock-lat1500us".to_string(),
                    Duration::from_micros(1500)
                ),
            ]
        );
        // The plan file keeps the latency, so a resumed or re-read plan runs it again.
        let back = Plan::from_toml(&plan.to_toml(), "plan.toml").unwrap();
        assert_eq!(
            back.cells[1].workload.client_latency.base,
            Duration::from_micros(1500)
        );
        // One value: the workload keeps its name.
        let one = Overrides {
            client_latency: Some(vec![Duration::from_millis(2)]),
            ..ov
        };
        let plan = Plan::expand("r1", &[System::Etcd], &[hot_lock()], &one).unwrap();
        assert_eq!(plan.cells[0].workload.name, "hot-lock");
        assert_eq!(
            plan.cells[0].workload.client_latency.base,
            Duration::from_millis(2)
        );
    }

    #[test]
    fn each_peer_latency_runs_on_a_cluster_of_its_own_and_reads_back() {
        let ov = Overrides {
            client_latency: Some(vec![Duration::ZERO, Duration::from_millis(1)]),
            peer_latency: Some(vec![Duration::ZERO, Duration::from_millis(2)]),
            strategies: Some(vec![Strategy::Herd, Strategy::Predecessor]),
            ..Overrides::default()
        };
        let plan = Plan::expand("r1", &[System::Etcd], &[hot_lock()], &ov).unwrap();
        let names: std::collections::BTreeSet<String> =
            plan.cells.iter().map(|c| c.workload.name.clone()).collect();
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            [
                "hot-lock-lat0ms-peer0ms",
                "hot-lock-lat0ms-peer2ms",
                "hot-lock-lat1ms-peer0ms",
                "hot-lock-lat1ms-peer2ms"
            ]
        );
        // Client latency is the cell's own (its relays); peer latency is the cluster's.
        let groups: Vec<(Duration, usize)> = plan
            .by_cluster()
            .iter()
            .map(|g| (g.peer_latency.base, g.cells.len()))
            .collect();
        assert_eq!(groups, [(Duration::ZERO, 4), (Duration::from_millis(2), 4)]);
        for g in plan.by_cluster() {
            assert!(
                g.cells
                    .iter()
                    .all(|c| c.workload.peer_latency == g.peer_latency)
            );
        }
        let back = Plan::from_toml(&plan.to_toml(), "plan.toml").unwrap();
        let peers: Vec<Duration> = back
            .cells
            .iter()
            .map(|c| c.workload.peer_latency.base)
            .collect();
        let want: Vec<Duration> = plan
            .cells
            .iter()
            .map(|c| c.workload.peer_latency.base)
            .collect();
        assert_eq!(peers, want);
    }

    #[test]
    fn repetitions_run_in_rounds_each_on_fresh_clusters_and_read_back() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let hot = Workload::from_file(&dir.join("hot-lock.toml")).unwrap();
        let ov = Overrides {
            clients: Some(vec![2, 4]),
            strategies: Some(vec![Strategy::Herd]),
            ..Overrides::default()
        };
        let plan = Plan::expand("r", &[System::Etcd, System::Redis], &[hot], &ov)
            .unwrap()
            .repeated(3);
        let groups: Vec<Vec<String>> = plan
            .by_cluster()
            .iter()
            .map(|g| g.cells.iter().map(|c| c.id().to_string()).collect())
            .collect();
        assert_eq!(groups.len(), 6, "two systems × three rounds: {groups:?}");
        assert_eq!(
            groups[0],
            ["etcd-herd-hot-lock-c2-r1", "etcd-herd-hot-lock-c4-r1"]
        );
        assert_eq!(
            groups[1],
            ["redis-herd-hot-lock-c2-r1", "redis-herd-hot-lock-c4-r1"]
        );
        // Round 2 turns each cluster's cells by one place, round 3 by two (back here).
        assert_eq!(
            groups[2],
            ["etcd-herd-hot-lock-c4-r2", "etcd-herd-hot-lock-c2-r2"]
        );
        assert_eq!(
            groups[5],
            ["redis-herd-hot-lock-c2-r3", "redis-herd-hot-lock-c4-r3"]
        );
        let first = plan.cells[0].id();
        assert_eq!(first.base().to_string(), "etcd-herd-hot-lock-c2");
        assert_eq!(first.base(), plan.cells[5].id().base());
        let back = Plan::from_toml(&plan.to_toml(), "plan.toml").unwrap();
        let ids = |p: &Plan| p.cells.iter().map(|c| c.id()).collect::<Vec<_>>();
        assert_eq!(ids(&back), ids(&plan));
        // One repetition is the plain plan: no suffix.
        let once = Plan::expand("r", &[System::Etcd], &[back.cells[0].workload.clone()], &ov)
            .unwrap()
            .repeated(1);
        assert_eq!(once.cells[0].id().to_string(), "etcd-herd-hot-lock-c2");
    }

    /// The four systems these tests were written against (a fifth registered system must not
    /// change what they count).
    const SHIPPED: [System; 4] = [
        System::Zookeeper,
        System::Etcd,
        System::Redis,
        System::Redlock,
    ];

    #[test]
    fn unsafe_strategies_run_only_on_redis_and_only_when_named() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let hot = Workload::from_file(&dir.join("hot-lock.toml")).unwrap();
        let all = SHIPPED;
        let plan =
            Plan::expand("r", &all, std::slice::from_ref(&hot), &Overrides::default()).unwrap();
        // The default comparison: four systems × herd and predecessor, nothing unsafe.
        assert_eq!(plan.cells.len(), 8);
        assert!(plan.cells.iter().all(|c| !c.strategy.is_unsafe()));

        let named = Overrides {
            strategies: Some(vec![Strategy::UnsafeDel]),
            ..Overrides::default()
        };
        let plan = Plan::expand("r", &all, std::slice::from_ref(&hot), &named).unwrap();
        let cells: Vec<String> = plan.cells.iter().map(|c| c.id().to_string()).collect();
        assert_eq!(cells, ["redis-unsafe-del-hot-lock-c16"]);
        assert_eq!(plan.skipped.len(), 3);
        assert!(
            plan.skipped[0].starts_with("zookeeper/unsafe-del: zookeeper offers herd, predecessor"),
            "{:?}",
            plan.skipped
        );
        let e = Plan::expand("r", &[System::Etcd], &[hot], &named)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("etcd/unsafe-del: etcd offers herd, predecessor, native"),
            "{e}"
        );
        let del = Workload::from_file(&dir.join("broken-del.toml")).unwrap();
        let plan = Plan::expand("r", &[System::Redis], &[del], &Overrides::default()).unwrap();
        let back = Plan::from_toml(&plan.to_toml(), "plan.toml").unwrap();
        let strategies: Vec<Strategy> = back.cells.iter().map(|c| c.strategy).collect();
        assert_eq!(strategies, [Strategy::Herd, Strategy::UnsafeDel]);
    }

    #[test]
    fn clients_as_override_keeps_a_workloads_own_process_size_unless_given() {
        let per = |n| ClientsAs::Processes { per_process: n };
        let keep = ClientsOverride::Processes { per_process: None };
        assert_eq!(keep.apply(ClientsAs::Tasks), per(1));
        assert_eq!(keep.apply(per(4)), per(4));
        let two = ClientsOverride::Processes {
            per_process: Some(2),
        };
        assert_eq!(two.apply(per(4)), per(2));
        assert_eq!(ClientsOverride::Tasks.apply(per(4)), ClientsAs::Tasks);
    }

    #[test]
    fn cell_ids_name_folders_and_chaos_only_when_there_is_one() {
        let mut id = CellId {
            version: None,
            system: System::Redis,
            strategy: Strategy::Herd,
            workload: "hot-lock".into(),
            chaos: NO_CHAOS.into(),
            clients: 16,
            repetition: None,
            library: None,
        };
        assert_eq!(id.to_string(), "redis-herd-hot-lock-c16");
        id.chaos = "kill-leader".into();
        assert_eq!(id.to_string(), "redis-herd-hot-lock-kill-leader-c16");
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<CellId>(&json).unwrap(), id);
    }

    fn schedule(name: &str) -> Schedule {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("chaos");
        Schedule::from_file(&dir.join(format!("{name}.toml"))).unwrap()
    }

    fn hot_lock() -> Workload {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        Workload::from_file(&dir.join("hot-lock.toml")).unwrap()
    }

    /// Repetitions run on seeds of their own: the workload's and a drawing schedule's seed move
    /// on by one a repetition, a calm schedule keeps its own; plan.toml keeps them.
    fn repetitions_have_seeds_of_their_own(plan: &Plan) {
        let repeated = plan.clone().repeated(3);
        for id in [
            "etcd-herd-hot-lock-kill-leader-c16",
            "etcd-herd-hot-lock-c16",
        ] {
            let reps: Vec<&Cell> = repeated
                .cells
                .iter()
                .filter(|c| c.id().base().to_string() == id)
                .collect();
            assert_eq!(reps.len(), 3, "{id}");
            for c in reps {
                let step = u64::from(c.repetition.unwrap() - 1);
                assert_eq!(c.workload.seed, 42 + step, "{}", c.id());
                let chaos = if c.chaos.is_calm() { 1 } else { 42 + step };
                assert_eq!(c.chaos.seed, chaos, "{}", c.id());
            }
        }
        let back = Plan::from_toml(&repeated.to_toml(), "plan.toml").unwrap();
        let seeds = |p: &Plan| {
            p.cells
                .iter()
                .map(|c| (c.workload.seed, c.chaos.seed))
                .collect::<Vec<_>>()
        };
        assert_eq!(seeds(&back), seeds(&repeated));
    }

    #[test]
    fn chaos_is_a_coordinate_with_its_systems_sizes_and_expectations() {
        use crate::workload::Expect::{Safe, Unsafe};
        let ov = Overrides {
            schedules: [
                "none",
                "kill-leader",
                "partition-even",
                "redlock-restart-empty",
            ]
            .map(schedule)
            .to_vec(),
            seed: Some(42),
            ..Overrides::default()
        };
        let all = SHIPPED;
        let plan = Plan::expand("r", &all, &[hot_lock()], &ov).unwrap();
        // none 4 × 2 + kill-leader 4 × 2 + partition-even (zookeeper, etcd) 2 × 2 +
        // redlock-restart-empty (redlock) 1 × 2.
        assert_eq!(plan.cells.len(), 22);
        // Each line says which systems the schedule applies to, then why (its file's
        // `skipped_because`).
        let who: Vec<&str> = plan
            .skipped
            .iter()
            .map(|l| l.split(" only: ").next().unwrap())
            .collect();
        assert_eq!(
            who,
            [
                "zookeeper × redlock-restart-empty: the schedule applies to redlock",
                "etcd × redlock-restart-empty: the schedule applies to redlock",
                "redis × partition-even: the schedule applies to zookeeper, etcd",
                "redis × redlock-restart-empty: the schedule applies to redlock",
                "redlock × partition-even: the schedule applies to zookeeper, etcd",
            ]
        );
        assert!(
            plan.skipped[2].ends_with(
                "Redis data nodes do not vote, and PostgreSQL, MariaDB \
                 and Memcached servers do not agree on locks"
            ),
            "{:?}",
            plan.skipped
        );
        let ids: Vec<String> = plan.cells.iter().map(|c| c.id().to_string()).collect();
        // Calm cells keep the folder names they always had.
        assert_eq!(ids[0], "zookeeper-herd-hot-lock-c16");
        assert_eq!(ids[2], "zookeeper-herd-hot-lock-kill-leader-c16");
        assert!(ids.contains(&"etcd-predecessor-hot-lock-partition-even-c16".to_string()));
        assert!(ids.contains(&"redlock-herd-hot-lock-redlock-restart-empty-c16".to_string()));
        let cell = |id: &str| {
            plan.cells
                .iter()
                .find(|c| c.id().to_string() == id)
                .unwrap()
        };
        // The schedule's expect raises the workload's (hot-lock expects safe everywhere).
        assert_eq!(cell("redis-herd-hot-lock-c16").expect(), Safe);
        assert_eq!(cell("redis-herd-hot-lock-kill-leader-c16").expect(), Safe);
        assert_eq!(cell("etcd-herd-hot-lock-kill-leader-c16").expect(), Safe);
        assert_eq!(
            cell("redlock-herd-hot-lock-redlock-restart-empty-c16").expect(),
            Unsafe
        );
        // --seed reaches the schedules that draw.
        assert!(
            plan.cells
                .iter()
                .all(|c| c.chaos.seed == if c.chaos.is_calm() { 1 } else { 42 })
        );
        // One cluster per system and size, in plan order: the even split gets 4-node ones.
        let groups: Vec<(System, usize, usize)> = plan
            .by_cluster()
            .iter()
            .map(|g| (g.system, g.size, g.cells.len()))
            .collect();
        assert_eq!(
            groups,
            [
                (System::Zookeeper, 3, 4),
                (System::Zookeeper, 4, 2),
                (System::Etcd, 3, 4),
                (System::Etcd, 4, 2),
                (System::Redis, 3, 4),
                (System::Redlock, 5, 6),
            ]
        );

        repetitions_have_seeds_of_their_own(&plan);

        let text = plan.to_toml();
        let back = Plan::from_toml(&text, "plan.toml").unwrap();
        assert_eq!(back.cells.len(), 22);
        for (a, b) in plan.cells.iter().zip(&back.cells) {
            assert_eq!(a.id(), b.id());
            assert_eq!(a.chaos, b.chaos, "{}", a.id());
        }
        // Calm cells store no schedule; each chaos cell stores its own.
        assert_eq!(text.matches("[cells.schedule]").count(), 14, "{text}");
        let e = Plan::from_toml(
            &text.replacen("chaos = \"kill-leader\"", "chaos = \"bridge\"", 1),
            "p.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("chaos = \"bridge\" but its schedule is named \"kill-leader\""),
            "{e}"
        );
    }

    #[test]
    fn a_schedules_expect_merges_with_the_workloads_unsafe_winning() {
        use crate::workload::Expect::{Safe, Unsafe};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let no_renew = Workload::from_file(&dir.join("long-hold-no-renew.toml")).unwrap();
        let ov = Overrides {
            schedules: vec![schedule("kill-leader")],
            ..Overrides::default()
        };
        let all = SHIPPED;
        let plan = Plan::expand("r", &all, &[no_renew], &ov).unwrap();
        let expect = |id: &str| {
            plan.cells
                .iter()
                .find(|c| c.id().to_string() == id)
                .unwrap_or_else(|| panic!("no cell {id}"))
                .expect()
        };
        // kill-leader says `default = "safe"`; the workload's unsafe on etcd stays unsafe.
        assert_eq!(
            expect("etcd-herd-long-hold-no-renew-kill-leader-c4"),
            Unsafe
        );
        assert_eq!(
            expect("etcd-predecessor-long-hold-no-renew-kill-leader-c4"),
            Unsafe
        );
        // Both say safe: safe.
        assert_eq!(
            expect("zookeeper-herd-long-hold-no-renew-kill-leader-c4"),
            Safe
        );
        // The workload's unsafe on Redis stays unsafe under a schedule that says safe.
        assert_eq!(
            expect("redis-herd-long-hold-no-renew-kill-leader-c4"),
            Unsafe
        );
    }

    #[test]
    fn schedules_that_cannot_go_together_are_refused_with_the_fix() {
        let with = |names: &[&str], clients_as| Overrides {
            schedules: names.iter().map(|n| schedule(n)).collect(),
            clients_as,
            ..Overrides::default()
        };
        let run = |ov: &Overrides| Plan::expand("r", &[System::Etcd], &[hot_lock()], ov);
        let e = run(&with(&["bridge", "bridge"], None))
            .unwrap_err()
            .to_string();
        assert!(e.contains("two chaos schedules are named bridge"), "{e}");
        let e = run(&with(&["pause-clients"], None))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("schedule pause-clients pauses client processes, but workload hot-lock")
                && e.contains("--clients-as processes"),
            "{e}"
        );
        let processes = Some(ClientsOverride::Processes { per_process: None });
        let plan = run(&with(&["pause-clients"], processes)).unwrap();
        assert_eq!(plan.cells.len(), 2);
        let e = run(&with(&["redlock-restart-delayed"], None))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("nothing to run: no cell left after expansion (etcd × redlock-restart-delayed: the schedule applies to redlock only: a majority of Redlock's five independent masters restarted empty"),
            "{e}"
        );
    }

    #[test]
    fn a_lock_kind_a_system_lacks_is_skipped_with_the_reason() {
        let base = "clients = 4\nduration = \"5s\"\n";
        let everything = [Strategy::Herd, Strategy::Predecessor, Strategy::Native];
        let ov = Overrides {
            strategies: Some(everything.to_vec()),
            ..Overrides::default()
        };
        for (extra, redlock) in [
            ("lock = \"rwlock\"\nread_ratio = 0.9", true),
            ("lock = \"semaphore\"\npermits = 3", false),
        ] {
            let wl = Workload::from_str(&format!("{base}{extra}"), "workloads/kinds.toml").unwrap();
            let plan = Plan::expand("r", &SHIPPED, std::slice::from_ref(&wl), &ov).unwrap();
            let ran: Vec<String> = plan
                .cells
                .iter()
                .map(|c| format!("{}/{}", c.system, c.strategy))
                .collect();
            // The kinds that share the lock need a queue: etcd's server-side Lock is a mutex.
            // Redlock has the read-write lock, not the semaphore (unsafe over a majority).
            let mut expected = vec![
                "zookeeper/herd",
                "zookeeper/predecessor",
                "etcd/herd",
                "etcd/predecessor",
                "redis/herd",
                "redis/predecessor",
            ];
            if redlock {
                expected.extend(["redlock/herd", "redlock/predecessor"]);
            }
            assert_eq!(ran, expected);
            let kind = wl.lock.name();
            assert!(plan.skipped.iter().any(|s| s
                == &format!(
                    "etcd/native × lock = \"{kind}\": the native strategy is for mutex and reentrant only"
                )));
            if redlock {
                continue;
            }
            let why = plan
                .skipped
                .iter()
                .find(|s| s.starts_with("redlock × lock"))
                .unwrap();
            assert!(
                why.contains(&format!("no redlock recipe takes a {kind}"))
                    && why.contains("docs/book/src/workloads.md#lock-kinds"),
                "{why}"
            );
            let e = Plan::expand("r", &[System::Redlock], &[wl], &ov).unwrap_err();
            assert!(e.to_string().contains("no redlock recipe takes a"), "{e}");
        }
        // A mutex, said or not, expands as before; a reentrant lock runs on every system.
        let wl = Workload::from_str(&format!("{base}lock = \"mutex\""), "x").unwrap();
        let plan = Plan::expand("r", &[System::Etcd], &[wl], &Overrides::default()).unwrap();
        assert_eq!(plan.cells.len(), 2);
        let wl = Workload::from_str(&format!("{base}lock = \"reentrant\""), "x").unwrap();
        let plan = Plan::expand("r", &SHIPPED, &[wl], &Overrides::default()).unwrap();
        assert_eq!(plan.cells.len(), 8);
    }

    #[test]
    fn a_schedule_that_fits_no_fault_in_the_cell_is_refused_with_the_length_it_needs() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let hot = Workload::from_file(&root.join("workloads/hot-lock.toml")).unwrap();
        let split = Schedule::from_file(&root.join("chaos/isolate-leader.toml")).unwrap();
        let ov = |secs: u64| Overrides {
            duration: Some(Duration::from_secs(secs)),
            schedules: vec![split.clone()],
            ..Overrides::default()
        };
        // Every 14 s plus up to 1 s of jitter, for 11 s: no occurrence is over inside 20 s.
        let e = Plan::expand("r", &[System::Etcd], std::slice::from_ref(&hot), &ov(20))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("chaos schedule isolate-leader starts no fault inside the 20s cells")
                && e.contains("--duration 26s or more"),
            "{e}"
        );
        // 26 s holds one whatever the jitter.
        let plan = Plan::expand("r", &[System::Etcd], std::slice::from_ref(&hot), &ov(26));
        let plan = plan.unwrap();
        assert_eq!(
            plan.cells[0].chaos.timeline(Duration::from_secs(26)).len(),
            1
        );
        assert_eq!(split.shortest_cell(), Some(Duration::from_secs(26)));
    }
}
