//! Secrets the dashboard shows once (a new key, recovery codes, an invitation link) travel
//! to the browser sealed under the data key (XChaCha20-Poly1305), bound to one session by
//! `aad`: only this server opens them, and only for that session.

use rehome_store::StoreError;

use crate::usecases::Core;

/// `plaintext` sealed for the browser, bound to `aad`.
pub fn seal(core: &Core, aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, StoreError> {
    core.store.sealer()?.seal(aad, plaintext).map_err(|e| StoreError::Sealing(e.to_string()))
}

/// What `sealed` held, if it opens with `aad` (`None`: forged, altered, or another session's).
pub fn open(core: &Core, aad: &[u8], sealed: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(core.store.sealer()?.open(aad, sealed).ok())
}
