//! The user and password a lock client logs in with, on a cluster that asks for them (a
//! target's `[auth]`): etcd's user, Redis' ACL user (or `requirepass` alone), ZooKeeper's
//! digest user. Clusters lockbench starts itself ask for none.

/// A user and password. Travels to worker processes (over their stdin), never into a file:
/// its `Debug` hides the password.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Credentials {
    /// The user; `None` for Redis' `requirepass` alone.
    pub user: Option<String>,
    /// The password.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"<hidden>")
            .finish()
    }
}

impl Credentials {
    /// ZooKeeper's `digest` scheme's auth bytes: `user:password`.
    pub fn zookeeper_digest(&self) -> Vec<u8> {
        format!("{}:{}", self.user.as_deref().unwrap_or(""), self.password).into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::Credentials;

    #[test]
    fn debug_never_shows_the_password() {
        let c = Credentials {
            user: Some("bench".into()),
            password: "s3cret-pw".into(),
        };
        let shown = format!("{c:?}");
        assert!(shown.contains("bench"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(c.zookeeper_digest(), b"bench:s3cret-pw");
    }
}
