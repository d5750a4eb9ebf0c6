//! How the store decodes the read models' columns that need more than a field's type.

use crate::payout::CreditDestination;

/// The stored `credit_destination` (nullable text), for decoding into the enum.
#[derive(sqlx::Type)]
#[sqlx(transparent)]
pub(super) struct Destination(Option<String>);

impl TryFrom<Destination> for Option<CreditDestination> {
    type Error = crate::wire::UnknownValue;
    fn try_from(stored: Destination) -> Result<Self, Self::Error> {
        stored.0.map(CreditDestination::try_from).transpose()
    }
}
