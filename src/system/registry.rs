//! The one list of systems: parsing, `--systems` and its default, the plan, doctor, `images`,
//! the plots and every per-system fact read it. A new system is one line here (and its file,
//! and its service in [`crate::service::registry::SERVICES`]); the order is the order reports
//! list systems in.

use super::Facts;

/// Every system lockbench can run, in report order.
pub static SYSTEMS: &[&Facts] = &[
    &super::zookeeper::FACTS,
    &super::etcd::FACTS,
    &super::redis::FACTS,
    &super::redlock::FACTS,
];
