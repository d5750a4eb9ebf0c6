//! The brand's team (decisions 8.5): listing, inviting (and sending an invitation again or
//! cancelling it), changing roles and removing members. Every change writes its audit
//! entry in its own transaction.

use chrono::Utc;

use super::invitations::{invitation_mail, Invitation};
use crate::usecases::refusal::Refusal;
use crate::usecases::Core;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::limits::INVITATION_LINKS_PER_DAY;
use rehome_domain::outcome::Outcome;
use rehome_domain::team::{MemberInvite, RoleChange};
use rehome_domain::time::Ts;
use rehome_domain::user::{Actor, Admin};
use rehome_domain::view::MemberRecord;
use rehome_domain::FieldError;
use rehome_store::{
    InvitationChange, InvitationResend, MemberInsert, MemberRemoval, NewMail, NewMember, RemovalOutcome, RoleUpdate,
    StoreError,
};

/// A member just invited, with the link to hand over.
#[derive(Debug)]
pub struct Invited {
    pub member: MemberRecord,
    pub invite_url: String,
    pub invite_expires_at: Ts,
}

#[derive(Debug, thiserror::Error)]
pub enum InviteError {
    #[error("invalid invitation")]
    Invalid(Vec<FieldError>),
    /// A live user of any brand has the email.
    #[error("the email is taken")]
    EmailTaken,
    #[error("no randomness for an invitation token: {0}")]
    Random(getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<InviteError> for Refusal {
    fn from(e: InviteError) -> Self {
        match e {
            InviteError::Invalid(reasons) => reasons.into(),
            InviteError::EmailTaken => Outcome::EmailTaken.into(),
            InviteError::Random(e) => Refusal::internal("no randomness", e),
            InviteError::Store(e) => e.into(),
        }
    }
}

/// Why an invitation was not sent again or cancelled.
#[derive(Debug, thiserror::Error)]
pub enum InvitationError {
    /// No member of the brand with this id is waiting on an invitation.
    #[error("no invitation is pending for this member")]
    NotPending,
    /// [`INVITATION_LINKS_PER_DAY`] links were sent to them within 24 hours.
    #[error("too many invitation links for this member today")]
    TooFrequent,
    #[error("no randomness for an invitation token: {0}")]
    Random(getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<InvitationError> for Refusal {
    fn from(e: InvitationError) -> Self {
        match e {
            InvitationError::NotPending => Outcome::InvitationNotPending.into(),
            InvitationError::TooFrequent => Outcome::InvitationsTooFrequent.into(),
            InvitationError::Random(e) => Refusal::internal("no randomness", e),
            InvitationError::Store(e) => e.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RoleError {
    #[error("invalid role change")]
    Invalid(Vec<FieldError>),
    #[error("no such member")]
    NotFound,
    #[error("the brand would be left without an active admin")]
    LastAdmin,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<RoleError> for Refusal {
    fn from(e: RoleError) -> Self {
        match e {
            RoleError::Invalid(reasons) => reasons.into(),
            RoleError::NotFound => Outcome::MemberNotFound.into(),
            RoleError::LastAdmin => Outcome::LastAdmin.into(),
            RoleError::Store(e) => e.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    #[error("no such member")]
    NotFound,
    #[error("the caller cannot remove their own user")]
    CannotRemoveSelf,
    #[error("transfer_to is not an active member of the brand")]
    TransferInvalid,
    #[error("the brand would be left without an active admin")]
    LastAdmin,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A `transfer_to` that is not an active member of the brand is a reason on that field.
impl From<RemoveError> for Refusal {
    fn from(e: RemoveError) -> Self {
        match e {
            RemoveError::NotFound => Outcome::MemberNotFound.into(),
            RemoveError::CannotRemoveSelf => Outcome::CannotRemoveSelf.into(),
            RemoveError::TransferInvalid => Refusal::field("transfer_to", "transfer_to_invalid"),
            RemoveError::LastAdmin => Outcome::LastAdmin.into(),
            RemoveError::Store(e) => e.into(),
        }
    }
}

/// The brand's invited and active members, in order of creation.
pub async fn members(core: &Core, actor: &Admin) -> Result<Vec<MemberRecord>, StoreError> {
    core.store.members(actor.brand_id, false).await
}

/// Invites someone: the user (status `invited`), a 72-hour link, the audit entry and, when
/// mail is configured, the email carrying the link, all in one transaction.
pub async fn invite(core: &Core, actor: &Admin, request: &MemberInvite) -> Result<Invited, InviteError> {
    let invitation = Invitation::generate(core.config.public_url(), Utc::now()).map_err(InviteError::Random)?;
    let brand_name = brand_name(core, actor).await?;
    let (subject, text) = invitation_mail(&brand_name, &actor.user_name, &invitation.url, invitation.expires_at);
    let mail = core.config.mail_enabled().then(|| NewMail {
        brand_id: Some(actor.brand_id),
        to: &request.email,
        subject: &subject,
        text: &text,
        html: None,
        attachment: None,
    });
    let new = NewMember {
        brand_id: actor.brand_id,
        name: &request.display_name,
        email: &request.email,
        role: request.role,
        token_hash: &invitation.token_hash,
        expires_at: invitation.expires_at,
        mail,
    };
    let entry = |id: i64| AuditEntry::by(actor, AuditAction::MemberInvited, Some(format!("user:{id}")));
    match core.store.invite_member(&new, entry).await? {
        MemberInsert::Invited(member) => {
            if core.config.mail_enabled() {
                core.mail.wake();
            }
            Ok(Invited { member, invite_url: invitation.url, invite_expires_at: invitation.expires_at })
        }
        MemberInsert::EmailTaken => Err(InviteError::EmailTaken),
    }
}

/// The brand's name as mail and pages say it (the slug when the brand is gone).
async fn brand_name(core: &Core, actor: &Actor) -> Result<String, StoreError> {
    Ok(match core.store.brand_by_slug(&actor.brand_slug).await? {
        Some(brand) => brand.name,
        None => actor.brand_slug.clone(),
    })
}

/// A link sent again.
#[derive(Debug)]
pub struct Resent {
    pub member: MemberRecord,
    pub invite_url: String,
    pub invite_expires_at: Ts,
}

/// Sends a member who has not joined yet a fresh invitation link: the earlier links stop
/// working, the mail goes out through the outbox (when mail is configured), and the entry
/// `member.invitation_resent` is written, in one transaction. At most
/// [`INVITATION_LINKS_PER_DAY`] links (the first included) go to one person in 24 hours.
pub async fn resend_invitation(core: &Core, actor: &Admin, user_id: i64) -> Result<Resent, InvitationError> {
    let Some(member) = core.store.member(actor.brand_id, user_id).await? else {
        return Err(InvitationError::NotPending);
    };
    let invitation = Invitation::generate(core.config.public_url(), Utc::now()).map_err(InvitationError::Random)?;
    let brand = brand_name(core, actor).await?;
    let (subject, text) = invitation_mail(&brand, &actor.user_name, &invitation.url, invitation.expires_at);
    let mail = core.config.mail_enabled().then(|| NewMail {
        brand_id: Some(actor.brand_id),
        to: &member.email,
        subject: &subject,
        text: &text,
        html: None,
        attachment: None,
    });
    let resend = InvitationResend {
        brand_id: actor.brand_id,
        user_id,
        token_hash: &invitation.token_hash,
        expires_at: invitation.expires_at,
        links_per_day: INVITATION_LINKS_PER_DAY,
        mail,
    };
    let entry = AuditEntry::by(actor, AuditAction::InvitationResent, Some(format!("user:{user_id}")));
    match core.store.resend_invitation(&resend, &entry).await? {
        InvitationChange::Done(member) => {
            if core.config.mail_enabled() {
                core.mail.wake();
            }
            Ok(Resent { member, invite_url: invitation.url, invite_expires_at: invitation.expires_at })
        }
        InvitationChange::NotPending => Err(InvitationError::NotPending),
        InvitationChange::TooFrequent => Err(InvitationError::TooFrequent),
    }
}

/// Cancels the invitation of a member who has not joined: their links stop working and
/// they are no longer on the team (their email may be invited again); the entry
/// `member.invitation_cancelled` is written in the same transaction.
pub async fn cancel_invitation(core: &Core, actor: &Admin, user_id: i64) -> Result<MemberRecord, InvitationError> {
    let entry = AuditEntry::by(actor, AuditAction::InvitationCancelled, Some(format!("user:{user_id}")));
    match core.store.cancel_invitation(actor.brand_id, user_id, &entry).await? {
        InvitationChange::Done(member) => Ok(member),
        InvitationChange::NotPending | InvitationChange::TooFrequent => Err(InvitationError::NotPending),
    }
}

/// Sets a member's role; refused when the brand would be left without an active admin.
pub async fn change_role(
    core: &Core,
    actor: &Admin,
    user_id: i64,
    change: &RoleChange,
) -> Result<MemberRecord, RoleError> {
    let entry = AuditEntry::by(actor, AuditAction::MemberRoleChanged, Some(format!("user:{user_id}")));
    match core.store.change_role(actor.brand_id, user_id, change.role, entry).await? {
        RoleUpdate::Done(member) => Ok(member),
        RoleUpdate::NotFound => Err(RoleError::NotFound),
        RoleUpdate::LastAdmin => Err(RoleError::LastAdmin),
    }
}

/// Takes a member off the team: their sessions end, their keys are revoked and their
/// listings go to `transfer_to` (default: the caller's user). Answers how many listings moved.
pub async fn remove(core: &Core, actor: &Admin, user_id: i64, transfer_to: Option<i64>) -> Result<u64, RemoveError> {
    if user_id == actor.user_id {
        return Err(RemoveError::CannotRemoveSelf);
    }
    let removal =
        MemberRemoval { brand_id: actor.brand_id, user_id, transfer_to: transfer_to.unwrap_or(actor.user_id) };
    let entry = AuditEntry::by(actor, AuditAction::MemberRemoved, Some(format!("user:{user_id}")));
    match core.store.remove_member(removal, entry).await? {
        RemovalOutcome::Removed { listings_transferred } => Ok(listings_transferred),
        RemovalOutcome::NotFound => Err(RemoveError::NotFound),
        RemovalOutcome::TransferInvalid => Err(RemoveError::TransferInvalid),
        RemovalOutcome::LastAdmin => Err(RemoveError::LastAdmin),
    }
}
