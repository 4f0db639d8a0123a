//! Credentials of the k3s clusters gpuform makes, made and kept on the
//! user's side, and the kubeconfig built from them (`gpuform kubeconfig`).
//! The threat model is docs/kubernetes.md.
//!
//! Per cluster, the first apply that creates its server makes two CAs
//! (ECDSA P-256, with `rcgen` on `ring`):
//! - the **server CA**: its certificate and key go to the server at boot
//!   (k3s signs its serving certificates with it), so a kubeconfig can pin
//!   it without ever asking the server;
//! - the **admin CA**: only its certificate goes to the server, which
//!   trusts it for client certificates; its key never leaves this machine.
//!   `gpuform kubeconfig` issues a short-lived admin client certificate
//!   from it (`O=system:masters`) each time it runs.
//!
//! They live in `<state dir>/<project>.secrets/<cluster>.k3s.json`
//! (directory 0700, file 0600), beside the state and never in it; sealed
//! with the state passphrase (`GPUFORM_STATE_PASSPHRASE`) when one is set.
//! Plans and state only ever carry `@@GPUFORM_SECRET:…@@` placeholders.

use base64::Engine as _;
use gpuform_catalog::date::Day;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The CAs of one cluster (PEM).
#[derive(Clone, Serialize, Deserialize)]
pub struct ClusterCas {
    pub cluster: String,
    pub server_ca_crt: String,
    pub server_ca_key: String,
    pub admin_ca_crt: String,
    pub admin_ca_key: String,
}

impl std::fmt::Debug for ClusterCas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterCas({}, keys redacted)", self.cluster)
    }
}

/// How long a CA is valid (k3s's own CAs: 10 years).
const CA_DAYS: i64 = 3650;

/// Sets a certificate's validity from `from` for `days` days (from the
/// pinned-able `clock`, never the wall clock directly).
fn validity(p: &mut rcgen::CertificateParams, from: Day, days: i64) {
    let at = |d: Day| {
        let (y, m, dd) = d.ymd();
        rcgen::date_time_ymd(y as i32, m as u8, dd as u8)
    };
    p.not_before = at(Day(from.0 - 1));
    p.not_after = at(Day(from.0 + days));
}

/// A CA's parameters but for validity: what it is made from, and what
/// names it as the issuer of what it signs (same subject and key).
fn ca_params(cn: &str) -> Result<rcgen::CertificateParams, String> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyUsagePurpose};
    let mut p = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::CrlSign,
    ];
    Ok(p)
}

fn admin_ca_name(cluster: &str) -> String {
    format!("gpuform-{cluster}-admin-ca")
}

fn ca(cn: &str, today: Day) -> Result<(String, String), String> {
    let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
    let mut p = ca_params(cn)?;
    validity(&mut p, today, CA_DAYS);
    let cert = p.self_signed(&key).map_err(|e| e.to_string())?;
    Ok((cert.pem(), key.serialize_pem()))
}

impl ClusterCas {
    pub fn generate(cluster: &str, today: Day) -> Result<ClusterCas, String> {
        let (server_ca_crt, server_ca_key) = ca(&format!("gpuform-{cluster}-server-ca"), today)?;
        let (admin_ca_crt, admin_ca_key) = ca(&admin_ca_name(cluster), today)?;
        Ok(ClusterCas {
            cluster: cluster.to_string(),
            server_ca_crt,
            server_ca_key,
            admin_ca_crt,
            admin_ca_key,
        })
    }

    /// What a server's document names (`bootstrap::SECRET_*`), as the
    /// base64 of the DER (a PEM's body on one line; the node re-wraps it),
    /// the form `bootstrap::fill` accepts. The admin CA's key is never one
    /// of them.
    pub fn for_server(&self, name: &str) -> Option<String> {
        let pem = match name {
            crate::bootstrap::SECRET_SERVER_CA_CRT => &self.server_ca_crt,
            crate::bootstrap::SECRET_SERVER_CA_KEY => &self.server_ca_key,
            crate::bootstrap::SECRET_ADMIN_CA_CRT => &self.admin_ca_crt,
            _ => return None,
        };
        Some(
            pem.lines()
                .filter(|l| !l.starts_with("-----"))
                .map(str::trim)
                .collect(),
        )
    }

    /// A fresh admin client certificate (`CN=gpuform-admin`,
    /// `O=system:masters`: cluster-admin through Kubernetes' default RBAC),
    /// valid for `days` from `today`: (certificate PEM, key PEM).
    pub fn issue_admin(&self, today: Day, days: u32) -> Result<(String, String), String> {
        use rcgen::{
            CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose,
        };
        let ca_key = KeyPair::from_pem(&self.admin_ca_key).map_err(|e| e.to_string())?;
        let issuer = Issuer::new(ca_params(&admin_ca_name(&self.cluster))?, ca_key);
        let key = KeyPair::generate().map_err(|e| e.to_string())?;
        let mut p = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
        p.distinguished_name
            .push(DnType::CommonName, "gpuform-admin");
        p.distinguished_name
            .push(DnType::OrganizationName, "system:masters");
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        validity(&mut p, today, i64::from(days));
        let cert = p.signed_by(&key, &issuer).map_err(|e| e.to_string())?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

fn file_of(dir: &Path, cluster: &str) -> PathBuf {
    dir.join(format!("{cluster}.k3s.json"))
}

/// The cluster's CAs from `dir`, `None` when none were made yet.
pub fn load(dir: &Path, cluster: &str) -> Result<Option<ClusterCas>, String> {
    let path = file_of(dir, cluster);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let plain =
        crate::state::crypto::open(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&plain)
        .map(Some)
        .map_err(|e| format!("{}: not gpuform credentials: {e}", path.display()))
}

/// The cluster's CAs, made and saved now if there are none (0700
/// directory, 0600 file, written atomically).
pub fn load_or_create(dir: &Path, cluster: &str, today: Day) -> Result<ClusterCas, String> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = load(dir, cluster)? {
        return Ok(c);
    }
    let cas = ClusterCas::generate(cluster, today)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    restrict(dir, 0o700)?;
    let plain = serde_json::to_vec_pretty(&cas).map_err(|e| e.to_string())?;
    let bytes = crate::state::crypto::seal(plain)?;
    write_private(&file_of(dir, cluster), &bytes)?;
    Ok(cas)
}

#[cfg(unix)]
fn restrict(path: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{}: {e}", path.display()))
}
#[cfg(not(unix))]
fn restrict(_: &Path, _: u32) -> Result<(), String> {
    Ok(())
}

/// Writes a file readable by its owner only (0600 from creation), atomically.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    gpuform_catalog::fsio::AtomicWrite::new()
        .private()
        .write(path, bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// k3s's serving certificate always names `kubernetes` (whatever address
/// the user reaches it by: a public IP is not on the node's interface), so
/// the kubeconfig verifies that name against the pinned server CA.
pub const TLS_SERVER_NAME: &str = "kubernetes";

/// A kubeconfig for `server` (`https://ADDRESS:6443`) with an admin
/// client certificate.
pub fn kubeconfig(name: &str, server: &str, server_ca: &str, crt: &str, key: &str) -> String {
    let b = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n  - name: {name}\n    cluster:\n      server: {server}\n      tls-server-name: {TLS_SERVER_NAME}\n      certificate-authority-data: {ca}\nusers:\n  - name: {name}-admin\n    user:\n      client-certificate-data: {crt}\n      client-key-data: {key}\ncontexts:\n  - name: {name}\n    context:\n      cluster: {name}\n      user: {name}-admin\ncurrent-context: {name}\n",
        ca = b(server_ca),
        crt = b(crt),
        key = b(key),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admin_certificate_chains_to_the_admin_ca_and_keys_stay_out_of_debug() {
        let today = Day::from_ymd(2026, 5, 1);
        let cas = ClusterCas::generate("pool", today).unwrap();
        assert!(cas.server_ca_crt.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(cas.admin_ca_key.contains("PRIVATE KEY"));
        assert!(!format!("{cas:?}").contains("PRIVATE"));
        let (crt, key) = cas.issue_admin(today, 30).unwrap();
        assert!(crt.contains("BEGIN CERTIFICATE") && key.contains("PRIVATE KEY"));
        // What the server gets: two certificates and the server CA's key,
        // never the admin CA's key.
        let body = |pem: &str| {
            pem.lines()
                .filter(|l| !l.starts_with("-----"))
                .collect::<String>()
        };
        for (name, pem) in [
            (crate::bootstrap::SECRET_ADMIN_CA_CRT, &cas.admin_ca_crt),
            (crate::bootstrap::SECRET_SERVER_CA_CRT, &cas.server_ca_crt),
            (crate::bootstrap::SECRET_SERVER_CA_KEY, &cas.server_ca_key),
        ] {
            let b64 = cas.for_server(name).unwrap();
            assert_eq!(b64, body(pem));
            assert!(base64::engine::general_purpose::STANDARD
                .decode(&b64)
                .is_ok());
            let max = if name == crate::bootstrap::SECRET_SERVER_CA_KEY {
                crate::bootstrap::SECRET_KEY_MAX_BYTES
            } else {
                crate::bootstrap::SECRET_MAX_BYTES
            };
            assert!(b64.len() <= max, "{name}: {}", b64.len());
        }
        // A long cluster name still fits the bound.
        let long = ClusterCas::generate(&"c".repeat(63), today).unwrap();
        assert!(
            long.for_server("server-ca.crt").unwrap().len() <= crate::bootstrap::SECRET_MAX_BYTES
        );
        assert_eq!(cas.for_server("admin-ca.key"), None);
    }

    #[test]
    fn secrets_sit_beside_the_state_privately() {
        assert_eq!(
            crate::state::StateStore::new(".gpuform/p.state.json").secrets_dir(),
            Path::new(".gpuform/p.secrets")
        );
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("p.secrets");
        let a = load_or_create(&d, "pool", Day::from_ymd(2026, 5, 1)).unwrap();
        let b = load_or_create(&d, "pool", Day::from_ymd(2026, 5, 2)).unwrap();
        assert_eq!(a.admin_ca_key, b.admin_ca_key, "made once");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&d), 0o700);
            assert_eq!(mode(&d.join("pool.k3s.json")), 0o600);
        }
    }
}
