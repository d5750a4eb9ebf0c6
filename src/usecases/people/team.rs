//! The brand's team (decisions 8.5): listing, inviting, changing roles and removing
//! members. Every change writes its audit entry in its own transaction.

use chrono::Utc;

use super::invitations::{invitation_mail, Invitation};
use crate::domain::audit::{AuditAction, AuditEntry};
use crate::domain::team::{MemberInvite, RoleChange};
use crate::domain::user::Actor;
use crate::domain::FieldError;
use crate::store::{
    MemberInsert, MemberRecord, MemberRemoval, NewMail, NewMember, RemovalOutcome, RoleUpdate, StoreError, Ts,
};
use crate::usecases::Core;

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

/// The brand's invited and active members, in order of creation.
pub async fn members(core: &Core, actor: &Actor) -> Result<Vec<MemberRecord>, StoreError> {
    core.store.members(actor.brand_id, false).await
}

/// Invites someone: the user (status `invited`), a 72-hour link, the audit entry and, when
/// mail is configured, the email carrying the link, all in one transaction.
pub async fn invite(core: &Core, actor: &Actor, request: &MemberInvite) -> Result<Invited, InviteError> {
    let invitation = Invitation::generate(core.config.public_url(), Utc::now()).map_err(InviteError::Random)?;
    let brand_name = match core.store.brand_by_slug(&actor.brand_slug).await? {
        Some(brand) => brand.name,
        None => actor.brand_slug.clone(),
    };
    let (subject, text) = invitation_mail(&brand_name, &actor.user_name, &invitation.url, invitation.expires_at);
    let mail = core.config.mail_enabled().then(|| NewMail {
        brand_id: Some(actor.brand_id),
        to: &request.email,
        subject: &subject,
        text: &text,
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

/// Sets a member's role; refused when the brand would be left without an active admin.
pub async fn change_role(
    core: &Core,
    actor: &Actor,
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
pub async fn remove(core: &Core, actor: &Actor, user_id: i64, transfer_to: Option<i64>) -> Result<u64, RemoveError> {
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
