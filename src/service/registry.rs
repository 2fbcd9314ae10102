//! The one list of services, in the order of [`crate::system::registry::SYSTEMS`] (a test
//! checks both name the same systems in the same order). A new system is one line here and
//! one there.

use super::LockService;

/// Every system's service, in report order.
pub static SERVICES: &[&dyn LockService] = &[
    &super::zookeeper::Zookeeper,
    &super::etcd::Etcd,
    &super::redis::Redis,
    &super::redlock::Redlock,
];
