//! A listing's page (its photos, its money, its fields) and the create and edit forms.
//! The forms are multipart (a photo rides along on create, and faults are a list) and
//! post to the use cases the API's `POST` and `PATCH /v1/listings` call: a refused form
//! comes back with the values given and the API's codes beside the fields.

use crate::domain::listing::MAX_ITEMS;
use crate::web::extract::outcome_of;
use std::collections::HashMap;

use crate::http::routing::{get, post};
use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;
use serde_json::Value;

use super::extract::{admin_multipart, multipart_parts, record_id, AdminForm, PageError, SignedIn, SignedInAdmin};
use super::integrations::Empty;
use super::notice::{Flash, Notice};
use super::pages::{form_number, render, when, Chrome, FieldErrors, SummaryLink};
use crate::domain::listing::{
    Channel, Condition, Given, ListingInput, ListingStatus, DELIVERY_CONTRIBUTIONS_GBP, LISTING_BODY,
};
use crate::domain::money::{UnitMoney, CLEARANCE_COMMISSION_PERCENT, VAT_PERCENT};
use crate::domain::outcome::Outcome;
use crate::domain::taxonomy::{ages, CATEGORIES, COLOURS, CONDITIONS, EXPOSURES, FABRICS, FAULTS, ITEM_TYPES};
use crate::domain::user::Admin;
use crate::domain::view::{ListingRecord, PhotoRecord};
use crate::domain::FieldError;
use crate::state::AppState;
use crate::usecases::listings::{
    self, CreateListingError, DeleteListingError, GetListingError, PhotoChange, PhotoChangeError, UpdateListingError,
};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::photos::{self, PhotoUpload, UploadPhotoError};
use crate::usecases::wallet::statement::pounds;
use crate::usecases::warehouses;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/listings/new", get(new_page).merge(post(create)))
        .route("/listings/{id}", get(detail).merge(post(update)))
        .route("/listings/{id}/edit", get(edit_page))
        .route("/listings/{id}/delete", get(confirm_delete).merge(post(delete)))
        .route("/listings/{id}/photos", post(add_photo))
        .route("/listings/{id}/photos/{position}/{action}", get(confirm_photo_action).merge(post(photo_action)))
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

    pub fn has_exposure(&self, exposure: &&str) -> bool {
        self.get("exposed_to").split(',').any(|f| f == *exposure)
    }

    /// The text of a measurement row's part: `measurement(2, "w_cm")`.
    pub fn measurement(&self, row: &usize, part: &str) -> &str {
        self.get(&format!("measurement_{row}_{part}"))
    }

    /// `value` of the enum field `name` (`channel`, `status`, `condition`) in the words of
    /// its domain type; any other text as it is.
    pub fn in_words<'a>(&self, name: &str, value: &'a str) -> &'a str {
        match name {
            "channel" => value.parse::<Channel>().map_or(value, |v| v.words()),
            "status" => value.parse::<ListingStatus>().map_or(value, |v| v.words()),
            "condition" => value.parse::<Condition>().map_or(value, |v| v.words()),
            _ => value,
        }
    }

    /// The field `name` as people read it.
    pub fn words(&self, name: &str) -> &str {
        self.in_words(name, self.get(name))
    }

    fn put(&mut self, name: impl Into<String>, value: String) {
        self.0.insert(name.into(), value);
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
        put("exposed_to", f.exposed_to.join(","));
        put("delivery_contribution_gbp", f.delivery_contribution_gbp.to_string());
        put("sku", f.sku.clone().unwrap_or_default());
        put("description", f.description.clone().unwrap_or_default());
        put("rrp_gbp", f.rrp.map(|p| pounds(p.get())).unwrap_or_default());
        let text = |value: &Option<String>| value.clone().unwrap_or_default();
        put("brand", text(&f.brand));
        put("colour", text(&f.colour));
        put("fabric", text(&f.fabric));
        put("age_years", text(&f.age_years));
        put("available_from", text(&f.available_from));
        put("warehouse_id", text(&f.warehouse_id));
        put("warehouse_location", text(&f.warehouse_location));
        for (row, piece) in f.measurements.iter().take(MEASUREMENT_ROWS).enumerate() {
            let row = row + 1;
            put(&format!("measurement_{row}_type"), piece.item_type.clone());
            put(&format!("measurement_{row}_w_cm"), piece.w_cm.to_string());
            put(&format!("measurement_{row}_d_cm"), piece.d_cm.to_string());
            put(&format!("measurement_{row}_h_cm"), piece.h_cm.to_string());
        }
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
    pub exposures: Vec<(&'static str, &'static str)>,
    pub deliveries: &'static [u32],
    pub ages: Vec<String>,
    pub item_types: &'static [&'static str],
    /// `(id, label)` of the brand's warehouses.
    pub warehouses: Vec<(String, String)>,
    pub measurement_rows: Vec<usize>,
    /// Photos a refused try uploaded, carried by the form (a new listing only).
    pub kept: Vec<KeptPhoto>,
    /// How much one post of the form may carry in all, in megabytes (the body limit).
    pub upload_mb: usize,
}

/// Pieces the form offers to measure (a listing has up to 20; the API takes them all).
const MEASUREMENT_ROWS: usize = 3;

/// The form page with the brand's warehouses to choose from.
async fn form_page(
    state: &AppState,
    session: &LiveSession,
    id: Option<i64>,
    values: Values,
    errors: FieldErrors,
) -> Result<ListingFormPage, PageError> {
    let warehouses = warehouses::list(&state.core, &session.actor()).await?;
    let mut page = ListingFormPage::new(session, id, values, errors);
    page.warehouses = warehouses.into_iter().map(|w| (w.id, w.label)).collect();
    page.upload_mb = state.config.max_body_bytes / (1024 * 1024);
    Ok(page)
}

/// The form page answered: 200 for a fresh form, 422 for a refused one.
async fn form_answer(
    state: &AppState,
    session: &LiveSession,
    id: Option<i64>,
    values: Values,
    errors: FieldErrors,
) -> Result<Response, PageError> {
    let status = if errors.is_empty() { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
    Ok(render(status, &form_page(state, session, id, values, errors).await?))
}

impl ListingFormPage {
    /// True when a create must give `name` (the listing body's rule): its label is marked.
    pub fn required(&self, name: &str) -> bool {
        self.id.is_none() && LISTING_BODY.fields.iter().any(|f| f.name == name && f.required)
    }

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
            exposures: EXPOSURES.iter().map(|c| (c.value, c.label)).collect(),
            deliveries: DELIVERY_CONTRIBUTIONS_GBP,
            ages: ages(),
            item_types: ITEM_TYPES,
            warehouses: Vec::new(),
            measurement_rows: (1..=MEASUREMENT_ROWS).collect(),
            kept: Vec::new(),
            upload_mb: 0,
        }
    }

    /// The reasons of fields the form has no place for (measurements, images…), joined.
    pub fn other_errors(&self) -> String {
        let shown = |field: &str| {
            TEXT_FIELDS.contains(&field)
                || ["faults", "exposed_to", "measurements", "photo", "listing"].contains(&field)
        };
        self.errors.others(shown)
    }

    /// The error summary: each reason linking to its field (a group to its first box; a
    /// reason with no field of its own to the form).
    pub fn error_summary(&self) -> Vec<SummaryLink> {
        self.errors.summary(|field| {
            match field {
                "faults" => "fault-1",
                "exposed_to" => "exposure-1",
                "measurements" => "measurement_1_type",
                "photo" => "photo",
                f if TEXT_FIELDS.contains(&f) => f,
                _ => "listing-form",
            }
            .to_owned()
        })
    }

    /// `(field, label, values)` of the taxonomy fields chosen from a list.
    pub fn taxonomy_selects(&self) -> [(&'static str, &'static str, &'static [&'static str]); 2] {
        [("colour", "Colour", COLOURS), ("fabric", "Fabric", FABRICS)]
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
    pub money: Vec<(String, String)>,
    /// `(url or "", status, error)` of each image, in order.
    pub images: Vec<(String, &'static str, String)>,
    pub notice: Option<&'static str>,
    /// A photo change was refused: its reason.
    pub photo_error: Option<String>,
    pub csrf: String,
    /// The listing's live page on the marketplace (its `url`); `None` for a draft, which
    /// buyers cannot see.
    pub live_url: Option<String>,
    /// How much one upload may carry in all, in megabytes (the body limit).
    pub upload_mb: usize,
}

async fn listing_view(
    state: &AppState,
    session: &LiveSession,
    id: i64,
    notice: Option<&'static str>,
) -> Result<Response, PageError> {
    let mut page = listing_page(state, session, id).await?;
    page.notice = notice;
    Ok(render(StatusCode::OK, &page))
}

/// One of the brand's listings; a listing it does not have sends the browser to the list.
async fn listing_of(state: &AppState, session: &LiveSession, id: i64) -> Result<ListingRecord, PageError> {
    match listings::get(&state.core, &session.actor(), id).await {
        Ok(record) => Ok(record),
        Err(GetListingError::NotFound) => Err(PageError::NotFound),
        Err(GetListingError::Store(e)) => Err(e.into()),
    }
}

async fn listing_page(state: &AppState, session: &LiveSession, id: i64) -> Result<ListingPage, PageError> {
    let record = listing_of(state, session, id).await?;
    let f = &record.fields;
    let unit = UnitMoney::of(f.channel, f.price(), f.delivery_contribution_gbp);
    let mut money = vec![("Price".to_owned(), pounds(unit.price.get()))];
    if f.channel == Channel::Clearance {
        // The rates the payout is worked out with, never restated.
        money.push((format!("Commission ({CLEARANCE_COMMISSION_PERCENT}%)"), pounds(unit.commission.get())));
        money.push((format!("VAT on the commission ({VAT_PERCENT}%)"), pounds(unit.vat.get())));
    }
    money.push(("Delivery contribution".to_owned(), pounds(unit.delivery.get())));
    money.push(("Your payout per unit".to_owned(), pounds(unit.payout.get())));
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
        created: when(record.created_at.get(), session.zone()),
        updated: when(record.updated_at.get(), session.zone()),
        views: record.view_count,
        money,
        images,
        notice: None,
        photo_error: None,
        csrf: session.record.csrf_token.clone(),
        live_url: (record.fields.status != crate::domain::listing::ListingStatus::Draft)
            .then(|| format!("{}/listings/{id}", state.config.marketplace_url())),
        upload_mb: state.config.max_body_bytes / (1024 * 1024),
    };
    Ok(page)
}

async fn detail(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
    flash: Flash,
) -> Result<Response, PageError> {
    listing_view(&state, &session, record_id(&id)?, flash.text()).await
}

async fn new_page(
    State(state): State<AppState>,
    SignedInAdmin { session, .. }: SignedInAdmin,
) -> Result<Response, PageError> {
    let mut values = Values::default();
    values.0.insert("channel".into(), "clearance".into());
    values.0.insert("quantity".into(), "1".into());
    values.0.insert("delivery_contribution_gbp".into(), "0".into());
    values.0.insert("status".into(), "active".into());
    form_answer(&state, &session, None, values, FieldErrors::default()).await
}

async fn edit_page(
    State(state): State<AppState>,
    SignedInAdmin { session, .. }: SignedInAdmin,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let id = record_id(&id)?;
    let record = listing_of(&state, &session, id).await?;
    form_answer(&state, &session, Some(id), Values::of(&record), FieldErrors::default()).await
}

/// The multipart form: its text fields (faults gathered into one list) and its photo.
struct Posted {
    csrf: String,
    values: Values,
    faults: Vec<String>,
    exposed_to: Vec<String>,
    /// Photos chosen this time: (bytes, file name), in order.
    photos: Vec<(Vec<u8>, String)>,
    /// Photos uploaded by an earlier try of the same new listing and kept by the form:
    /// (attachment id, file name).
    kept: Vec<KeptPhoto>,
}

/// A photo uploaded by a refused try of the new-listing form, carried by the form so that
/// it need not be chosen again (the listing's use case checks it is the brand's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptPhoto {
    pub id: i64,
    pub name: String,
}

/// The form's one-value fields, by the API's names.
const TEXT_FIELDS: [&str; 19] = [
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
    "rrp_gbp",
    "brand",
    "colour",
    "fabric",
    "age_years",
    "available_from",
    "warehouse_id",
    "warehouse_location",
];

/// The parts of a measurement row (`measurement_<row>_<part>`), by the API's names.
const MEASUREMENT_PARTS: [&str; 4] = ["type", "w_cm", "d_cm", "h_cm"];

async fn read_form(multipart: Multipart) -> Result<Posted, PageError> {
    let mut posted = Posted {
        csrf: String::new(),
        values: Values::default(),
        faults: Vec::new(),
        exposed_to: Vec::new(),
        photos: Vec::new(),
        kept: Vec::new(),
    };
    let (mut kept_ids, mut kept_names) = (Vec::new(), Vec::new());
    for part in multipart_parts(multipart).await? {
        match part.name.as_str() {
            "csrf" => posted.csrf = part.text(),
            "faults" => posted.faults.push(part.text()),
            "exposed_to" => posted.exposed_to.push(part.text()),
            "photo" if !part.bytes.is_empty() => {
                posted.photos.push((part.bytes.to_vec(), part.filename.unwrap_or_default()))
            }
            "kept_photo" => kept_ids.push(part.text()),
            "kept_photo_name" => kept_names.push(part.text()),
            other if TEXT_FIELDS.contains(&other) || is_measurement_part(other) => {
                posted.values.0.insert(other.to_owned(), part.text());
            }
            _ => {}
        }
    }
    posted.values.put("faults", posted.faults.join(","));
    posted.values.put("exposed_to", posted.exposed_to.join(","));
    // What a client sends here is only ever offered to the listing's use case, which
    // refuses a photo that is not the brand's; a name is shown, never trusted.
    posted.kept = kept_ids
        .iter()
        .zip(kept_names.iter().chain(std::iter::repeat(&String::new())))
        .filter_map(|(id, name)| {
            let id = id.trim().parse::<i64>().ok().filter(|id| *id > 0)?;
            Some(KeptPhoto { id, name: name.chars().take(200).collect() })
        })
        .take(MAX_ITEMS)
        .collect();
    Ok(posted)
}

fn is_measurement_part(name: &str) -> bool {
    (1..=MEASUREMENT_ROWS).any(|row| MEASUREMENT_PARTS.iter().any(|part| name == format!("measurement_{row}_{part}")))
}

/// The rows of the form with anything in them, as the API's `measurements` (dimensions as
/// JSON numbers, their text kept; the API's reasons name what is wrong).
fn measurements_of(values: &Values) -> Value {
    (1..=MEASUREMENT_ROWS)
        .filter(|row| MEASUREMENT_PARTS.iter().any(|part| !values.measurement(row, part).trim().is_empty()))
        .map(|row| {
            let mut piece = serde_json::Map::new();
            piece.insert("type".to_owned(), Value::String(values.measurement(&row, "type").trim().to_owned()));
            for part in &MEASUREMENT_PARTS[1..] {
                piece.insert((*part).to_owned(), form_number(values.measurement(&row, part).trim()));
            }
            Value::Object(piece)
        })
        .collect()
}

/// Fields a blank leaves as they are even on edit: the form always fills them, and a
/// cleared one would fall back to a default (or, for the warehouse, to none).
const KEPT_WHEN_BLANK: [&str; 4] = ["channel", "status", "quantity", "warehouse_id"];

/// The form as the listing input the API's body would give, each field read by its type in
/// the listing body's table: a blank field is left out on create, and on edit cleared
/// unless it is required (or [`KEPT_WHEN_BLANK`]).
fn input_of(posted: &Posted, editing: bool) -> ListingInput {
    let mut input = ListingInput::default();
    for field in LISTING_BODY.fields.iter().filter(|f| TEXT_FIELDS.contains(&f.name)) {
        let text = posted.values.get(field.name);
        let kept = !editing || field.required || KEPT_WHEN_BLANK.contains(&field.name);
        if !(text.trim().is_empty() && kept) {
            input.give_text(field.name, text);
        }
    }
    let list = |items: &[String]| items.iter().cloned().map(Value::String).collect::<Value>();
    input.give("faults", &list(&posted.faults));
    if editing || !posted.exposed_to.is_empty() {
        input.give("exposed_to", &list(&posted.exposed_to));
    }
    let measurements = measurements_of(&posted.values);
    if editing || measurements.as_array().is_some_and(|m| !m.is_empty()) {
        input.give("measurements", &measurements);
    }
    input
}

/// A photo uploaded from a form, through the same budget of image decodes as the API's
/// uploads (`503` "Busy" when it stays taken for the whole wait).
async fn upload_photo(
    state: &AppState,
    admin: &Admin,
    upload: PhotoUpload,
) -> Result<Result<PhotoRecord, UploadPhotoError>, PageError> {
    // An image refused by its header is refused without a decode, and needs no room.
    let _decoding = match crate::media::pool::cleaning_cost(&upload.bytes) {
        Some(cost) => Some(state.decodes.admit(cost).await.map_err(|_| PageError::Busy)?),
        None => None,
    };
    Ok(photos::upload(&state.core, admin, upload).await)
}

async fn create(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    multipart: Multipart,
) -> Result<Response, PageError> {
    let posted = read_form(multipart).await?;
    let admin = admin_multipart(&session, &posted.csrf)?;
    let mut input = input_of(&posted, false);
    // Each photo chosen is uploaded (and kept by the form from then on); one refused says
    // which and why, and the listing waits until the photos are right.
    let mut kept = posted.kept.clone();
    let mut refusals = Vec::new();
    for (bytes, name) in posted.photos.iter().cloned() {
        if kept.len() >= MAX_ITEMS {
            refusals.push(format!("{name} was not added: a listing has at most {MAX_ITEMS} photos."));
            continue;
        }
        match upload_photo(&state, &admin, PhotoUpload { bytes, filename: Some(name.clone()) }).await? {
            Ok(photo) => kept.push(KeptPhoto { id: photo.id, name }),
            Err(e) => refusals.push(format!("{name} was not kept: {}", outcome_of(e)?.message())),
        }
    }
    if !refusals.is_empty() {
        let sentence = refusals.join(" ");
        let reason =
            FieldError { field: "photo".to_owned(), code: "photo_invalid".to_owned(), message: sentence.clone() };
        let errors = FieldErrors::of(&LISTING_BODY, vec![reason]).worded("photo", sentence);
        return new_form_answer(&state, &session, posted.values, errors, kept).await;
    }
    if !kept.is_empty() {
        input.attachment_ids = Given::Set(kept.iter().map(|k| k.id).collect());
    }
    match listings::create(&state.core, &admin, &input).await {
        Ok(saved) => Ok(Redirect::to(&format!("/dashboard/listings/{}", saved.record.id)).into_response()),
        Err(CreateListingError::Invalid(errors)) => {
            // A kept photo refused (not the brand's, or gone) is chosen again, not carried.
            if errors.iter().any(|e| e.field == "attachment_ids") {
                kept.clear();
            }
            new_form_answer(&state, &session, posted.values, FieldErrors::of(&LISTING_BODY, errors), kept).await
        }
        Err(CreateListingError::Store(e)) => Err(e.into()),
    }
}

/// The new-listing form again, 422, with the values given, the reasons, and the photos kept.
async fn new_form_answer(
    state: &AppState,
    session: &LiveSession,
    values: Values,
    errors: FieldErrors,
    kept: Vec<KeptPhoto>,
) -> Result<Response, PageError> {
    let mut page = form_page(state, session, None, values, errors).await?;
    page.kept = kept;
    Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
}

/// The form again, 422, with the values given and one reason.
async fn refused(
    state: &AppState,
    session: &LiveSession,
    id: Option<i64>,
    posted: Posted,
    reason: FieldError,
) -> Result<Response, PageError> {
    form_answer(state, session, id, posted.values, FieldErrors::of(&LISTING_BODY, vec![reason])).await
}

async fn update(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
    multipart: Multipart,
) -> Result<Response, PageError> {
    let id = record_id(&id)?;
    let posted = read_form(multipart).await?;
    let admin = admin_multipart(&session, &posted.csrf)?;
    let input = input_of(&posted, true);
    match listings::update(&state.core, &admin, id, &input, None).await {
        Ok(_) => Ok(Notice::ListingSaved.redirect(&format!("/dashboard/listings/{id}"), state.config.secure_cookies())),
        Err(UpdateListingError::Invalid(errors)) => {
            form_answer(&state, &session, Some(id), posted.values, FieldErrors::of(&LISTING_BODY, errors)).await
        }
        Err(UpdateListingError::NotFound) => Err(PageError::NotFound),
        Err(e) => refused(&state, &session, Some(id), posted, outcome_of(e)?.on("listing")).await,
    }
}

/// Applies a photo change through the listing's photo use case (every other image kept as
/// it is), then post/redirect/get: the listing's page with `done` as its notice.
async fn change_photos(
    state: &AppState,
    session: &LiveSession,
    admin: &Admin,
    id: i64,
    change: Option<PhotoChange>,
    done: Notice,
) -> Result<Response, PageError> {
    let Some(change) = change else {
        return photo_refused(state, session, id, Outcome::PhotoNotFound.message().into_owned()).await;
    };
    match listings::change_photos(&state.core, admin, id, change).await {
        Ok(_) => Ok(done.redirect(&format!("/dashboard/listings/{id}"), state.config.secure_cookies())),
        Err(PhotoChangeError::NotFound) => Err(PageError::NotFound),
        Err(e) => photo_refused(state, session, id, outcome_of(e)?.message().into_owned()).await,
    }
}

/// The listing's page, 422, with the reason beside its photos.
async fn photo_refused(
    state: &AppState,
    session: &LiveSession,
    id: i64,
    reason: String,
) -> Result<Response, PageError> {
    let mut page = listing_page(state, session, id).await?;
    page.photo_error = Some(reason);
    Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
}

/// Adds the photos chosen (one or several), in order, each through the photo use case;
/// a refused one says which and why, after those before it were added.
async fn add_photo(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
    multipart: Multipart,
) -> Result<Response, PageError> {
    let id = record_id(&id)?;
    let (mut csrf, mut photos) = (String::new(), Vec::new());
    for part in multipart_parts(multipart).await? {
        match part.name.as_str() {
            "csrf" => csrf = part.text(),
            "photo" if !part.bytes.is_empty() => photos.push((part.bytes.to_vec(), part.filename)),
            _ => {}
        }
    }
    let admin = admin_multipart(&session, &csrf)?;
    if photos.is_empty() {
        return photo_refused(&state, &session, id, Outcome::PhotoRequired.message().into_owned()).await;
    }
    let has = listing_of(&state, &session, id).await?.images.len();
    let mut added = 0;
    for (bytes, filename) in photos {
        let name = filename.clone().unwrap_or_else(|| format!("Photo {}", added + 1));
        let refused = |why: String| {
            let before = match added {
                0 => String::new(),
                1 => " The photo before it was added.".to_owned(),
                n => format!(" The {n} photos before it were added."),
            };
            format!("{name} was not added: {why}{before}")
        };
        if has + added >= MAX_ITEMS {
            let why = format!("a listing has at most {MAX_ITEMS} photos; remove one first.");
            return photo_refused(&state, &session, id, refused(why)).await;
        }
        let uploaded = match upload_photo(&state, &admin, PhotoUpload { bytes, filename }).await? {
            Ok(photo) => photo,
            Err(e) => return photo_refused(&state, &session, id, refused(outcome_of(e)?.message().into_owned())).await,
        };
        match listings::change_photos(&state.core, &admin, id, PhotoChange::Add(uploaded.id)).await {
            Ok(_) => added += 1,
            Err(e) => return photo_refused(&state, &session, id, refused(outcome_of(e)?.message().into_owned())).await,
        }
    }
    let notice = if added == 1 { Notice::PhotoAdded } else { Notice::PhotosAdded };
    Ok(notice.redirect(&format!("/dashboard/listings/{id}"), state.config.secure_cookies()))
}

/// The confirmation step of "Remove" on a photo (decisions 9.8); "Make cover" needs none.
async fn confirm_photo_action(
    SignedInAdmin { session, .. }: SignedInAdmin,
    asked: super::confirm::Asked,
    Path((id, position, action)): Path<(String, String, String)>,
) -> Result<Response, PageError> {
    let id = record_id(&id)?;
    let back = format!("/dashboard/listings/{id}");
    let (Some(index), "remove") = (photo_position(&position), action.as_str()) else {
        return Ok(super::confirm::elsewhere(asked, &back));
    };
    let number = index + 1;
    Ok(super::confirm::page(
        &session,
        asked,
        super::confirm::Confirm {
            title: format!("Remove photo {number} from this listing?"),
            lines: vec![
                "The photo and its thumbnails leave the listing at once.".to_owned(),
                "To show it again, upload it again.".to_owned(),
            ],
            action: format!("{back}/photos/{number}/remove"),
            button: format!("Remove photo {number}"),
            cancel: back,
            keep: "No, keep the photo".to_owned(),
            fields: Vec::new(),
        },
    ))
}

/// "Remove" or "Make cover" (`/photos/{n}/remove`, `/photos/{n}/cover`) on the photo
/// numbered `n` on the page.
async fn photo_action(
    State(state): State<AppState>,
    Path((id, position, action)): Path<(String, String, String)>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let (id, position) = (record_id(&id)?, photo_position(&position));
    let (change, done): (fn(usize) -> PhotoChange, _) = match action.as_str() {
        "remove" => (PhotoChange::Remove, Notice::PhotoRemoved),
        "cover" => (PhotoChange::Cover, Notice::CoverChanged),
        _ => return Err(PageError::NotFound),
    };
    change_photos(&state, &session, &admin, id, position.map(change), done).await
}

/// A photo's 1-based number on the page as a 0-based position; `None` if it is not one.
fn photo_position(text: &str) -> Option<usize> {
    text.parse::<usize>().ok().and_then(|n| n.checked_sub(1))
}

/// The confirmation step of "Delete" on a listing (decisions 9.8).
async fn confirm_delete(
    State(state): State<AppState>,
    SignedInAdmin { session, .. }: SignedInAdmin,
    asked: super::confirm::Asked,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let id = record_id(&id)?;
    let listing = listing_of(&state, &session, id).await?;
    let back = format!("/dashboard/listings/{id}");
    Ok(super::confirm::page(
        &session,
        asked,
        super::confirm::Confirm {
            title: format!("Delete \u{201c}{}\u{201d}?", listing.fields.title),
            lines: vec![
                "It leaves the marketplace and your lists at once; buyers can no longer order it.".to_owned(),
                "Integrations syncing your listings see it as deleted.".to_owned(),
            ],
            action: format!("{back}/delete"),
            button: "Delete listing".to_owned(),
            cancel: back,
            keep: "No, keep the listing".to_owned(),
            fields: Vec::new(),
        },
    ))
}

/// "Delete listing": moves it to the trash as `DELETE /v1/listings/{id}` does, then back to
/// the list with a notice.
async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let id = record_id(&id)?;
    match listings::delete(&state.core, &admin, id).await {
        Ok(()) => Ok(Notice::ListingDeleted.redirect("/dashboard/listings", state.config.secure_cookies())),
        // Gone already (deleted in another tab, or this POST sent again): the 404 page.
        Err(DeleteListingError::NotFound) => Err(PageError::NotFound),
        Err(e) => photo_refused(&state, &session, id, outcome_of(e)?.message().into_owned()).await,
    }
}
