//! Brand settings: the public profile, the billing entity, the warehouse address book and
//! the time zone of the dashboard's pages.
//!
//! Each body is parsed by one function into a value that holds only valid, normalised
//! fields, reporting every bad field at once. Bodies reject unknown fields.

mod billing;
mod countries;
mod fields;
mod profile;
mod shapes;
mod time_zone;
mod warehouse;

pub use billing::{Billing, BillingEdit, BillingPatch, BILLING_BODY};
pub use fields::EitherWay;
pub use profile::{BrandProfile, ProfileEdit, ProfilePatch, PROFILE_BODY};
pub use shapes::{
    CompanyNumber, Country, Email, HexColour, PhoneNumber, PublicHttpsUrl, UkPostcode, UkVatNumber, UNITED_KINGDOM,
};
pub use time_zone::{TimeZone, DEFAULT_TIME_ZONE};
pub use warehouse::{
    NewWarehouse, Warehouse, WarehouseChange, WarehouseChanges, WarehouseEdit, WarehouseId, WarehousePatch,
    WAREHOUSE_BODY,
};
