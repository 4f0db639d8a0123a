//! Hashes and MACs, straight from the RustCrypto crates.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

pub fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Constant-time check of a signature given as lower-case hex.
pub fn hmac_sha256_matches_hex(key: &[u8], data: &[u8], sent_hex: &str) -> bool {
    let Ok(sent) = hex::decode(sent_hex) else {
        return false;
    };
    if sent_hex.bytes().any(|b| b.is_ascii_uppercase()) {
        return false;
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac.verify_slice(&sent).is_ok()
}

pub fn hmac_sha1(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Constant-time check of a raw HMAC-SHA1 value.
pub fn hmac_sha1_matches(key: &[u8], data: &[u8], sent: &[u8]) -> bool {
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac.verify_slice(sent).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        // FIPS 180-2 "abc"; RFC 4231 case 2; RFC 2202 case 2.
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(hmac_sha256_matches_hex(
            b"Jefe",
            b"what do ya want for nothing?",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ));
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex::encode(hmac_sha1(b"Jefe", b"what do ya want for nothing?")),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
        assert!(hmac_sha1_matches(
            b"Jefe",
            b"what do ya want for nothing?",
            &hex::decode("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79").unwrap()
        ));
    }
}
