//! Dashboard sessions: looking one up by its cookie token, idle and absolute expiry, the
//! actor a signed-in session acts as, and sign-out.

use std::net::IpAddr;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::Utc;

use crate::usecases::Core;
use rehome_domain::apikey::{hash_secret, random_base62};
use rehome_domain::audit::{AuditAction, AuditActor, AuditEntry};
use rehome_domain::session::{is_live, needs_touch, Stage, TOUCH_EVERY};
use rehome_domain::time::Ts;
use rehome_domain::user::{Actor, Admin, MemberStatus, Role, Via};
use rehome_store::{OwnSession, SessionRecord, StoreError};

/// Characters of a session (or CSRF) token: about 256 bits.
const TOKEN_LEN: usize = 43;

/// The OS random source failed (nothing a client can cause).
#[derive(Debug, thiserror::Error)]
#[error("the OS random source failed: {0}")]
pub struct RandomFailure(pub String);

impl From<getrandom::Error> for RandomFailure {
    fn from(e: getrandom::Error) -> Self {
        Self(e.to_string())
    }
}

/// A fresh random token and the SHA-256 the database keeps of it.
pub(crate) fn new_token() -> Result<(String, [u8; 32]), RandomFailure> {
    let token = random_base62(TOKEN_LEN)?;
    let hash = hash_secret(&token);
    Ok((token, hash))
}

/// How long a token of the forms before a session lasts (as long as its cookie).
pub const FORM_TOKEN_SECONDS: i64 = 86_400;

/// What a form token is sealed with, beside the data key: no other sealed value opens as one.
const FORM_TOKEN_AAD: &[u8] = b"rehome dashboard form token";

/// A double-submit token for the forms shown before there is a session (sign-in,
/// invitation): its expiry, sealed with the data key (XChaCha20-Poly1305, a random nonce
/// each time), in URL-safe base64. Only a holder of the data key can make one, so a value
/// a client invents (put in both the cookie and the field) is refused; every node with the
/// key accepts the tokens of the others, also after a restart.
pub fn issue_form_token(core: &Core) -> Result<String, StoreError> {
    let expires = Utc::now().timestamp().saturating_add(FORM_TOKEN_SECONDS);
    let sealed = core
        .store
        .sealer()?
        .seal(FORM_TOKEN_AAD, &expires.to_be_bytes())
        .map_err(|e| StoreError::Sealing(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(sealed))
}

/// True when `token` is one [`issue_form_token`] made (with this data key) and it has not
/// expired.
pub fn form_token_valid(core: &Core, token: &str) -> bool {
    if token.is_empty() || token.len() > 128 {
        return false;
    }
    let Ok(sealed) = URL_SAFE_NO_PAD.decode(token) else {
        return false;
    };
    let Ok(sealer) = core.store.sealer() else {
        return false;
    };
    let Ok(opened) = sealer.open(FORM_TOKEN_AAD, &sealed) else {
        return false;
    };
    <[u8; 8]>::try_from(opened.as_slice()).is_ok_and(|e| i64::from_be_bytes(e) > Utc::now().timestamp())
}

/// A live session of an active user, at any stage, seen from the address `ip`.
#[derive(Debug, Clone)]
pub struct LiveSession {
    pub record: SessionRecord,
    /// The client address of the request that presented it.
    pub ip: IpAddr,
}

impl LiveSession {
    pub fn stage(&self) -> Stage {
        self.record.stage
    }

    pub fn is_admin(&self) -> bool {
        self.role() == Role::Admin
    }

    /// This (signed-in) session's user as an admin, if they are one: for a page that
    /// shows an admin more than a member.
    pub fn admin(&self) -> Option<Admin> {
        Admin::check(self.actor()).ok()
    }

    fn role(&self) -> Role {
        // A role no code wrote acts with the least rights.
        self.record.role.parse().unwrap_or(Role::Member)
    }

    /// The brand's time zone, which its pages write instants in.
    pub fn zone(&self) -> rehome_domain::settings::TimeZone {
        rehome_domain::settings::TimeZone::stored(&self.record.brand_time_zone)
    }

    /// Whom the use cases act for when this (signed-in) session acts.
    pub fn actor(&self) -> Actor {
        Actor::authenticated(
            self.record.brand_id,
            self.record.brand_slug.clone(),
            self.record.user_id,
            self.record.name.clone(),
            self.role(),
            Via::Session,
            Some(self.ip),
        )
    }

    /// An audit entry of this session's user acting on themself.
    pub(crate) fn audit(&self, action: AuditAction) -> AuditEntry {
        AuditEntry {
            brand_id: self.record.brand_id,
            actor: AuditActor::user(self.record.user_id, &self.record.name),
            action,
            target: Some(format!("user:{}", self.record.user_id)),
            ip: Some(self.ip.to_string()),
        }
    }
}

/// The live session whose cookie token is `token`, or `None`: unknown, ended, expired (idle
/// 12 h, 7 days in all, 5 minutes waiting for a code), or its user no longer active. An
/// expired session found here is ended. Its last sight is recorded at most once a minute.
pub async fn session(core: &Core, token: &str, ip: IpAddr) -> Result<Option<LiveSession>, StoreError> {
    if token.is_empty() || token.len() > 128 {
        return Ok(None);
    }
    let Some(record) = core.store.session_by_token(&hash_secret(token)).await? else {
        return Ok(None);
    };
    let now = Utc::now();
    if !is_live(record.stage, record.created_at.get(), record.last_seen_at.get(), now) {
        core.store.end_session(record.id, None).await?;
        return Ok(None);
    }
    if record.status != MemberStatus::Active.as_str() {
        return Ok(None);
    }
    if needs_touch(record.last_seen_at.get(), now) {
        core.store.touch_session(record.id, Ts::from(now), Ts::from(now - TOUCH_EVERY)).await?;
    }
    Ok(Some(LiveSession { record, ip }))
}

/// Ends the session (audited as a sign-out when it was signed in).
pub async fn sign_out(core: &Core, session: &LiveSession) -> Result<(), StoreError> {
    let audit = (session.stage() == Stage::Full).then(|| session.audit(AuditAction::SignedOut));
    core.store.end_session(session.record.id, audit.as_ref()).await?;
    Ok(())
}

/// The signed-in user's live sessions, most recently seen first (their account page).
pub async fn own_sessions(core: &Core, session: &LiveSession) -> Result<Vec<OwnSession>, StoreError> {
    core.store.live_sessions(session.record.user_id, Ts::from(Utc::now())).await
}

/// Signs the user out everywhere but this session; answers how many sessions ended.
pub async fn end_other_sessions(core: &Core, session: &LiveSession) -> Result<u64, StoreError> {
    let audit = session.audit(AuditAction::SignedOut);
    core.store.end_other_sessions(session.record.user_id, session.record.id, &audit).await
}
