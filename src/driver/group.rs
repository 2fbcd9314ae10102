//! One cell's driver processes: as many as its clients need at the manifest's
//! `clients_per_process`, each greeted with `hello` and its pipe measured with pings; the
//! clients they serve; the pauses of `pause-clients` (SIGSTOP to the whole process group); and
//! what the cell's folder records of them (`driver.json`).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::client::{Deadlines, DriverClient};
use super::manifest::Manifest;
use super::process::{DriverProcess, NoAnswer};
use super::protocol::{Hello, PROTOCOL};
use crate::cluster::ConnectInfo;
use crate::fault::WorkerProcesses;
pub use crate::results::DriverRecord;
use crate::system::System;

/// How long a driver may take to start and answer `hello` (a JVM, a virtual environment's
/// imports; on its first start, making its environment: `pip install`, a compile). A driver
/// that hangs is still ended: its cell fails, naming it.
pub const HELLO_TIMEOUT: Duration = super::check::FIRST_START;
/// Pings sent after `hello` to measure each process's pipe before the cell.
const PINGS: u32 = 20;

/// What a cell's drivers need to start.
#[derive(Debug, Clone)]
pub struct GroupSpec<'a> {
    pub manifest: &'a Manifest,
    pub system: System,
    /// Where the clients connect (relays included).
    pub cluster: ConnectInfo,
    pub clients: u32,
    /// Clients a process serves when the cell says (`--clients-per-process`, a workload's
    /// `clients_as = "processes"`): a client pause then stops that many; else the manifest's.
    pub per_process: Option<u32>,
    pub lease_ttl: Duration,
    pub prefix: String,
    pub deadlines: Deadlines,
    /// The cell's folder: each process's stderr goes to `driver-<n>.stderr` there.
    pub dir: &'a Path,
}

/// The driver processes of one cell.
#[derive(Debug)]
pub struct DriverGroup {
    library: String,
    processes: Vec<Arc<DriverProcess>>,
    clients: Vec<Vec<u32>>,
    paused: Vec<AtomicBool>,
    version: Option<String>,
}

impl std::fmt::Debug for DriverProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverProcess")
            .field("pgid", &self.pgid())
            .finish()
    }
}

impl DriverGroup {
    /// Starts and greets the processes, and returns them with one client per cell client (in
    /// the cell's client order).
    pub async fn start(spec: GroupSpec<'_>) -> Result<(DriverGroup, Vec<DriverClient>), NoAnswer> {
        let m = spec.manifest;
        let per = spec.per_process.unwrap_or(m.clients_per_process).max(1);
        let n = spec.clients.div_ceil(per);
        let mut processes = Vec::new();
        let mut clients = Vec::new();
        let mut served = Vec::new();
        let mut version = None;
        for i in 0..n {
            let first = i * per;
            let count = per.min(spec.clients - first);
            let stderr = spec.dir.join(format!("driver-{i}.stderr"));
            let p = Arc::new(DriverProcess::spawn(
                &m.library,
                &m.command,
                m.folder(),
                &stderr,
            )?);
            let hello = Hello {
                protocol: PROTOCOL,
                system: spec.system,
                library: m.library.clone(),
                cluster: spec.cluster.clone(),
                lease_ttl_ms: spec.lease_ttl.as_millis() as u64,
                clients: count,
                prefix: spec.prefix.clone(),
                settings: m.settings.clone(),
            };
            version = p
                .hello(hello, Instant::now() + HELLO_TIMEOUT, PINGS)
                .await
                .map_err(|e| NoAnswer(format!("{} (its stderr: {})", e.0, stderr.display())))?;
            for local in 0..count {
                clients.push(DriverClient::new(
                    p.clone(),
                    local,
                    spec.system,
                    spec.lease_ttl,
                    m.tokens,
                    spec.deadlines,
                    &spec.prefix,
                ));
            }
            served.push((first..first + count).collect());
            processes.push(p);
        }
        let paused = processes.iter().map(|_| AtomicBool::new(false)).collect();
        let group = DriverGroup {
            library: m.library.clone(),
            processes,
            clients: served,
            paused,
            version,
        };
        Ok((group, clients))
    }

    /// What the cell's folder records of its drivers.
    pub fn record(&self, manifest: &Manifest) -> DriverRecord {
        let mut rtts: Vec<u64> = self
            .processes
            .iter()
            .flat_map(|p| p.round_trips_us())
            .collect();
        rtts.sort_unstable();
        let at = |q: f64| -> Option<u64> {
            (!rtts.is_empty()).then(|| rtts[((rtts.len() - 1) as f64 * q).round() as usize])
        };
        DriverRecord {
            protocol: PROTOCOL,
            library: self.library.clone(),
            version: manifest.version.clone(),
            reported_version: self.version.clone(),
            manifest: manifest.path.display().to_string(),
            lease_ttl_maps_to: manifest.lease_ttl.clone(),
            checks_lost_before_write: manifest.checks_lost_before_write,
            tokens: manifest.tokens,
            processes: self.processes.len(),
            round_trips: rtts.len(),
            round_trip_p50_us: at(0.5),
            round_trip_p99_us: at(0.99),
            acquisitions: self.processes.iter().map(|p| p.granted()).sum(),
            leases_left: None,
            broken: self.processes.iter().filter_map(|p| p.broken()).collect(),
        }
    }

    /// Closes every driver's stdin and waits for them to exit (killing the stragglers).
    pub async fn finish(&self) {
        for p in &self.processes {
            p.finish(Duration::from_secs(2)).await;
        }
    }
}

impl DriverGroup {
    fn signal(&self, index: usize, sig: libc::c_int) -> Result<(), String> {
        let p = self
            .processes
            .get(index)
            .ok_or_else(|| format!("no driver process {index}"))?;
        // The whole group: a wrapper script's children stop with it.
        if unsafe { libc::killpg(p.pgid(), sig) } != 0 {
            return Err(format!(
                "driver {} process group {}: {}",
                self.library,
                p.pgid(),
                std::io::Error::last_os_error()
            ));
        }
        self.paused[index].store(sig == libc::SIGSTOP, Ordering::Relaxed);
        Ok(())
    }
}

impl WorkerProcesses for DriverGroup {
    fn count(&self) -> usize {
        self.processes.len()
    }
    fn running(&self, index: usize) -> bool {
        index < self.processes.len()
            && !self.paused[index].load(Ordering::Relaxed)
            && self.processes[index].broken().is_none()
    }
    fn clients(&self, index: usize) -> &[u32] {
        self.clients.get(index).map_or(&[], |c| c.as_slice())
    }
    fn pause(&self, index: usize) -> Result<(), String> {
        self.signal(index, libc::SIGSTOP)
    }
    fn resume(&self, index: usize) -> Result<(), String> {
        match self.signal(index, libc::SIGCONT) {
            // A process that has exited has nothing left to resume.
            Err(_) if self.processes[index].broken().is_some() => Ok(()),
            r => r,
        }
    }
}
