//! A listing's page (its photos, its money, its fields) and the create and edit forms.
//! The forms are multipart (a photo rides along on create, and faults are a list) and
//! post to the use cases the API's `POST` and `PATCH /v1/listings` call: a refused form
//! comes back with the values given and the API's codes beside the fields.

use std::collections::HashMap;

use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{Map, Value};

use super::extract::{admin_multipart, PageError, SignedIn};
use super::pages::{form_number, render, require_admin, when, Chrome, FieldErrors};
use crate::app::AppState;
use crate::domain::listing::{Channel, DELIVERY_CONTRIBUTIONS_GBP};
use crate::domain::money::UnitMoney;
use crate::domain::taxonomy::{CATEGORIES, CONDITIONS, FAULTS};
use crate::store::ListingRecord;
use crate::usecases::listings::{self, CreateListingError, GetListingError, UpdateListingError};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::photos::{self, PhotoUpload, UploadPhotoError};
use crate::usecases::wallet::statement::pounds;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/listings/new", get(new_page).post(create))
        .route("/listings/{id}", get(detail).post(update))
        .route("/listings/{id}/edit", get(edit_page))
}

/// The form's fields as text, keyed by the API's field names (faults joined by commas).
#[derive(Debug, Clone, Default)]
pub struct Values(HashMap<String, String>);

impl Values {
    pub fn get(&self, name: &str) -> &str {
        self.0.get(name).map_or("", String::as_str)
    }

    pub fn has_fault(&self, fault: &&str) -> bool {
        self.get("faults").split(',').any(|f| f == *fault)
    }

    fn of(record: &ListingRecord) -> Self {
        let f = &record.fields;
        let mut v = HashMap::new();
        let mut put = |k: &str, value: String| {
            v.insert(k.to_owned(), value);
        };
        put("title", f.title.clone());
        put("price_gbp", pounds(f.regular_price.get()));
        put("sale_price_gbp", f.sale_price.map(|p| pounds(p.get())).unwrap_or_default());
        put("channel", f.channel.as_str().to_owned());
        put("status", f.status.as_str().to_owned());
        put("quantity", f.quantity.to_string());
        put("category", f.category.clone());
        put("condition", f.condition.as_str().to_owned());
        put("faults", f.faults.join(","));
        put("delivery_contribution_gbp", f.delivery_contribution_gbp.to_string());
        put("sku", f.sku.clone().unwrap_or_default());
        put("description", f.description.clone().unwrap_or_default());
        Self(v)
    }
}

#[derive(askama::Template)]
#[template(path = "dashboard/listing_form.html")]
pub struct ListingFormPage {
    pub chrome: Chrome,
    pub csrf: String,
    /// `None` for a new listing.
    pub id: Option<i64>,
    pub values: Values,
    pub errors: FieldErrors,
    pub categories: &'static [&'static str],
    pub conditions: Vec<(&'static str, &'static str)>,
    pub faults: Vec<(&'static str, &'static str)>,
    pub deliveries: &'static [u32],
}

impl ListingFormPage {
    fn new(session: &LiveSession, id: Option<i64>, values: Values, errors: FieldErrors) -> Self {
        Self {
            chrome: Chrome::signed_in(session),
            csrf: session.record.csrf_token.clone(),
            id,
            values,
            errors,
            categories: CATEGORIES,
            conditions: CONDITIONS.iter().map(|c| (c.value, c.label)).collect(),
            faults: FAULTS.iter().map(|c| (c.value, c.label)).collect(),
            deliveries: DELIVERY_CONTRIBUTIONS_GBP,
        }
    }

    /// The reasons of fields the form has no place for (measurements, images…), joined.
    pub fn other_errors(&self) -> String {
        let shown = |field: &str| TEXT_FIELDS.contains(&field) || ["faults", "photo", "listing"].contains(&field);
        self.errors.0.iter().filter(|e| !shown(&e.field)).map(|e| e.code.as_str()).collect::<Vec<_>>().join(", ")
    }

    pub fn delivery_selected(&self, amount: &u32) -> bool {
        self.values.get("delivery_contribution_gbp") == amount.to_string()
    }
}

#[derive(askama::Template)]
#[template(path = "dashboard/listing.html")]
pub struct ListingPage {
    pub chrome: Chrome,
    pub is_admin: bool,
    pub id: i64,
    pub values: Values,
    pub seller: String,
    pub created: String,
    pub updated: String,
    pub views: i64,
    /// `(label, GBP)` of one unit's money.
    pub money: Vec<(&'static str, String)>,
    /// `(url or "", status, error)` of each image, in order.
    pub images: Vec<(String, &'static str, String)>,
    pub notice: Option<&'static str>,
}

async fn listing_view(
    state: &AppState,
    session: &LiveSession,
    id: i64,
    notice: Option<&'static str>,
) -> Result<Response, PageError> {
    let record = match listings::get(&state.core, &session.actor(), id).await {
        Ok(record) => record,
        Err(GetListingError::NotFound) => return Err(PageError::Redirect("/dashboard/listings")),
        Err(GetListingError::Store(e)) => return Err(e.into()),
    };
    let f = &record.fields;
    let unit = UnitMoney::of(f.channel, f.price(), f.delivery_contribution_gbp);
    let mut money = vec![("Price", pounds(unit.price.get()))];
    if f.channel == Channel::Clearance {
        money.push(("Commission (15%)", pounds(unit.commission.get())));
        money.push(("VAT on the commission (20%)", pounds(unit.vat.get())));
    }
    money.push(("Delivery contribution", pounds(unit.delivery.get())));
    money.push(("Your payout per unit", pounds(unit.payout.get())));
    let images = record
        .images
        .iter()
        .map(|i| (i.url.clone().unwrap_or_default(), i.status.as_str(), i.error.clone().unwrap_or_default()))
        .collect();
    let page = ListingPage {
        chrome: Chrome::signed_in(session),
        is_admin: session.is_admin(),
        id,
        values: Values::of(&record),
        seller: record.seller_name.clone(),
        created: when(record.created_at.get()),
        updated: when(record.updated_at.get()),
        views: record.view_count,
        money,
        images,
        notice,
    };
    Ok(render(StatusCode::OK, &page))
}

fn listing_id(id: &str) -> Result<i64, PageError> {
    id.parse::<i64>().ok().filter(|id| *id > 0).ok_or(PageError::Redirect("/dashboard/listings"))
}

async fn detail(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    listing_view(&state, &session, listing_id(&id)?, None).await
}

async fn new_page(SignedIn(session): SignedIn) -> Result<Response, PageError> {
    require_admin(&session)?;
    let mut values = Values::default();
    values.0.insert("channel".into(), "clearance".into());
    values.0.insert("quantity".into(), "1".into());
    values.0.insert("delivery_contribution_gbp".into(), "0".into());
    values.0.insert("status".into(), "active".into());
    Ok(render(StatusCode::OK, &ListingFormPage::new(&session, None, values, FieldErrors::default())))
}

async fn edit_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    require_admin(&session)?;
    let id = listing_id(&id)?;
    let record = match listings::get(&state.core, &session.actor(), id).await {
        Ok(record) => record,
        Err(GetListingError::NotFound) => return Err(PageError::Redirect("/dashboard/listings")),
        Err(GetListingError::Store(e)) => return Err(e.into()),
    };
    Ok(render(StatusCode::OK, &ListingFormPage::new(&session, Some(id), Values::of(&record), FieldErrors::default())))
}

/// The multipart form: its text fields (faults gathered into one list) and its photo.
struct Posted {
    csrf: String,
    values: Values,
    faults: Vec<String>,
    photo: Option<(Vec<u8>, String)>,
}

const TEXT_FIELDS: [&str; 11] = [
    "title",
    "price_gbp",
    "sale_price_gbp",
    "channel",
    "status",
    "quantity",
    "category",
    "condition",
    "delivery_contribution_gbp",
    "sku",
    "description",
];

async fn read_form(mut multipart: Multipart) -> Result<Posted, PageError> {
    let mut posted = Posted { csrf: String::new(), values: Values::default(), faults: Vec::new(), photo: None };
    while let Some(field) = multipart.next_field().await.map_err(|_| PageError::BadForm)? {
        let name = field.name().unwrap_or_default().to_owned();
        let filename = field.file_name().map(str::to_owned);
        let bytes = field.bytes().await.map_err(|_| PageError::BadForm)?;
        match name.as_str() {
            "csrf" => posted.csrf = String::from_utf8_lossy(&bytes).into_owned(),
            "faults" => posted.faults.push(String::from_utf8_lossy(&bytes).into_owned()),
            "photo" if !bytes.is_empty() => posted.photo = Some((bytes.to_vec(), filename.unwrap_or_default())),
            other if TEXT_FIELDS.contains(&other) => {
                posted.values.0.insert(other.to_owned(), String::from_utf8_lossy(&bytes).into_owned());
            }
            _ => {}
        }
    }
    posted.values.0.insert("faults".to_owned(), posted.faults.join(","));
    Ok(posted)
}

/// The API body of the form: numbers as JSON numbers (their text kept exactly), the rest as
/// text; an empty optional field is left out on create and cleared (`null`) on edit.
fn body_of(posted: &Posted, editing: bool) -> Map<String, Value> {
    let mut body = Map::new();
    for name in TEXT_FIELDS {
        let text = posted.values.get(name).trim();
        let numeric = matches!(name, "price_gbp" | "sale_price_gbp" | "quantity" | "delivery_contribution_gbp");
        let value = if text.is_empty() {
            if !editing || !matches!(name, "sale_price_gbp" | "sku" | "description") {
                continue;
            }
            Value::Null
        } else if numeric {
            form_number(text)
        } else {
            Value::String(text.to_owned())
        };
        body.insert(name.to_owned(), value);
    }
    body.insert("faults".to_owned(), Value::Array(posted.faults.iter().cloned().map(Value::String).collect()));
    body
}

async fn create(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    multipart: Multipart,
) -> Result<Response, PageError> {
    let posted = read_form(multipart).await?;
    admin_multipart(&session, &posted.csrf)?;
    let actor = session.actor();
    let mut body = body_of(&posted, false);
    if let Some((bytes, filename)) = posted.photo.clone() {
        match photos::upload(&state.core, &actor, PhotoUpload { bytes, filename: Some(filename) }).await {
            Ok(photo) => {
                body.insert("attachment_ids".to_owned(), Value::from(vec![photo.id]));
            }
            Err(UploadPhotoError::UnsupportedImage) => {
                return refused(&session, None, posted, "photo", "unsupported_mime")
            }
            Err(UploadPhotoError::TooManyPixels { .. }) => {
                return refused(&session, None, posted, "photo", "image_too_large")
            }
            Err(e) => return Err(PageError::Internal(e.to_string())),
        }
    }
    match listings::create(&state.core, &actor, &body).await {
        Ok(saved) => Ok(Redirect::to(&format!("/dashboard/listings/{}", saved.record.id)).into_response()),
        Err(CreateListingError::Invalid(errors)) => {
            let page = ListingFormPage::new(&session, None, posted.values, FieldErrors(errors));
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
        Err(CreateListingError::Store(e)) => Err(e.into()),
    }
}

fn refused(
    session: &LiveSession,
    id: Option<i64>,
    posted: Posted,
    field: &str,
    code: &str,
) -> Result<Response, PageError> {
    let errors = FieldErrors(vec![crate::domain::FieldError::new(field, code)]);
    Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &ListingFormPage::new(session, id, posted.values, errors)))
}

async fn update(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
    multipart: Multipart,
) -> Result<Response, PageError> {
    let id = listing_id(&id)?;
    let posted = read_form(multipart).await?;
    admin_multipart(&session, &posted.csrf)?;
    let body = body_of(&posted, true);
    match listings::update(&state.core, &session.actor(), id, &body, None).await {
        Ok(_) => listing_view(&state, &session, id, Some("Listing saved.")).await,
        Err(UpdateListingError::Invalid(errors)) => Ok(render(
            StatusCode::UNPROCESSABLE_ENTITY,
            &ListingFormPage::new(&session, Some(id), posted.values, FieldErrors(errors)),
        )),
        Err(UpdateListingError::NotOwner) => refused(&session, Some(id), posted, "listing", "forbidden_not_owner"),
        Err(UpdateListingError::EditConflict | UpdateListingError::PreconditionFailed) => {
            refused(&session, Some(id), posted, "listing", "edit_conflict")
        }
        Err(UpdateListingError::NoFields) => refused(&session, Some(id), posted, "listing", "no_fields"),
        Err(UpdateListingError::NotFound) => Err(PageError::Redirect("/dashboard/listings")),
        Err(UpdateListingError::Store(e)) => Err(e.into()),
    }
}
