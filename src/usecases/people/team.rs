//! The team: members, roles, removal with transfer of listings.
