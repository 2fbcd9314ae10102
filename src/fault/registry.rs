//! The machinery behind the one list of fault kinds: the two traits a kind implements ([`Kind`]
//! for its parameters, [`Effect`] for what it does once resolved), and the [`registry!`] macro
//! that turns the list into [`super::FaultKind`] and [`super::Fault`] (one variant per kind)
//! with their dispatch, and [`super::KINDS`] (what the schedule reader looks kinds up in).
//! Nothing here names a kind.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use toml::{Table, Value};

use super::clock::{Realism, Ticker, TickerTotals};
use super::params::{Param, Params};
use super::pause_client::WorkerProcesses;
use super::target::{Target, resolve};
use super::{Ended, Fault, FaultError, FaultKind, Faultable, KINDS, Started};
use crate::cluster::ClusterError;
use crate::spec_error::SpecError;
use crate::system::System;

/// One fault kind's parameters: the `[[faults]]` table read into a value, and everything the
/// kind knows before the cluster is in front of it.
pub trait Kind: Clone + fmt::Debug + PartialEq + Into<FaultKind> {
    /// Its one name: chaos files' `kind`, the history's `fault` events, `summary.json`'s
    /// `faults[].kind`, the reports.
    const NAME: &'static str;
    /// The fields of its table besides `kind` and the timing, in the order errors list them.
    const PARAMETERS: &'static [Param];
    /// The field that says how long it lasts: `duration`, unless [`Kind::window`] reads another.
    const WINDOW: &'static str = "duration";
    /// Whether it is the real thing or a model of its effect: what every report says of it.
    const REALISM: Realism = Realism::Real;
    /// A kind that draws other kinds (`mixed`): it cannot be drawn itself.
    const COMPOSITE: bool = false;

    /// Reads and validates its parameters; an error names the field and what would be valid.
    fn read(p: &Params<'_>) -> Result<Self, SpecError>;

    /// How long from its start to its undo, from a top-level `[[faults]]` table (never read in a
    /// mixed fault's kinds). By default `duration`, required, at least 1 ms.
    fn window(p: &Params<'_>) -> Result<Duration, SpecError> {
        p.duration_field(Self::NAME)
    }

    /// Writes its parameters (not `kind`, not the timing) into a table of the file's syntax,
    /// so that [`Kind::read`] reads it back equal.
    fn write(&self, t: &mut Table);

    /// The kind one occurrence runs: itself, unless it draws (`mixed`).
    fn draw(&self, rng: &mut StdRng) -> FaultKind {
        let _ = rng;
        self.clone().into()
    }

    /// Whether it pauses client processes (which needs clients as worker processes).
    fn pauses_clients(&self) -> bool {
        false
    }

    /// Whether it slows the links between clients and servers (which needs the cell's clients
    /// behind lockbench's relays).
    fn slows_clients(&self) -> bool {
        false
    }

    /// Whether it waits, when due, until some client holds a lock (a `holder` client pause).
    fn waits_for_holder(&self) -> bool {
        false
    }

    /// The systems it cannot run on, and why; a schedule that may put it there is refused.
    fn refusal(&self) -> Option<Refusal> {
        None
    }

    /// The [`Faultable`] primitives it acts through (`kill`, `pause`, `isolate`, ...), by the
    /// names a target file's `[commands]` give them: a schedule runs on a target only when the
    /// target's commands cover every one. Lockbench's own client pauses need none.
    fn primitives(&self) -> Vec<&'static str>;

    /// Resolves its targets against the cluster as it is now, drawing with `rng` (seeded by the
    /// occurrence, so a seed picks the same nodes again): the fault to start and the targets
    /// its events name. `Err` says why nothing could be started.
    fn resolve<C: Faultable>(
        &self,
        scene: &Scene<'_, C>,
        rng: &mut StdRng,
    ) -> impl Future<Output = Result<(Fault, Vec<String>), String>>;
}

/// A resolved fault of one kind, as a verb pair: what starting it does, so that undoing it
/// undoes exactly that.
pub trait Effect: Clone + fmt::Debug + PartialEq + Eq + Into<Fault> {
    /// The kind it is resolved from (its name, its realism).
    type Kind: Kind;

    /// Every server it touches (none for a client pause).
    fn nodes(&self) -> Vec<String>;

    /// The worker processes it touches (client pauses only).
    fn workers(&self) -> &[usize] {
        &[]
    }

    /// Whether it is the real thing or a model.
    fn realism(&self) -> Realism {
        <Self::Kind as Kind>::REALISM
    }

    /// Starts it on `on`. Returns once it is in effect, or with the error that stopped it
    /// half-way (the books undo what happened). A background task it needs until its undo (a
    /// fast clock's ticker) is returned even when a later step failed, so the undo stops it.
    fn start<C: Faultable>(
        &self,
        on: &C,
        ctx: &Ctx<'_>,
    ) -> impl Future<Output = (Result<Started, FaultError>, Option<Ticker>)>;

    /// Undoes it on `on`; repeatable (a failed undo is retried by the final heal). Returns once
    /// the undo is in effect, with what it found (a restarted node that does not serve again is
    /// reported, not an error).
    fn undo<C: Faultable>(
        &self,
        on: &C,
        ctx: &Ctx<'_>,
    ) -> impl Future<Output = Result<Ended, FaultError>>;
}

/// The start of a fault that acts on each node in turn (a kill, a pause): it stops at the first
/// failure (the books undo what did happen), needs no words and runs nothing in the background.
pub async fn on_each_node<'a, F, Fut>(
    nodes: &'a [String],
    mut act: F,
) -> (Result<Started, FaultError>, Option<Ticker>)
where
    F: FnMut(&'a str) -> Fut,
    Fut: Future<Output = Result<(), ClusterError>>,
{
    for n in nodes {
        if let Err(e) = act(n).await {
            return (Err(e.into()), None);
        }
    }
    (Ok(Started::default()), None)
}

/// What a fault's start and undo may use besides the cluster: the cell's worker processes and
/// client links,
/// the fast clocks' running totals, and how long a restarted node may take to serve again.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The cell's worker processes, when its clients run as workers.
    pub workers: Option<&'a dyn WorkerProcesses>,
    /// The links between the cell's clients and servers, when its clients run behind relays.
    pub links: Option<&'a dyn super::ClientLinks>,
    /// What the fast clocks did after their first jumps, summed over the cell.
    pub ticks: &'a Arc<Mutex<TickerTotals>>,
    /// How long a restarted node may take to serve its cluster again.
    pub rejoin_timeout: Duration,
}

/// What a kind resolves its targets against when it is due: the cluster, the clients holding
/// a lock now, the cell's workers and key prefix.
pub struct Scene<'a, C> {
    /// The cluster.
    pub on: &'a C,
    /// Its servers, in their stable order.
    pub servers: Vec<String>,
    /// The clients holding a lock now, as the history shows.
    pub holders: &'a [u32],
    /// The cell's worker processes, when its clients run as workers.
    pub workers: Option<&'a dyn WorkerProcesses>,
    /// The cell's key prefix (a clock fault cuts only keys under it).
    pub prefix: &'a str,
}

impl<C: Faultable> Scene<'_, C> {
    /// The current leader (for Redlock a master), asked of the cluster now.
    pub async fn leader(&self) -> Result<Option<String>, String> {
        self.on
            .leader()
            .await
            .map_err(|e| format!("finding the leader: {e}"))
    }

    /// The servers `target` names now (the leader is asked for only when it is the target).
    pub async fn nodes(&self, target: Target, rng: &mut StdRng) -> Result<Vec<String>, String> {
        let leader = if target == Target::Leader {
            self.leader().await?
        } else {
            None
        };
        resolve(target, &self.servers, leader.as_deref(), rng).map_err(|e| e.to_string())
    }
}

/// Systems a kind cannot run on, and why (the rest of the schedule error's sentence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The kind refused (a mixed fault passes on the refusal of a kind it draws).
    pub kind: &'static str,
    /// The systems it cannot run on.
    pub systems: Vec<System>,
    /// Why, and the fix, as the error says it after "cannot run on ...: ".
    pub why: &'static str,
}

/// One registered kind, as the schedule reader looks it up by name.
#[derive(Clone, Copy)]
pub struct Entry {
    /// [`Kind::NAME`].
    pub name: &'static str,
    /// [`Kind::PARAMETERS`].
    pub parameters: &'static [Param],
    /// [`Kind::WINDOW`].
    pub window_field: &'static str,
    /// [`Kind::COMPOSITE`].
    pub composite: bool,
    /// [`Kind::REALISM`]: what a report says of a window of this kind, which it knows by name.
    pub realism: Realism,
    /// [`Kind::read`], into a [`FaultKind`].
    pub read: fn(&Params<'_>) -> Result<FaultKind, SpecError>,
    /// [`Kind::window`].
    pub window: fn(&Params<'_>) -> Result<Duration, SpecError>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl Entry {
    /// The entry of kind `K`.
    pub const fn of<K: Kind>() -> Entry {
        Entry {
            name: K::NAME,
            parameters: K::PARAMETERS,
            window_field: K::WINDOW,
            composite: K::COMPOSITE,
            realism: K::REALISM,
            read: read_as::<K>,
            window: K::window,
        }
    }

    /// The names of the parameters it takes, as errors list them.
    pub fn parameter_names(&self) -> Vec<&'static str> {
        self.parameters.iter().map(|p| p.name).collect()
    }
}

fn read_as<K: Kind>(p: &Params<'_>) -> Result<FaultKind, SpecError> {
    K::read(p).map(Into::into)
}

/// The registered kind named `name`.
pub fn entry(name: &str) -> Option<&'static Entry> {
    KINDS.iter().find(|e| e.name == name)
}

/// The kinds a composite kind may draw, in registry order.
pub fn plain_kinds() -> Vec<&'static str> {
    KINDS
        .iter()
        .filter(|e| !e.composite)
        .map(|e| e.name)
        .collect()
}

/// Reads a fault's kind with its parameters (the kind's name is `p.kind()`).
pub fn read(p: &Params<'_>) -> Result<FaultKind, SpecError> {
    match entry(p.kind()) {
        Some(e) => (e.read)(p),
        None => Err(p.invalid("kind", format!("\"{}\"", p.kind()), &p.valid_kinds())),
    }
}

/// Writes `kind` with its parameters into `t` (a `[[faults]]` table or a mixed entry).
pub fn write(t: &mut Table, kind: &FaultKind) {
    t.insert("kind".into(), Value::String(kind.name().to_string()));
    kind.write(t);
}

/// The one list of fault kinds: `module::Kind => Effect`, one line per kind, in the order error
/// messages list them. Declares each kind's module, and builds [`super::FaultKind`] and
/// [`super::Fault`] (one variant per kind, named after the kind's type) with their dispatch, and
/// [`super::KINDS`].
macro_rules! registry {
    ($($module:ident :: $kind:ident => $effect:ident),+ $(,)?) => {
        $(pub mod $module;)+
        $(pub use self::$module::{$kind, $effect};)+

        /// What a fault does, with its kind's parameters: one variant per registered kind.
        #[derive(Debug, Clone, PartialEq)]
        pub enum FaultKind {
            $(
                #[doc = concat!("See [`", stringify!($module), "`].")]
                $kind($kind),
            )+
        }

        /// A fault resolved against the cluster, as a verb pair: what starting it did, so that
        /// undoing it undoes exactly that. One variant per registered kind.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Fault {
            $(
                #[doc = concat!("See [`", stringify!($module), "`].")]
                $kind($effect),
            )+
        }

        $(
            impl From<$kind> for FaultKind {
                fn from(k: $kind) -> FaultKind {
                    FaultKind::$kind(k)
                }
            }
            impl From<$effect> for Fault {
                fn from(f: $effect) -> Fault {
                    Fault::$kind(f)
                }
            }
        )+

        /// Every registered kind, in the order error messages list them.
        pub const KINDS: &[$crate::fault::Entry] = &[$($crate::fault::Entry::of::<$kind>()),+];

        impl FaultKind {
            /// The kind's one name ([`Kind::NAME`]).
            pub fn name(&self) -> &'static str {
                match self { $(FaultKind::$kind(_) => <$kind as $crate::fault::Kind>::NAME),+ }
            }

            /// Whether the kind is real or modelled ([`Kind::REALISM`]).
            pub fn realism(&self) -> $crate::fault::Realism {
                match self { $(FaultKind::$kind(_) => <$kind as $crate::fault::Kind>::REALISM),+ }
            }

            /// The field its window is read from and written to ([`Kind::WINDOW`]).
            pub fn window_field(&self) -> &'static str {
                match self { $(FaultKind::$kind(_) => <$kind as $crate::fault::Kind>::WINDOW),+ }
            }

            /// Its parameters into `t` ([`Kind::write`]).
            pub fn write(&self, t: &mut toml::Table) {
                match self { $(FaultKind::$kind(k) => $crate::fault::Kind::write(k, t)),+ }
            }

            /// The kind one occurrence runs ([`Kind::draw`]).
            pub fn draw(&self, rng: &mut rand::rngs::StdRng) -> FaultKind {
                match self { $(FaultKind::$kind(k) => $crate::fault::Kind::draw(k, rng)),+ }
            }

            /// Whether this kind, or one it draws, pauses client processes.
            pub fn pauses_clients(&self) -> bool {
                match self { $(FaultKind::$kind(k) => $crate::fault::Kind::pauses_clients(k)),+ }
            }

            /// Whether this kind, or one it draws, slows the client links.
            pub fn slows_clients(&self) -> bool {
                match self { $(FaultKind::$kind(k) => $crate::fault::Kind::slows_clients(k)),+ }
            }

            /// Whether it waits for a lock holder when due ([`Kind::waits_for_holder`]).
            pub fn waits_for_holder(&self) -> bool {
                match self { $(FaultKind::$kind(k) => $crate::fault::Kind::waits_for_holder(k)),+ }
            }

            /// The primitives it acts through ([`Kind::primitives`]).
            pub fn primitives(&self) -> Vec<&'static str> {
                match self { $(FaultKind::$kind(k) => $crate::fault::Kind::primitives(k)),+ }
            }

            /// The systems it cannot run on ([`Kind::refusal`]).
            pub fn refusal(&self) -> Option<$crate::fault::Refusal> {
                match self { $(FaultKind::$kind(k) => $crate::fault::Kind::refusal(k)),+ }
            }

            /// Resolves it against the cluster now ([`Kind::resolve`]).
            pub async fn resolve<C: $crate::fault::Faultable>(
                &self,
                scene: &$crate::fault::Scene<'_, C>,
                rng: &mut rand::rngs::StdRng,
            ) -> Result<(Fault, Vec<String>), String> {
                match self { $(FaultKind::$kind(k) => $crate::fault::Kind::resolve(k, scene, rng).await),+ }
            }
        }

        impl Fault {
            /// The fault's kind under its one name.
            pub fn kind(&self) -> &'static str {
                match self { $(Fault::$kind(_) => <$kind as $crate::fault::Kind>::NAME),+ }
            }

            /// Whether the fault is the real thing or a model of its effect.
            pub fn realism(&self) -> $crate::fault::Realism {
                match self { $(Fault::$kind(f) => $crate::fault::Effect::realism(f)),+ }
            }

            /// Every server the fault touches (none for a client pause).
            pub fn nodes(&self) -> Vec<String> {
                match self { $(Fault::$kind(f) => $crate::fault::Effect::nodes(f)),+ }
            }

            /// The worker processes the fault touches (client pauses only).
            pub fn workers(&self) -> &[usize] {
                match self { $(Fault::$kind(f) => $crate::fault::Effect::workers(f)),+ }
            }

            /// Starts it ([`Effect::start`]).
            pub async fn start<C: $crate::fault::Faultable>(
                &self,
                on: &C,
                ctx: &$crate::fault::Ctx<'_>,
            ) -> (Result<Started, FaultError>, Option<$crate::fault::clock::Ticker>) {
                match self { $(Fault::$kind(f) => $crate::fault::Effect::start(f, on, ctx).await),+ }
            }

            /// Undoes it ([`Effect::undo`]).
            pub async fn undo<C: $crate::fault::Faultable>(
                &self,
                on: &C,
                ctx: &$crate::fault::Ctx<'_>,
            ) -> Result<Ended, FaultError> {
                match self { $(Fault::$kind(f) => $crate::fault::Effect::undo(f, on, ctx).await),+ }
            }
        }
    };
}
