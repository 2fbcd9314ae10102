//! The one list of systems. Each line names a system's folder, `service/<name>/`, and its facts
//! file in it (a `#[path]` must be a literal, so the path is written out; a test checks it is
//! `../service/<name>/facts.rs`). The list declares the facts modules here, in [`crate::system`]
//! (`SYSTEMS`), and the service modules in [`crate::service`]
//! ([`crate::service::SERVICES`]): parsing, `--systems` and its default, the plan, doctor,
//! `images`, the plots and every per-system fact read it. A new system is one folder and one
//! line here; the order is the order reports list systems in.
//!
//! `cargo fmt` does not see modules a macro declares: `.ci/run` also runs `rustfmt --check` on
//! every tracked source file, and `scripts/fmt` formats them all.

/// Calls `$then!` with every system's folder name and facts file, in report order.
macro_rules! each_system {
    ($then:ident) => {
        $then! {
            zookeeper: "../service/zookeeper/facts.rs",
            etcd: "../service/etcd/facts.rs",
            redis: "../service/redis/facts.rs",
            redlock: "../service/redlock/facts.rs",
            postgres: "../service/postgres/facts.rs",
            mariadb: "../service/mariadb/facts.rs",
            memcached: "../service/memcached/facts.rs",
        }
    };
}
pub(crate) use each_system;

/// Declares each system's facts module (`crate::system::<name>`, from its folder's
/// `facts.rs`) and [`SYSTEMS`].
macro_rules! facts_modules {
    ($($name:ident: $facts:literal),+ $(,)?) => {
        $(
            #[path = $facts]
            mod $name;
        )+

        /// Every system lockbench can run, in report order.
        pub static SYSTEMS: &[&Facts] = &[$(&$name::FACTS),+];

        /// Each registered folder's name and the facts file its line names (for the test that
        /// the two agree).
        #[cfg(test)]
        pub(crate) const FACTS_FILES: &[(&str, &str)] = &[$((stringify!($name), $facts)),+];
    };
}
pub(crate) use facts_modules;
