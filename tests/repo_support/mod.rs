//! The repository as the docs tests read it: its root and the files git tracks there.

use std::path::PathBuf;
use std::process::Command;

/// The repository's root (the crate's manifest folder).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file git tracks that is in the work tree, as paths relative to [`root`].
pub fn tracked() -> Vec<String> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git ls-files");
    String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .filter(|s| !s.is_empty())
        .filter(|s| root().join(s).is_file())
        .map(str::to_string)
        .collect()
}
