//! The audit log's vocabulary: who did what to which thing. Entries are written by the use
//! cases in the transaction of the change they record and never edited.

use crate::user::{Actor, Via};
use crate::wire::wire_names;

/// What the audit log's `actor.type` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorType {
    User,
    Key,
    Operator,
}

wire_names!(ActorType { User => "user", Key => "key", Operator => "operator" });

/// Everything the audit log records, by its name in `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditAction {
    SignInSucceeded,
    SignInFailed,
    /// A sign-in refused because the account or the address is locked out.
    SignInLocked,
    SignedOut,
    PasswordChanged,
    /// A wrong current password on the password form.
    PasswordChangeFailed,
    /// A password change refused unchecked: the account or the address is locked out.
    PasswordChangeLocked,
    /// A link to choose a new password sent (asked for by the user, or sent by an admin).
    PasswordResetSent,
    /// A new password chosen with a reset link.
    PasswordReset,
    TotpEnrolled,
    /// The brand's rule that everyone signs in with a two-step code, turned on or off.
    TotpRequirementChanged,
    /// A recovery code used instead of a two-step code at sign-in.
    RecoveryCodeUsed,
    /// A new set of recovery codes made (the old ones no longer work).
    RecoveryCodesRenewed,
    /// The user turned their own two-step sign-in off.
    TotpDisabled,
    /// An admin reset a member's two-step sign-in (the member sets it up again).
    TotpReset,
    KeyCreated,
    KeyRolled,
    KeyRevoked,
    MemberInvited,
    /// A fresh invitation link sent to someone who has not joined (the old one stops working).
    InvitationResent,
    /// An invitation withdrawn before it was accepted: its link stops working.
    InvitationCancelled,
    /// An invitation accepted: the member set a password.
    MemberJoined,
    MemberRoleChanged,
    MemberRemoved,
    SettingsUpdated,
    WarehousesUpdated,
    WebhookUpdated,
    WebhookSecretRotated,
    WebhookTestSent,
    DeliveriesReplayed,
    CollectionScheduled,
    /// A scheduled collection moved to another day.
    CollectionRescheduled,
    /// A scheduled collection withdrawn: the order waits for a date again.
    CollectionCancelled,
    RemittanceIssued,
    CreditCodeRedeemed,
    /// A listing created one at a time (the API or the dashboard).
    ListingCreated,
    /// A listing's fields changed.
    ListingUpdated,
    /// A photo added, removed or made the cover.
    ListingPhotosChanged,
    ListingDeleted,
    /// A spreadsheet's rows saved: listings created and updated together.
    ListingsImported,
}

wire_names!(AuditAction {
    SignInSucceeded => "sign_in.succeeded",
    SignInFailed => "sign_in.failed",
    SignInLocked => "sign_in.locked",
    SignedOut => "sign_out",
    PasswordChanged => "password.changed",
    PasswordChangeFailed => "password.change_failed",
    PasswordChangeLocked => "password.change_locked",
    PasswordResetSent => "password.reset_sent",
    PasswordReset => "password.reset",
    TotpEnrolled => "two_step.enrolled",
    TotpRequirementChanged => "two_step.requirement_changed",
    RecoveryCodeUsed => "two_step.recovery_code_used",
    RecoveryCodesRenewed => "two_step.recovery_codes_renewed",
    TotpDisabled => "two_step.disabled",
    TotpReset => "two_step.reset",
    KeyCreated => "key.created",
    KeyRolled => "key.rolled",
    KeyRevoked => "key.revoked",
    MemberInvited => "member.invited",
    InvitationResent => "member.invitation_resent",
    InvitationCancelled => "member.invitation_cancelled",
    MemberJoined => "member.joined",
    MemberRoleChanged => "member.role_changed",
    MemberRemoved => "member.removed",
    SettingsUpdated => "settings.updated",
    WarehousesUpdated => "warehouses.updated",
    WebhookUpdated => "webhook.updated",
    WebhookSecretRotated => "webhook.secret_rotated",
    WebhookTestSent => "webhook.test_sent",
    DeliveriesReplayed => "webhook.deliveries_replayed",
    CollectionScheduled => "collection.scheduled",
    CollectionRescheduled => "collection.rescheduled",
    CollectionCancelled => "collection.cancelled",
    RemittanceIssued => "remittance.issued",
    CreditCodeRedeemed => "credit_code.redeemed",
    ListingCreated => "listing.created",
    ListingUpdated => "listing.updated",
    ListingPhotosChanged => "listing.photos_changed",
    ListingDeleted => "listing.deleted",
    ListingsImported => "listings.imported",
});

impl AuditAction {
    /// The action as people read it (the dashboard's audit log; the API keeps the name).
    pub fn words(self) -> &'static str {
        match self {
            Self::SignInSucceeded => "Signed in",
            Self::SignInFailed => "Sign-in failed",
            Self::SignInLocked => "Sign-in refused (locked out)",
            Self::SignedOut => "Signed out",
            Self::PasswordChanged => "Password changed",
            Self::PasswordChangeFailed => "Password change failed (wrong current password)",
            Self::PasswordChangeLocked => "Password change refused (locked out)",
            Self::PasswordResetSent => "Password reset link sent",
            Self::PasswordReset => "Password reset with a link",
            Self::TotpEnrolled => "Two-step sign-in set up",
            Self::TotpRequirementChanged => "Two-step rule for the team changed",
            Self::RecoveryCodeUsed => "Recovery code used",
            Self::RecoveryCodesRenewed => "New recovery codes made",
            Self::TotpDisabled => "Two-step sign-in turned off",
            Self::TotpReset => "Member's two-step sign-in reset",
            Self::KeyCreated => "API key created",
            Self::KeyRolled => "API key rolled",
            Self::KeyRevoked => "API key revoked",
            Self::MemberInvited => "Member invited",
            Self::InvitationResent => "Invitation sent again",
            Self::InvitationCancelled => "Invitation cancelled",
            Self::MemberJoined => "Member joined",
            Self::MemberRoleChanged => "Member's role changed",
            Self::MemberRemoved => "Member removed",
            Self::SettingsUpdated => "Settings changed",
            Self::WarehousesUpdated => "Warehouses changed",
            Self::WebhookUpdated => "Webhook endpoint changed",
            Self::WebhookSecretRotated => "Webhook secret rotated",
            Self::WebhookTestSent => "Test event sent",
            Self::DeliveriesReplayed => "Deliveries replayed",
            Self::CollectionScheduled => "Collection scheduled",
            Self::CollectionRescheduled => "Collection moved to another day",
            Self::CollectionCancelled => "Collection cancelled",
            Self::RemittanceIssued => "Statement issued",
            Self::CreditCodeRedeemed => "Credit code spent",
            Self::ListingCreated => "Listing created",
            Self::ListingUpdated => "Listing changed",
            Self::ListingPhotosChanged => "Listing photos changed",
            Self::ListingDeleted => "Listing deleted",
            Self::ListingsImported => "Listings imported from a spreadsheet",
        }
    }

    /// The words of a stored action, or the name as it is if no code wrote it.
    pub fn words_of(name: &str) -> &str {
        name.parse::<Self>().map_or(name, |a| a.words())
    }
}

/// The kinds of entry the dashboard's audit log filters by: groups of actions, by the
/// start of their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditTopic {
    SignIn,
    Keys,
    Team,
    Settings,
    Listings,
    Money,
}

wire_names!(AuditTopic {
    SignIn => "sign-in",
    Keys => "keys",
    Team => "team",
    Settings => "settings",
    Listings => "listings",
    Money => "money",
});

impl AuditTopic {
    /// The topic as the filter's choice says it.
    pub fn words(self) -> &'static str {
        match self {
            Self::SignIn => "Sign-ins, passwords and two-step",
            Self::Keys => "API keys",
            Self::Team => "Team",
            Self::Settings => "Settings, warehouses and webhook",
            Self::Listings => "Listings and imports",
            Self::Money => "Collections, credit codes and statements",
        }
    }

    /// The starts of the action names the topic holds.
    pub fn prefixes(self) -> &'static [&'static str] {
        match self {
            Self::SignIn => &["sign_in.", "sign_out", "password.", "two_step."],
            Self::Keys => &["key."],
            Self::Team => &["member."],
            Self::Settings => &["settings.", "warehouses.", "webhook."],
            Self::Listings => &["listing.", "listings."],
            Self::Money => &["collection.", "credit_code.", "remittance."],
        }
    }

    /// The topic an action belongs to.
    pub fn of(action: AuditAction) -> Self {
        let name = action.as_str();
        Self::ALL.iter().copied().find(|t| t.prefixes().iter().any(|p| name.starts_with(p))).unwrap_or(Self::Settings)
    }
}

/// Who the entry names as the actor: `{type, id, display}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditActor {
    pub kind: ActorType,
    /// The user's or the key's id; none for the operator.
    pub id: Option<i64>,
    pub display: String,
}

impl AuditActor {
    pub fn operator() -> Self {
        Self { kind: ActorType::Operator, id: None, display: "operator".into() }
    }

    /// A person acting in the dashboard (or failing to sign in as one).
    pub fn user(id: i64, name: &str) -> Self {
        Self { kind: ActorType::User, id: Some(id), display: name.to_owned() }
    }
}

impl From<&Actor> for AuditActor {
    fn from(actor: &Actor) -> Self {
        match actor.via {
            Via::Key(id) => {
                Self { kind: ActorType::Key, id: Some(id), display: format!("{} (API key)", actor.user_name) }
            }
            Via::Session => Self::user(actor.user_id, &actor.user_name),
            Via::Operator => Self::operator(),
        }
    }
}

/// One entry to append to a brand's audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    pub brand_id: i64,
    pub actor: AuditActor,
    pub action: AuditAction,
    /// What was acted on, as `kind:id` (`key:12`, `user:7`, `webhook`, `settings:payouts`).
    pub target: Option<String>,
    /// The client address, when the action came over the network.
    pub ip: Option<String>,
}

impl AuditEntry {
    /// The same entry about `target`.
    pub fn about(&self, target: String) -> Self {
        Self { target: Some(target), ..self.clone() }
    }

    /// An entry for what `actor` did, from their address.
    pub fn by(actor: &Actor, action: AuditAction, target: impl Into<Option<String>>) -> Self {
        Self {
            brand_id: actor.brand_id,
            actor: AuditActor::from(actor),
            action,
            target: target.into(),
            ip: actor.ip.map(|ip| ip.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every action is in exactly one topic, found by its name.
    #[test]
    fn every_action_belongs_to_one_topic() {
        for action in AuditAction::ALL {
            let name = action.as_str();
            let topics: Vec<AuditTopic> =
                AuditTopic::ALL.iter().copied().filter(|t| t.prefixes().iter().any(|p| name.starts_with(p))).collect();
            assert_eq!(topics, [AuditTopic::of(*action)], "{name}");
        }
    }
    use crate::user::Role;

    fn actor(via: Via) -> Actor {
        Actor {
            brand_id: 1,
            brand_slug: "acme".into(),
            user_id: 7,
            user_name: "Ada".into(),
            role: Role::Admin,
            via,
            ip: "203.0.113.9".parse().ok(),
        }
    }

    #[test]
    fn the_actor_is_named_by_how_it_came() {
        let key = AuditEntry::by(&actor(Via::Key(12)), AuditAction::KeyCreated, Some("key:13".to_owned()));
        assert_eq!((key.actor.kind, key.actor.id), (ActorType::Key, Some(12)));
        assert_eq!(key.ip.as_deref(), Some("203.0.113.9"));
        let user = AuditEntry::by(&actor(Via::Session), AuditAction::SignedOut, None);
        assert_eq!((user.actor.kind, user.actor.id, user.actor.display.as_str()), (ActorType::User, Some(7), "Ada"));
        let op = AuditEntry::by(&actor(Via::Operator), AuditAction::RemittanceIssued, None);
        assert_eq!((op.actor.kind, op.actor.id), (ActorType::Operator, None));
    }

    #[test]
    fn action_names_round_trip() {
        for action in AuditAction::ALL {
            assert_eq!(action.as_str().parse::<AuditAction>().ok(), Some(*action));
        }
    }
}
