//! The certificates of a cluster started with TLS (`lockbench up --tls`): a throw-away CA made
//! at start-up, one server certificate every node presents (its names: `localhost`,
//! `127.0.0.1` and the nodes' network names, so a client dialling a published port verifies
//! it), and one client certificate for mutual TLS. Made with rcgen; nothing is ever reused.
//! The servers get theirs through the environment (the entrypoints write them to `/tls`); the
//! user gets the CA and the client pair as files (`Bundle::write_client_files`), as a target
//! file's `[tls]` names them.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// The PEM text of one cluster's certificates and keys. Its `Debug` hides the keys.
#[derive(Clone)]
pub struct Bundle {
    /// The CA that signed both certificates.
    pub ca_pem: String,
    /// The certificate every server presents, and its key.
    pub server_cert_pem: String,
    /// See [`Bundle::server_cert_pem`].
    pub server_key_pem: String,
    /// The client certificate (common name [`CLIENT_NAME`]), and its key.
    pub client_cert_pem: String,
    /// See [`Bundle::client_cert_pem`].
    pub client_key_pem: String,
}

impl std::fmt::Debug for Bundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bundle").finish_non_exhaustive()
    }
}

/// The client certificate's common name.
pub const CLIENT_NAME: &str = "lockbench-client";

/// The files [`Bundle::write_client_files`] writes, by the names a target's `[tls]` takes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ClientFiles {
    /// The CA (`ca`).
    pub ca: PathBuf,
    /// The client certificate (`cert`).
    pub cert: PathBuf,
    /// Its key (`key`), readable by the owner only.
    pub key: PathBuf,
}

impl Bundle {
    /// A new CA, and a server certificate for `localhost`, `127.0.0.1` and `hosts` with a
    /// client certificate, both signed by it.
    pub fn generate(hosts: &[String]) -> Result<Bundle, rcgen::Error> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "lockbench throw-away CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;

        let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        names.extend(hosts.iter().cloned());
        let mut server = CertificateParams::new(names)?;
        server
            .distinguished_name
            .push(DnType::CommonName, "lockbench server");
        server.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            // etcd's members present it to each other too.
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let server_key = KeyPair::generate()?;
        let server_cert = server.signed_by(&server_key, &ca)?;

        let mut client = CertificateParams::new(Vec::<String>::new())?;
        client
            .distinguished_name
            .push(DnType::CommonName, CLIENT_NAME);
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_key = KeyPair::generate()?;
        let client_cert = client.signed_by(&client_key, &ca)?;

        Ok(Bundle {
            ca_pem: ca.pem(),
            server_cert_pem: server_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
        })
    }

    /// The environment a server's entrypoint reads to serve TLS (`LB_TLS_CA`, `LB_TLS_CERT`,
    /// `LB_TLS_KEY`: PEM text, written to `/tls` inside the container).
    pub fn server_env(&self) -> Vec<(String, String)> {
        vec![
            ("LB_TLS_CA".into(), self.ca_pem.clone()),
            ("LB_TLS_CERT".into(), self.server_cert_pem.clone()),
            ("LB_TLS_KEY".into(), self.server_key_pem.clone()),
        ]
    }

    /// Writes `ca.pem`, `client.pem` and `client-key.pem` (owner-only) into `dir`, made if
    /// missing: what a user names in a target's `[tls]`.
    pub fn write_client_files(&self, dir: &Path) -> std::io::Result<ClientFiles> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(dir)?;
        let files = ClientFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("client.pem"),
            key: dir.join("client-key.pem"),
        };
        std::fs::write(&files.ca, &self.ca_pem)?;
        std::fs::write(&files.cert, &self.client_cert_pem)?;
        let _ = std::fs::remove_file(&files.key);
        let mut key = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&files.key)?;
        std::io::Write::write_all(&mut key, self.client_key_pem.as_bytes())?;
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_is_pem_signed_by_its_ca_and_hides_its_keys() {
        let b = Bundle::generate(&["lb-r1-etcd1".to_string()]).unwrap();
        for pem in [&b.ca_pem, &b.server_cert_pem, &b.client_cert_pem] {
            assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        }
        for pem in [&b.server_key_pem, &b.client_key_pem] {
            assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
        }
        assert_ne!(b.server_cert_pem, b.client_cert_pem);
        let shown = format!("{b:?}");
        assert!(!shown.contains("PRIVATE"), "{shown}");
        let dir = std::env::temp_dir().join(format!("lockbench-tls-{}", std::process::id()));
        let files = b.write_client_files(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files.key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&files.ca).unwrap(), b.ca_pem);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
