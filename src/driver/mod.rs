//! Library drivers: lock clients that are not lockbench's own recipes but a lock library's,
//! run in a process of their own that lockbench starts and talks to over a public JSON-lines
//! protocol ([`protocol`]). A driver is found through its manifest ([`Manifest`]); each of its
//! clients is a [`Recipe`](crate::recipe::Recipe) ([`DriverClient`]), so the client loop, the
//! register and the checkers treat a library as they treat a recipe. The register stays in
//! lockbench: the driver is asked before each read and write, and the access is applied when
//! its answer arrives.

pub mod check;
mod client;
mod group;
mod manifest;
mod process;
pub mod protocol;

pub use client::{Deadlines, DriverClient};
pub use group::{DriverGroup, DriverRecord, GroupSpec, HELLO_TIMEOUT};
pub use manifest::{Manifest, ManifestError};
pub use process::{DriverProcess, NoAnswer};
