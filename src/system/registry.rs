//! The one list of systems: parsing, `--systems` and its default, the plan, doctor, `images`,
//! the plots and every per-system behaviour read it. A new system is one line here (and its
//! folder); the order is the order reports list systems in.

use super::LockService;

/// Every system lockbench can run, in report order.
pub static SYSTEMS: &[&dyn LockService] = &[
    &super::zookeeper::Zookeeper,
    &super::etcd::Etcd,
    &super::redis::Redis,
    &super::redlock::Redlock,
];
