//! Invitation links: single use, valid 72 hours; only the SHA-256 of the token is stored.
//! Issuing, resending and cancelling are here; accepting one belongs to sign-in.
//!
//! Lock order, against a link being accepted at the same moment (which updates its
//! `invitations` row, then the user): a resend takes an advisory lock of its own (PostgreSQL;
//! SQLite's writers are serial) and touches `invitations` before `users`; a cancellation
//! touches `invitations` first too. So the two never wait on each other in a cycle, and of
//! an acceptance and a cancellation one wins.

use chrono::TimeDelta;

use super::mail::{enqueue_mail, NewMail};
use super::users::{insert_invitation, MEMBER_COLUMNS};
use super::{now, on_pool, record_audit, Store, StoreError, Ts};
use rehome_domain::audit::AuditEntry;
use rehome_domain::view::MemberRecord;

/// An invitation to send again: the new link's hash and expiry, how many links the person
/// may have been sent in the last 24 hours, and the mail carrying it (when mail is on).
pub struct Resend<'a> {
    pub brand_id: i64,
    pub user_id: i64,
    pub token_hash: &'a [u8; 32],
    pub expires_at: Ts,
    pub links_per_day: i64,
    pub mail: Option<NewMail<'a>>,
}

/// What a resend or a cancellation did.
#[derive(Debug)]
pub enum InvitationChange {
    /// Done: the member as they now are.
    Done(MemberRecord),
    /// No member of the brand with this id is waiting on an invitation (they joined, were
    /// removed, the invitation was cancelled, or the id is another brand's).
    NotPending,
    /// The person was sent `links_per_day` links in the last 24 hours already.
    TooFrequent,
}

/// The PostgreSQL advisory lock of one person's invitations (serialises their resends).
fn invitation_lock(user_id: i64) -> i64 {
    // A namespace in the high bits keeps it apart from the sign-in locks (hashes).
    (0x7265_6869_i64 << 32) ^ user_id
}

impl Store {
    /// A fresh invitation for an existing user (the CLI's `users invite-link`), recorded as
    /// `entry(brand id)`, in one transaction; false when no live user has this id.
    pub async fn issue_invitation(
        &self,
        user_id: i64,
        token_hash: &[u8; 32],
        expires_at: Ts,
        entry: impl FnOnce(i64) -> AuditEntry,
    ) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let brand_id: Option<i64> =
                sqlx::query_scalar("SELECT brand_id FROM users WHERE id = $1 AND status <> 'removed'")
                    .bind(user_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            let Some(brand_id) = brand_id else {
                return Ok(false);
            };
            insert_invitation((&mut *tx).into(), user_id, token_hash, Ts::now(), expires_at).await?;
            record_audit((&mut *tx).into(), &entry(brand_id)).await?;
            tx.commit().await?;
            Ok(true)
        })
    }
}

impl Store {
    /// Sends an invitation again: a new link (the earlier ones stop working), `entry`
    /// recorded and the mail queued, in one transaction; refused past `links_per_day`
    /// links in 24 hours, counted under a lock so a burst cannot pass it.
    pub async fn resend_invitation(
        &self,
        resend: &Resend<'_>,
        entry: &AuditEntry,
    ) -> Result<InvitationChange, StoreError> {
        let postgres = self.is_postgres();
        let at = now();
        let since = Ts::from(at.get() - TimeDelta::hours(24));
        let member_sql =
            format!("SELECT {MEMBER_COLUMNS} FROM users WHERE id = $1 AND brand_id = $2 AND status = 'invited'");
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(invitation_lock(resend.user_id))
                    .execute(&mut *tx)
                    .await?;
            }
            let member: Option<MemberRecord> =
                sqlx::query_as(&member_sql).bind(resend.user_id).bind(resend.brand_id).fetch_optional(&mut *tx).await?;
            let Some(member) = member else {
                return Ok(InvitationChange::NotPending);
            };
            let sent: i64 =
                sqlx::query_scalar("SELECT count(*) FROM invitations WHERE user_id = $1 AND created_at > $2")
                    .bind(resend.user_id)
                    .bind(since)
                    .fetch_one(&mut *tx)
                    .await?;
            if sent >= resend.links_per_day {
                return Ok(InvitationChange::TooFrequent);
            }
            insert_invitation((&mut *tx).into(), resend.user_id, resend.token_hash, at, resend.expires_at).await?;
            record_audit((&mut *tx).into(), entry).await?;
            if let Some(mail) = &resend.mail {
                enqueue_mail((&mut *tx).into(), self.sealer()?, mail).await?;
            }
            tx.commit().await?;
            Ok(InvitationChange::Done(member))
        })
    }

    /// Cancels the invitation of a member who has not joined: their links stop working and
    /// they leave the team (status `removed`, so their email may be invited again), with
    /// `entry` recorded, in one transaction.
    pub async fn cancel_invitation(
        &self,
        brand_id: i64,
        user_id: i64,
        entry: &AuditEntry,
    ) -> Result<InvitationChange, StoreError> {
        let at = now();
        let member_sql =
            format!("SELECT {MEMBER_COLUMNS} FROM users WHERE id = $1 AND brand_id = $2 AND status = 'removed'");
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "UPDATE invitations SET used_at = $1
                 WHERE used_at IS NULL
                   AND user_id IN (SELECT id FROM users WHERE id = $2 AND brand_id = $3 AND status = 'invited')",
            )
            .bind(at)
            .bind(user_id)
            .bind(brand_id)
            .execute(&mut *tx)
            .await?;
            let cancelled = sqlx::query(
                "UPDATE users SET status = 'removed', removed_at = $1 WHERE id = $2 AND brand_id = $3 AND status = 'invited'",
            )
            .bind(at)
            .bind(user_id)
            .bind(brand_id)
            .execute(&mut *tx)
            .await?;
            if cancelled.rows_affected() == 0 {
                return Ok(InvitationChange::NotPending);
            }
            record_audit((&mut *tx).into(), entry).await?;
            let member = sqlx::query_as(&member_sql).bind(user_id).bind(brand_id).fetch_one(&mut *tx).await?;
            tx.commit().await?;
            Ok(InvitationChange::Done(member))
        })
    }
}
