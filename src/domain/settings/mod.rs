//! Brand settings: the public profile, the billing entity and the warehouse address book.
//!
//! Each body is parsed by one function into a value that holds only valid, normalised
//! fields, reporting every bad field at once. Bodies reject unknown fields.

mod billing;
mod fields;
mod profile;
mod shapes;
mod warehouse;

pub use billing::{Billing, BillingEdit, BillingPatch, BILLING_BODY};
pub use fields::EitherWay;
pub use profile::{BrandProfile, ProfileEdit, ProfilePatch, PROFILE_BODY};
pub use shapes::{
    CompanyNumber, Country, Email, HexColour, PhoneNumber, PublicHttpsUrl, UkPostcode, UkVatNumber, UNITED_KINGDOM,
};
pub use warehouse::{
    NewWarehouse, Warehouse, WarehouseChange, WarehouseChanges, WarehouseEdit, WarehouseId, WarehousePatch,
    WAREHOUSE_BODY,
};
