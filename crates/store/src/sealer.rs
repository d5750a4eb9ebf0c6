//! At-rest encryption of what the database must not reveal (event bodies, which carry credit
//! codes): XChaCha20-Poly1305 under the data key, which is kept outside the database.
//!
//! A sealed value is `nonce (24 random bytes) ‖ ciphertext ‖ tag (16 bytes)`. The caller
//! binds it to its row with associated data (an event's id), so a sealed value copied into
//! another row does not open there.
//!
//! The key is 32 bytes: `REHOME_DATA_KEY` (base64) when set, else the key file
//! (`REHOME_DATA_KEY_FILE`, default `rehome.key` beside the SQLite file), created on first
//! start with mode 0600 from the OS random generator.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use base64::Engine;
use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::{Key, KeyInit, XChaCha20Poly1305, XNonce};

/// Bytes of a data key.
pub const KEY_LEN: usize = 32;
/// Bytes of the random nonce that starts every sealed value.
pub const NONCE_LEN: usize = 24;
/// Bytes of the authentication tag that ends every sealed value.
const TAG_LEN: usize = 16;
/// The key file's name when `REHOME_DATA_KEY_FILE` is not set.
pub const DEFAULT_KEY_FILE: &str = "rehome.key";

/// Seals and opens values under the data key. Cheap to clone; never prints the key.
#[derive(Clone)]
pub struct Sealer(Arc<XChaCha20Poly1305>);

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sealer(..)")
    }
}

/// A sealed value that does not open: another key, other associated data, or altered bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("undecryptable: sealed under another data key, or altered")]
pub struct Undecryptable;

/// Sealing failed (no randomness for the nonce, or a value too long for the cipher).
#[derive(Debug, thiserror::Error)]
#[error("cannot seal: {0}")]
pub struct SealError(String);

impl Sealer {
    pub fn new(key: &[u8; KEY_LEN]) -> Self {
        Self(Arc::new(XChaCha20Poly1305::new(&Key::from(*key))))
    }

    /// The key from the settings of `rehome serve`: `data_key` (base64 of 32 bytes) wins;
    /// otherwise the key file `key_file`, by default [`default_key_path`] of the database,
    /// read, or created (mode 0600) when it does not exist. A key of any other length is
    /// refused.
    pub fn load(data_key: Option<&str>, key_file: Option<&Path>, database_url: &str) -> anyhow::Result<Self> {
        if let Some(encoded) = data_key {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .map_err(|_| anyhow::anyhow!("REHOME_DATA_KEY is not base64"))?;
            let key = <[u8; KEY_LEN]>::try_from(bytes.as_slice()).map_err(|_| {
                anyhow::anyhow!("REHOME_DATA_KEY must be the base64 of {KEY_LEN} bytes, not {}", bytes.len())
            })?;
            return Ok(Self::new(&key));
        }
        if key_file.is_none() && super::is_postgres_url(database_url) {
            anyhow::bail!(
                "with PostgreSQL every node must use the same data key: set REHOME_DATA_KEY (base64 of \
                 {KEY_LEN} bytes) or REHOME_DATA_KEY_FILE"
            );
        }
        let path = key_file.map_or_else(|| default_key_path(database_url), Path::to_path_buf);
        Ok(Self::new(&read_or_create_key(&path)?))
    }

    /// `nonce ‖ ciphertext ‖ tag` of `plaintext`, bound to `aad`.
    pub fn seal(&self, aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| SealError(e.to_string()))?;
        let ciphertext = self
            .0
            .encrypt(&XNonce::from(nonce), Payload { msg: plaintext, aad })
            .map_err(|_| SealError("the cipher refused the value".into()))?;
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        Ok(sealed)
    }

    /// The plaintext of a value [`Sealer::seal`] made with the same key and `aad`.
    pub fn open(&self, aad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, Undecryptable> {
        if sealed.len() < NONCE_LEN + TAG_LEN {
            return Err(Undecryptable);
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).map_err(|_| Undecryptable)?;
        self.0.decrypt(&nonce, Payload { msg: ciphertext, aad }).map_err(|_| Undecryptable)
    }
}

/// `rehome.key` in the directory of the SQLite file the URL names; in the working directory
/// for an in-memory database or a URL without a file.
pub fn default_key_path(database_url: &str) -> PathBuf {
    let rest = database_url.strip_prefix("sqlite://").or_else(|| database_url.strip_prefix("sqlite:"));
    let rest = rest.unwrap_or(database_url);
    let (file, query) = rest.split_once('?').unwrap_or((rest, ""));
    let file = file.strip_prefix("file:").unwrap_or(file);
    if file.is_empty() || file == ":memory:" || query.split('&').any(|p| p == "mode=memory") {
        return PathBuf::from(DEFAULT_KEY_FILE);
    }
    match Path::new(file).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(DEFAULT_KEY_FILE),
        _ => PathBuf::from(DEFAULT_KEY_FILE),
    }
}

/// Reads the key file, or creates it atomically: the new key is written and synced to a
/// private temporary file that is then hard-linked to `path`, so no process ever sees a
/// partial key, and of two processes starting at once the second reads the first's key.
fn read_or_create_key(path: &Path) -> anyhow::Result<[u8; KEY_LEN]> {
    match std::fs::read(path) {
        Ok(bytes) => return key_of_file(path, &bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read the data key file {}", path.display())),
    }
    let mut key = [0u8; KEY_LEN];
    getrandom::fill(&mut key).map_err(|e| anyhow::anyhow!("no randomness for a data key: {e}"))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let temporary = dir.join(format!(".{DEFAULT_KEY_FILE}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = write_private(&temporary, &key);
    let linked = written.and_then(|()| std::fs::hard_link(&temporary, path));
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => {
            if let Ok(dir) = std::fs::File::open(&dir) {
                let _ = dir.sync_all();
            }
            tracing::info!(path = %path.display(), "created the data key file: back it up, apart from the database");
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let bytes =
                std::fs::read(path).with_context(|| format!("cannot read the data key file {}", path.display()))?;
            key_of_file(path, &bytes)
        }
        Err(e) => Err(e).with_context(|| format!("cannot create the data key file {}", path.display())),
    }
}

fn write_private(path: &Path, key: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(key)?;
    file.sync_all()
}

fn key_of_file(path: &Path, bytes: &[u8]) -> anyhow::Result<[u8; KEY_LEN]> {
    let Ok(key) = <[u8; KEY_LEN]>::try_from(bytes) else {
        bail!(
            "the data key file {} holds {} bytes, not {KEY_LEN}: refusing to start with it \
             (restore the right key file, or set REHOME_DATA_KEY)",
            path.display(),
            bytes.len()
        );
    };
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(path = %path.display(), "the data key file is readable by other users; chmod 600 it");
        }
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; KEY_LEN] = [7; KEY_LEN];

    #[test]
    fn a_sealed_value_opens_with_the_same_key_and_associated_data() {
        let sealer = Sealer::new(&KEY);
        let sealed = sealer.seal(b"evt_1", b"RH-7Q2M-9XKD").unwrap();
        assert_eq!(sealed.len(), NONCE_LEN + 12 + TAG_LEN);
        assert!(!sealed.windows(12).any(|w| w == b"RH-7Q2M-9XKD"));
        assert_eq!(sealer.open(b"evt_1", &sealed).unwrap(), b"RH-7Q2M-9XKD");
        assert_ne!(sealer.seal(b"evt_1", b"RH-7Q2M-9XKD").unwrap(), sealed, "a fresh nonce every time");
    }

    #[test]
    fn altered_bytes_other_associated_data_and_another_key_are_refused() {
        let sealer = Sealer::new(&KEY);
        let sealed = sealer.seal(b"evt_1", b"{\"code\":\"RH-7Q2M-9XKD\"}").unwrap();
        for at in [0, NONCE_LEN, sealed.len() - 1] {
            let mut altered = sealed.clone();
            altered[at] ^= 1;
            assert_eq!(sealer.open(b"evt_1", &altered), Err(Undecryptable), "byte {at} flipped");
        }
        assert_eq!(sealer.open(b"evt_2", &sealed), Err(Undecryptable), "moved to another row");
        assert_eq!(sealer.open(b"", &sealed), Err(Undecryptable));
        assert_eq!(Sealer::new(&[8; KEY_LEN]).open(b"evt_1", &sealed), Err(Undecryptable));
        assert_eq!(sealer.open(b"evt_1", &sealed[..NONCE_LEN + TAG_LEN - 1]), Err(Undecryptable));
        assert_eq!(sealer.open(b"evt_1", b""), Err(Undecryptable));
        assert_eq!(format!("{sealer:?}"), "Sealer(..)");
    }

    #[test]
    fn the_default_key_file_sits_beside_the_database_file() {
        assert_eq!(default_key_path("sqlite:///var/lib/rehome/rehome.db"), Path::new("/var/lib/rehome/rehome.key"));
        assert_eq!(default_key_path("sqlite://data/r.db?mode=rwc"), Path::new("data/rehome.key"));
        assert_eq!(default_key_path("sqlite:data/r.db"), Path::new("data/rehome.key"));
        assert_eq!(default_key_path("/srv/r.db"), Path::new("/srv/rehome.key"));
        assert_eq!(default_key_path("sqlite://rehome.db"), Path::new("rehome.key"));
        assert_eq!(default_key_path("sqlite::memory:"), Path::new("rehome.key"));
        assert_eq!(default_key_path("sqlite://shared?mode=memory&cache=shared"), Path::new("rehome.key"));
    }

    #[test]
    fn the_key_file_is_created_private_on_first_use_and_read_after() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("r.db").display());
        let first = Sealer::load(None, None, &url).unwrap();
        let path = dir.path().join(DEFAULT_KEY_FILE);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), KEY_LEN);
        assert_ne!(bytes, [0u8; KEY_LEN]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers, [DEFAULT_KEY_FILE], "no temporary file left behind");
        let sealed = first.seal(b"evt_1", b"body").unwrap();
        let again = Sealer::load(None, None, &url).unwrap();
        assert_eq!(again.open(b"evt_1", &sealed).unwrap(), b"body", "the same key on restart");
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }

    #[test]
    fn the_environment_key_wins_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("r.db").display());
        let file = dir.path().join("other.key");
        std::fs::write(&file, [9u8; KEY_LEN]).unwrap();
        let encoded = base64::engine::general_purpose::STANDARD.encode(KEY);
        let sealer = Sealer::load(Some(&encoded), Some(&file), &url).unwrap();
        let sealed = sealer.seal(b"a", b"b").unwrap();
        assert_eq!(Sealer::new(&KEY).open(b"a", &sealed).unwrap(), b"b");
        assert!(!dir.path().join(DEFAULT_KEY_FILE).exists(), "no key file made");
        // A named file is used when the environment key is absent.
        let from_file = Sealer::load(None, Some(&file), &url).unwrap();
        assert_eq!(Sealer::new(&[9u8; KEY_LEN]).open(b"a", &from_file.seal(b"a", b"b").unwrap()).unwrap(), b"b");
    }

    #[test]
    fn keys_of_the_wrong_length_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("r.db").display());
        let short = dir.path().join("short.key");
        std::fs::write(&short, [1u8; 31]).unwrap();
        let error = Sealer::load(None, Some(&short), &url).unwrap_err().to_string();
        assert!(error.contains("holds 31 bytes, not 32"), "{error}");
        std::fs::write(dir.path().join(DEFAULT_KEY_FILE), b"").unwrap();
        assert!(Sealer::load(None, None, &url).is_err(), "an empty key file is not replaced");
        let encoded = base64::engine::general_purpose::STANDARD.encode([1u8; 16]);
        let error = Sealer::load(Some(&encoded), None, &url).unwrap_err().to_string();
        assert!(error.contains("base64 of 32 bytes, not 16"), "{error}");
        assert!(Sealer::load(Some("not base64!"), None, &url).is_err());
    }
}
