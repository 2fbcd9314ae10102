//! Results for tests.

use std::time::Duration;

use super::CellInfo;

/// A cell of `clients` clients with no warm-up, ended by its last event.
pub fn cell(clients: u32) -> CellInfo {
    CellInfo {
        server_version: None,
        server_settings: None,
        id: crate::plan::CellId {
            version: None,
            system: crate::system::System::Etcd,
            strategy: crate::recipe::Strategy::Predecessor,
            workload: "test".into(),
            chaos: crate::plan::NO_CHAOS.into(),
            clients,
            repetition: None,
            library: None,
        },
        warmup: Duration::ZERO,
        end_us: None,
        resource: Default::default(),
        expect: Default::default(),
        settle_ms: None,
        lock: Default::default(),
    }
}
