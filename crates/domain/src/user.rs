//! Brands, users, roles and key scopes.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::wire::wire_names;

/// A partner user's role: only partner admins may use the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Admin,
    Member,
}

wire_names!(Role { Admin => "admin", Member => "member" });

/// Where a user stands on their brand's team.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberStatus {
    /// Invited, the invitation not yet accepted: no password, cannot sign in.
    Invited,
    Active,
    /// Taken off the team; the row stays for the listings, keys and audit entries naming it.
    Removed,
}

wire_names!(MemberStatus { Invited => "invited", Active => "active", Removed => "removed" });

/// How an actor reached the use case: what the audit log names as the actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// An API key (its id).
    Key(i64),
    /// A dashboard session.
    Session,
    /// The command line or the server itself (demo data): an operator.
    Operator,
}

/// Who acts, for which brand: the context of every use case, whichever edge (API key,
/// dashboard session, bulk import, CLI) the action came through. Outside the domain it is
/// made only by [`Actor::authenticated`] (it cannot be written as a literal there), which
/// the two checks of who is calling call: the API key's and the dashboard session's
/// (`tests/modules.rs` fails on a call anywhere else).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Actor {
    pub brand_id: i64,
    /// The brand's slug, the API's `brand_id`.
    pub brand_slug: String,
    pub user_id: i64,
    pub user_name: String,
    pub role: Role,
    /// The API key, session or operator the action came through.
    pub via: Via,
    /// The client address of the request, when there was one.
    pub ip: Option<IpAddr>,
}

impl Actor {
    /// The caller a check of credentials found: a live key's user or a signed-in session's.
    pub fn authenticated(
        brand_id: i64,
        brand_slug: String,
        user_id: i64,
        user_name: String,
        role: Role,
        via: Via,
        ip: Option<IpAddr>,
    ) -> Self {
        Self { brand_id, brand_slug, user_id, user_name, role, via, ip }
    }

    /// The one ownership rule of listings: only the user who created a listing (its
    /// seller, `seller_user_id`) may change it (`forbidden_not_owner`).
    pub fn may_change_listing_of(&self, seller_user_id: i64) -> bool {
        self.user_id == seller_user_id
    }
}

/// An actor who may act as their brand's admin: made only by [`Admin::check`], from an
/// actor whose role is admin, and by [`Admin::operator`] for the command line and the demo
/// data (`tests/modules.rs` confines both to those callers). The use cases of admin actions (every change, and the pages
/// of keys, team and audit) take an `&Admin`, so an edge that forgets to ask who is acting
/// does not compile; members read (decisions 9.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admin(Actor);

/// The actor asked to act as an admin is a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAdmin;

impl Admin {
    /// The authorisation check: `actor` as an admin, if their role is admin.
    pub fn check(actor: Actor) -> Result<Self, NotAdmin> {
        match actor.role {
            Role::Admin => Ok(Self(actor)),
            Role::Member => Err(NotAdmin),
        }
    }

    /// The operator (the command line, the server's own demo data) acting as the admin
    /// `user_id` of a brand: whoever runs the binary holds every brand's database already.
    pub fn operator(brand_id: i64, brand_slug: String, user_id: i64, user_name: String) -> Self {
        Self(Actor { brand_id, brand_slug, user_id, user_name, role: Role::Admin, via: Via::Operator, ip: None })
    }
}

impl std::ops::Deref for Admin {
    type Target = Actor;
    fn deref(&self) -> &Actor {
        &self.0
    }
}

/// What a key may do: `read` allows GET, `write` allows POST, PATCH and DELETE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes {
    pub read: bool,
    pub write: bool,
}

impl FromStr for Scopes {
    type Err = String;
    /// A comma-separated list such as `read,write`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut scopes = Scopes::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "read" => scopes.read = true,
                "write" => scopes.write = true,
                other => return Err(format!("unknown scope '{other}' (expected read or write)")),
            }
        }
        if !scopes.read && !scopes.write {
            return Err("at least one scope (read, write) is required".into());
        }
        Ok(scopes)
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<&str> = [(self.read, "read"), (self.write, "write")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// A brand slug: lower-case letters, digits and dashes, 2 to 63 characters, starting alphanumeric.
pub fn valid_slug(slug: &str) -> bool {
    (2..=63).contains(&slug.len())
        && slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && slug.as_bytes()[0].is_ascii_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actor(role: Role) -> Actor {
        Actor {
            brand_id: 1,
            brand_slug: "loaf".into(),
            user_id: 2,
            user_name: "Ada".into(),
            role,
            via: Via::Session,
            ip: None,
        }
    }

    #[test]
    fn only_an_admin_passes_the_admin_check() {
        let admin = Admin::check(actor(Role::Admin)).expect("an admin is an admin");
        assert_eq!(admin.user_id, 2);
        assert_eq!(Admin::check(actor(Role::Member)), Err(NotAdmin));
        let operator = Admin::operator(1, "loaf".into(), 2, "Ada".into());
        assert_eq!((operator.role, operator.via), (Role::Admin, Via::Operator));
    }

    #[test]
    fn scopes_parse_and_print() {
        let s: Scopes = "read, write".parse().unwrap();
        assert!(s.read && s.write);
        assert_eq!(s.to_string(), "read,write");
        assert_eq!("write".parse::<Scopes>().unwrap().to_string(), "write");
        assert!("admin".parse::<Scopes>().is_err());
        assert!("".parse::<Scopes>().is_err());
    }

    #[test]
    fn slugs() {
        assert!(valid_slug("acme-sofas"));
        assert!(valid_slug("a1"));
        assert!(!valid_slug("-acme"));
        assert!(!valid_slug("Acme"));
        assert!(!valid_slug("a"));
        assert!(!valid_slug("acme sofas"));
    }
}
