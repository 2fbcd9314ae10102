//! How a lock client proves itself to a cluster that asks (a target's `[auth]` and `[tls]`):
//! the user and password it logs in with (etcd's user, Redis' ACL user or `requirepass` alone,
//! ZooKeeper's digest user), and the certificates of a TLS connection (etcd and Redis).
//! Clusters lockbench starts itself ask for none.

/// A login and TLS certificates. Travels to worker processes (over their stdin), never into
/// a file: its `Debug` hides the password and the key.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Credentials {
    /// The user; `None` for Redis' `requirepass` alone.
    pub user: Option<String>,
    /// The password; empty when the cluster asks for no login (TLS alone).
    pub password: String,
    /// Connect over TLS with these certificates; `None` for a plain connection.
    #[serde(default)]
    pub tls: Option<ClientTls>,
}

/// The certificates of a TLS connection, PEM text: the CA that signed the servers', and the
/// client's own certificate and key when the servers ask for one (mutual TLS).
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientTls {
    /// The CA the servers' certificates must be signed by.
    pub ca_pem: String,
    /// The client's certificate and key.
    pub identity: Option<(String, String)>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"<hidden>")
            .field("tls", &self.tls.as_ref().map(|t| t.identity.is_some()))
            .finish()
    }
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("identity", &self.identity.is_some())
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Whether it carries a login (a password), not TLS alone.
    pub fn logs_in(&self) -> bool {
        !self.password.is_empty()
    }

    /// ZooKeeper's `digest` scheme's auth bytes: `user:password`.
    pub fn zookeeper_digest(&self) -> Vec<u8> {
        format!("{}:{}", self.user.as_deref().unwrap_or(""), self.password).into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::{ClientTls, Credentials};

    #[test]
    fn debug_never_shows_the_password() {
        let c = Credentials {
            user: Some("bench".into()),
            password: "s3cret-pw".into(),
            tls: Some(ClientTls {
                ca_pem: "CA".into(),
                identity: Some(("CERT".into(), "PRIVATE-KEY".into())),
            }),
        };
        let shown = format!("{c:?}");
        assert!(shown.contains("bench"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(!shown.contains("PRIVATE"), "{shown}");
        assert_eq!(c.zookeeper_digest(), b"bench:s3cret-pw");
    }
}
