//! Optional client-side encryption of state and saved plans (like
//! OpenTofu's state encryption): AES-256-GCM with a key derived by Argon2id
//! (memory-hard) from the passphrase in `GPUFORM_STATE_PASSPHRASE`. Key
//! rollover: documents that do not open with it are tried with
//! `GPUFORM_STATE_PASSPHRASE_OLD`; every write uses the current one.
//!
//! Encrypted: the state (every backend), saved plan files, the journal
//! lines pushed to a remote backend, and the lines of the local journal of
//! a running apply (one envelope per line, so a torn last line stays
//! detectable).
//!
//! An encrypted document is a small JSON envelope, so a reader without the
//! key says "encrypted" rather than "corrupt":
//! `{"gpuform_encrypted":1,"kdf":"argon2id","m_kib":..,"t":..,"p":..,"salt":B64,"nonce":B64,"ciphertext":B64}`.

use super::StateError;
use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

pub const PASSPHRASE_VAR: &str = "GPUFORM_STATE_PASSPHRASE";
pub const OLD_PASSPHRASE_VAR: &str = "GPUFORM_STATE_PASSPHRASE_OLD";

/// Argon2id parameters (OWASP's minimum for Argon2id: 19 MiB, 2 passes).
const M_KIB: u32 = 19 * 1024;
const T: u32 = 2;
const P: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Envelope {
    gpuform_encrypted: u32,
    kdf: String,
    m_kib: u32,
    t: u32,
    p: u32,
    salt: String,
    nonce: String,
    ciphertext: String,
}

fn passphrase(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|p| !p.is_empty())
}

/// Whether writes are encrypted (the passphrase is set).
pub fn enabled() -> bool {
    passphrase(PASSPHRASE_VAR).is_some()
}

/// Whether `bytes` is an encrypted envelope.
pub fn is_encrypted(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(64)];
    String::from_utf8_lossy(head)
        .trim_start()
        .starts_with("{\"gpuform_encrypted\"")
}

type KeyCache = Mutex<HashMap<(String, Vec<u8>, u32, u32, u32), [u8; 32]>>;

/// Derived keys by (passphrase, salt, params): one KDF run per process and
/// salt, not per document.
fn derive(pass: &str, salt: &[u8], m: u32, t: u32, p: u32) -> Result<[u8; 32], String> {
    static CACHE: OnceLock<KeyCache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let k = (pass.to_string(), salt.to_vec(), m, t, p);
    if let Some(key) = cache.lock().expect("key cache").get(&k) {
        return Ok(*key);
    }
    let params = argon2::Params::new(m, t, p, Some(32)).map_err(|e| e.to_string())?;
    let argon = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let mut key = [0u8; 32];
    argon
        .hash_password_into(pass.as_bytes(), salt, &mut key)
        .map_err(|e| e.to_string())?;
    cache.lock().expect("key cache").insert(k, key);
    Ok(key)
}

/// This process's salt for new envelopes (so the KDF runs once).
fn process_salt() -> &'static [u8; 16] {
    static SALT: OnceLock<[u8; 16]> = OnceLock::new();
    SALT.get_or_init(|| {
        let mut s = [0u8; 16];
        rand::thread_rng().fill_bytes(&mut s);
        s
    })
}

/// Encrypts `plain` when a passphrase is set; returns it unchanged otherwise.
pub fn seal(plain: Vec<u8>) -> Result<Vec<u8>, String> {
    seal_with(plain, passphrase(PASSPHRASE_VAR).as_deref())
}

fn seal_with(plain: Vec<u8>, pass: Option<&str>) -> Result<Vec<u8>, String> {
    let Some(pass) = pass else {
        return Ok(plain);
    };
    let salt = process_salt();
    let key = derive(pass, salt, M_KIB, T, P)?;
    let cipher = Aes256Gcm::new_from_slice(&key).map_err(|e| e.to_string())?;
    let mut nonce = [0u8; 12];
    rand::thread_rng().fill_bytes(&mut nonce);
    let ciphertext = cipher
        .encrypt(Nonce::from_slice(&nonce), plain.as_slice())
        .map_err(|_| "encryption failed".to_string())?;
    let env = Envelope {
        gpuform_encrypted: 1,
        kdf: "argon2id".into(),
        m_kib: M_KIB,
        t: T,
        p: P,
        salt: B64.encode(salt),
        nonce: B64.encode(nonce),
        ciphertext: B64.encode(ciphertext),
    };
    let mut out = serde_json::to_vec(&env).expect("envelope serialises");
    out.push(b'\n');
    Ok(out)
}

/// Decrypts an envelope with the current passphrase, else the old one;
/// returns other bytes unchanged. Errors say what to set.
pub fn open(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    let keys: Vec<String> = [PASSPHRASE_VAR, OLD_PASSPHRASE_VAR]
        .iter()
        .filter_map(|v| passphrase(v))
        .collect();
    open_with(bytes, &keys)
}

/// [`open`] with the passphrases given, current first.
/// [`seal`] of something kept at `location` (a state file, a backend's
/// URL): a failure is that location's [`StateError::Encryption`].
pub(crate) fn seal_at(location: impl AsRef<Path>, plain: Vec<u8>) -> Result<Vec<u8>, StateError> {
    seal(plain).map_err(|message| encryption(location, message))
}

/// [`open`] of something read from `location`, failing as [`seal_at`] does.
pub(crate) fn open_at(
    location: impl AsRef<Path>,
    bytes: &[u8],
) -> Result<Cow<'_, [u8]>, StateError> {
    open(bytes).map_err(|message| encryption(location, message))
}

/// A journal line as a remote backend keeps it: sealed, on one text line.
pub(crate) fn seal_line(location: impl AsRef<Path>, line: &str) -> Result<String, StateError> {
    let sealed = seal_at(location, line.as_bytes().to_vec())?;
    Ok(String::from_utf8_lossy(&sealed).trim_end().to_string())
}

/// A line [`seal_line`] wrote, opened.
pub(crate) fn open_line(location: impl AsRef<Path>, line: &str) -> Result<String, StateError> {
    Ok(String::from_utf8_lossy(&open_at(location, line.as_bytes())?).into_owned())
}

fn encryption(location: impl AsRef<Path>, message: String) -> StateError {
    StateError::Encryption {
        path: location.as_ref().to_path_buf(),
        message,
    }
}

fn open_with<'a>(
    bytes: &'a [u8],
    candidates: &[String],
) -> Result<std::borrow::Cow<'a, [u8]>, String> {
    if !is_encrypted(bytes) {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    let env: Envelope =
        serde_json::from_slice(bytes).map_err(|e| format!("damaged encryption envelope: {e}"))?;
    if env.gpuform_encrypted != 1 || env.kdf != "argon2id" {
        return Err(format!(
            "encrypted with an unknown scheme (version {}, kdf {}); upgrade gpuform",
            env.gpuform_encrypted, env.kdf
        ));
    }
    let b = |s: &str| {
        B64.decode(s)
            .map_err(|e| format!("damaged encryption envelope: {e}"))
    };
    let (salt, nonce, ct) = (b(&env.salt)?, b(&env.nonce)?, b(&env.ciphertext)?);
    if nonce.len() != 12 {
        return Err("damaged encryption envelope: bad nonce".into());
    }
    if candidates.is_empty() {
        return Err(format!(
            "it is encrypted and no key is set\n  hint: set {PASSPHRASE_VAR} to the passphrase it was written with"
        ));
    }
    for pass in candidates {
        let key = derive(pass, &salt, env.m_kib, env.t, env.p)?;
        let cipher = Aes256Gcm::new_from_slice(&key).map_err(|e| e.to_string())?;
        if let Ok(plain) = cipher.decrypt(Nonce::from_slice(&nonce), ct.as_slice()) {
            return Ok(std::borrow::Cow::Owned(plain));
        }
    }
    Err(format!(
        "it does not decrypt with {PASSPHRASE_VAR}{}: wrong key, or the document was tampered with\n  hint: set {PASSPHRASE_VAR} to the passphrase it was written with (during a key change, the old one in {OLD_PASSPHRASE_VAR})",
        if candidates.len() > 1 { format!(" nor {OLD_PASSPHRASE_VAR}") } else { String::new() }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn round_trip_rollover_and_wrong_or_missing_keys() {
        let plain = b"{\"format_version\":1}".to_vec();
        let sealed = seal_with(plain.clone(), Some("first")).unwrap();
        assert!(is_encrypted(&sealed));
        assert!(!String::from_utf8_lossy(&sealed).contains("format_version"));
        assert_eq!(&*open_with(&sealed, &keys(&["first"])).unwrap(), &plain[..]);
        // Rollover: the new key is current, the old one opens old documents.
        let err = open_with(&sealed, &keys(&["second"])).unwrap_err();
        assert!(err.contains("does not decrypt"), "{err}");
        assert_eq!(
            &*open_with(&sealed, &keys(&["second", "first"])).unwrap(),
            &plain[..]
        );
        // Missing key.
        let err = open_with(&sealed, &[]).unwrap_err();
        assert!(err.contains("no key is set"), "{err}");
        // Tampering is detected.
        let mut env: Envelope = serde_json::from_slice(&sealed).unwrap();
        let mut ct = B64.decode(&env.ciphertext).unwrap();
        ct[0] ^= 1;
        env.ciphertext = B64.encode(ct);
        let bad = serde_json::to_vec(&env).unwrap();
        assert!(open_with(&bad, &keys(&["first"]))
            .unwrap_err()
            .contains("does not decrypt"));
        // Without a passphrase, writes are plain and plain documents open.
        assert_eq!(seal_with(b"x".to_vec(), None).unwrap(), b"x");
        assert_eq!(&*open_with(b"{\"a\":1}", &[]).unwrap(), b"{\"a\":1}");
    }
}
