//! Settings: the payout options, the brand profile, the billing entity and the warehouses
//! (add, make default, delete). The brand, billing and warehouse forms are drawn from the
//! API's own body tables (`PROFILE_BODY`, `BILLING_BODY`, `WAREHOUSE_BODY`), so they hold
//! exactly the fields the API takes, and post to the same use cases. Read-only for members.

use std::collections::HashMap;

use crate::http::routing::{get, post};
use crate::web::extract::reasons_on;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::confirm::{self, Asked, Confirm};
use super::extract::{AdminForm, PageError, SignedIn, SignedInAdmin};
use super::integrations::Empty;
use super::notice::{Flash, Notice};
use super::pages::{form_number, render, when, Chrome, FieldErrors, SummaryLink};
use crate::domain::body::{BodySpec, FieldType};
use crate::domain::outcome::Outcome;
use crate::domain::payout::{PayoutOptionsPatch, PAYOUT_OPTIONS_BODY};
use crate::domain::reader::object;
use crate::domain::settings::{
    BillingEdit, NewWarehouse, ProfileEdit, TimeZone, WarehouseEdit, BILLING_BODY, PROFILE_BODY, WAREHOUSE_BODY,
};
use crate::domain::words;
use crate::state::AppState;
use crate::usecases::marketplace::payouts::{self, OptionsChangeError};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::settings::{self, PatchError};
use crate::usecases::warehouses::{self, ChangeError, CreateError, UpdateError};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/settings", get(page))
        .route("/settings/payouts", post(save_payouts))
        .route("/settings/brand", post(save_profile))
        .route("/settings/billing", post(save_billing))
        .route("/settings/time-zone", post(save_time_zone))
        .route("/settings/warehouses", post(add_warehouse))
        .route("/settings/warehouses/{id}", post(update_warehouse))
        .route("/settings/warehouses/{id}/default", post(make_default))
        .route("/settings/warehouses/{id}/delete", get(confirm_delete_warehouse).merge(post(delete_warehouse)))
}

/// One field of a form drawn from a body table.
pub struct FormField {
    /// `<section>-<name>`: unique on the page.
    pub id: String,
    pub name: &'static str,
    pub label: String,
    /// `text`, `textarea` or `checkbox`.
    pub kind: &'static str,
    pub value: String,
    pub error: Option<String>,
    /// The body's rule: a value must be given (its label is marked).
    pub required: bool,
    /// What the field is for, shown under it (the body table's hint).
    pub hint: Option<&'static str>,
}

impl FormField {
    /// The ids that describe the field: its hint and its error, when it has them.
    pub fn described_by(&self) -> String {
        let mut ids = Vec::new();
        if self.hint.is_some() {
            ids.push(format!("{}-hint", self.id));
        }
        if self.error.is_some() {
            ids.push(format!("{}-error", self.id));
        }
        ids.join(" ")
    }
}

/// The fields of `spec`, with `values` (the current ones, or those posted) and `errors`.
fn form(section: &str, spec: &BodySpec, values: &Map<String, Value>, errors: &FieldErrors) -> Vec<FormField> {
    spec.fields
        .iter()
        .map(|f| FormField {
            id: format!("{section}-{}", f.name),
            name: f.name,
            label: words::label(Some(f), f.name),
            kind: match f.ty {
                FieldType::Lines { .. } => "textarea",
                FieldType::Boolean => "checkbox",
                _ => "text",
            },
            value: match values.get(f.name) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            },
            error: errors.get(f.name),
            required: f.required,
            hint: f.hint,
        })
        .collect()
}

/// `company_number` → "Company number", `vat_number` → "VAT number".
/// A form post as the API body: every field of `spec` given, as text (a ticked checkbox is
/// `true`, an unticked one `false`).
fn body(spec: &BodySpec, posted: &HashMap<String, String>) -> Map<String, Value> {
    let mut body = Map::new();
    for f in spec.fields {
        let value = match f.ty {
            FieldType::Boolean => Value::Bool(posted.contains_key(f.name)),
            _ => match posted.get(f.name) {
                Some(text) => Value::String(text.clone()),
                None => continue,
            },
        };
        body.insert(f.name.to_owned(), value);
    }
    body
}

pub struct WarehouseRow {
    pub id: String,
    pub label: String,
    pub place: String,
    pub default: bool,
    /// The edit form's fields (all but `is_default`: "Make default" does that).
    pub fields: Vec<FormField>,
    /// Its edit was refused: show the form open.
    pub open: bool,
}

#[derive(askama::Template)]
#[template(path = "dashboard/settings.html")]
pub struct SettingsPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub is_admin: bool,
    pub credit: bool,
    pub cash: bool,
    pub boost: String,
    pub validity: String,
    pub notice: Option<&'static str>,
    /// The payouts form's reasons.
    pub errors: FieldErrors,
    pub brand: Vec<FormField>,
    pub billing: Vec<FormField>,
    pub warehouses: Vec<WarehouseRow>,
    pub new_warehouse: Vec<FormField>,
    /// The add-a-warehouse form was refused: show it open.
    pub warehouse_form_open: bool,
    /// A reason about the warehouse list itself (a delete refused).
    pub warehouse_error: Option<String>,
    /// The time zone shown in the field: the brand's, or the one posted and refused.
    pub time_zone: String,
    /// Why the time zone posted was refused.
    pub time_zone_error: Option<String>,
    /// The zones the field suggests (admins only; members see the zone alone).
    pub zones: Vec<&'static str>,
    /// Now, in the brand's zone, to show what the zone means.
    pub now_there: String,
    /// The refused form's error summary: each reason linking to its field.
    pub summary: Vec<SummaryLink>,
}

/// What a refused form brings back: its section, the values posted and the reasons.
#[derive(Default)]
struct Refused {
    payouts: Option<(PayoutsShown, FieldErrors)>,
    brand: Option<(Map<String, Value>, FieldErrors)>,
    billing: Option<(Map<String, Value>, FieldErrors)>,
    warehouse: Option<(Map<String, Value>, FieldErrors)>,
    /// A refused edit: the warehouse's id, the values posted and the reasons.
    warehouse_edit: Option<(String, Map<String, Value>, FieldErrors)>,
    warehouse_error: Option<String>,
    /// The time zone posted and the reason it was refused.
    time_zone: Option<(String, FieldErrors)>,
}

struct PayoutsShown {
    credit: bool,
    cash: bool,
    boost: String,
    validity: String,
}

fn as_map<T: serde::Serialize>(value: &T) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

async fn view(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    notice: Option<&'static str>,
    refused: Refused,
) -> Result<Response, PageError> {
    let actor = session.actor();
    let (shown, errors) = match refused.payouts {
        Some(refused) => refused,
        None => {
            let o = payouts::options(&state.core, &actor).await?;
            let shown = PayoutsShown {
                credit: o.credit_enabled,
                cash: o.cash_enabled,
                boost: o.credit_boost_percent.to_string(),
                validity: o.code_validity_days.to_string(),
            };
            (shown, FieldErrors::default())
        }
    };
    let (brand_values, brand_errors) = match refused.brand {
        Some(refused) => refused,
        None => (as_map(&settings::profile(&state.core, &actor).await?), FieldErrors::default()),
    };
    let (billing_values, billing_errors) = match refused.billing {
        Some(refused) => refused,
        None => (as_map(&settings::billing(&state.core, &actor).await?), FieldErrors::default()),
    };
    let (warehouse_values, warehouse_errors) = refused.warehouse.unwrap_or_default();
    let mut edit = refused.warehouse_edit;
    let warehouses: Vec<WarehouseRow> = warehouses::list(&state.core, &actor)
        .await?
        .into_iter()
        .enumerate()
        .map(|(n, w)| {
            let (values, errors) = match edit.take_if(|(id, _, _)| *id == w.id) {
                Some((_, values, errors)) => (values, errors),
                None => (as_map(&w), FieldErrors::default()),
            };
            let mut fields = form(&format!("warehouse-{}", n + 1), &WAREHOUSE_BODY, &values, &errors);
            fields.retain(|f| f.name != "is_default");
            (w, fields, !errors.is_empty())
        })
        .map(|(w, fields, open)| WarehouseRow {
            place: [w.address_1.as_str(), w.city.as_str(), w.postcode.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
            id: w.id,
            label: w.label,
            default: w.is_default,
            fields,
            open,
        })
        .collect();
    let (time_zone, time_zone_error) = match refused.time_zone {
        Some((posted, errors)) => (posted, errors.get("time_zone")),
        None => (session.zone().name().to_owned(), None),
    };
    let brand = form("brand", &PROFILE_BODY, &brand_values, &brand_errors);
    let billing = form("billing", &BILLING_BODY, &billing_values, &billing_errors);
    let new_warehouse = form("warehouse", &WAREHOUSE_BODY, &warehouse_values, &warehouse_errors);
    let mut summary = errors.summary(str::to_owned);
    let fields = brand.iter().chain(&billing).chain(&new_warehouse).chain(warehouses.iter().flat_map(|w| &w.fields));
    for f in fields {
        if let Some(message) = &f.error {
            summary.push(SummaryLink { href: format!("#{}", f.id), message: message.clone() });
        }
    }
    if let Some(message) = &time_zone_error {
        summary.push(SummaryLink { href: "#time_zone".to_owned(), message: message.clone() });
    }
    if let Some(message) = &refused.warehouse_error {
        summary.push(SummaryLink { href: "#warehouses-title".to_owned(), message: message.clone() });
    }
    let page = SettingsPage {
        summary,
        time_zone,
        time_zone_error,
        zones: if session.is_admin() { TimeZone::offered().collect() } else { Vec::new() },
        now_there: when(chrono::Utc::now(), session.zone()),
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        credit: shown.credit,
        cash: shown.cash,
        boost: shown.boost,
        validity: shown.validity,
        notice,
        errors,
        brand,
        billing,
        warehouses,
        warehouse_form_open: !warehouse_errors.is_empty(),
        new_warehouse,
        warehouse_error: refused.warehouse_error,
    };
    Ok(render(status, &page))
}

async fn page(State(state): State<AppState>, SignedIn(session): SignedIn, flash: Flash) -> Result<Response, PageError> {
    view(&state, &session, StatusCode::OK, flash.text(), Refused::default()).await
}

#[derive(Debug, Deserialize)]
struct PayoutsForm {
    credit_enabled: Option<String>,
    cash_enabled: Option<String>,
    #[serde(default)]
    credit_boost_percent: String,
    #[serde(default)]
    code_validity_days: String,
}

async fn save_payouts(State(state): State<AppState>, posted: AdminForm<PayoutsForm>) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let body = object(json!({
        "credit_enabled": form.credit_enabled.is_some(),
        "cash_enabled": form.cash_enabled.is_some(),
        "credit_boost_percent": form_number(&form.credit_boost_percent),
        "code_validity_days": form_number(&form.code_validity_days),
    }));
    let shown = PayoutsShown {
        credit: form.credit_enabled.is_some(),
        cash: form.cash_enabled.is_some(),
        boost: form.credit_boost_percent,
        validity: form.code_validity_days,
    };
    let errors = match PayoutOptionsPatch::parse(&body) {
        Ok(patch) => match payouts::change_options(&state.core, &admin, &patch, None).await {
            Ok(_) => return Ok(saved(&state, Notice::PayoutsSaved)),
            Err(OptionsChangeError::PreconditionFailed) => Vec::new(),
            Err(no_choice @ OptionsChangeError::NoChoice) => reasons_on("credit_enabled", no_choice)?,
            Err(OptionsChangeError::Store(e)) => return Err(e.into()),
        },
        Err(errors) => errors,
    };
    let refused =
        Refused { payouts: Some((shown, FieldErrors::of(&PAYOUT_OPTIONS_BODY, errors))), ..Refused::default() };
    view(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, None, refused).await
}

/// A settings section's form: the CSRF token and the section's fields.
type SectionForm = AdminForm<HashMap<String, String>>;

async fn save_profile(State(state): State<AppState>, posted: SectionForm) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let body = body(&PROFILE_BODY, &form);
    let outcome = settings::update_profile(&state.core, &admin, ProfileEdit::parse(&body), None).await.map(drop);
    let back = |refused| Refused { brand: Some(refused), ..Refused::default() };
    section_saved(&state, &session, outcome, (&PROFILE_BODY, body), back, Notice::BrandSaved).await
}

async fn save_billing(State(state): State<AppState>, posted: SectionForm) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let body = body(&BILLING_BODY, &form);
    let outcome = settings::update_billing(&state.core, &admin, BillingEdit::parse(&body), None).await.map(drop);
    let back = |refused| Refused { billing: Some(refused), ..Refused::default() };
    section_saved(&state, &session, outcome, (&BILLING_BODY, body), back, Notice::BillingSaved).await
}

#[derive(Debug, Deserialize)]
struct TimeZoneForm {
    #[serde(default)]
    time_zone: String,
}

async fn save_time_zone(State(state): State<AppState>, posted: AdminForm<TimeZoneForm>) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    match TimeZone::parse(&form.time_zone) {
        Ok(zone) => {
            settings::change_time_zone(&state.core, &admin, zone).await?;
            // The page it leads to is written in the zone just saved (read with the session).
            Ok(saved(&state, Notice::TimeZoneSaved))
        }
        Err(error) => {
            let refused =
                Refused { time_zone: Some((form.time_zone, FieldErrors::untabled(vec![error]))), ..Refused::default() };
            view(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, None, refused).await
        }
    }
}

/// After a save: back to Settings (post/redirect/get, so a reload submits nothing again),
/// where `notice` says what was saved, once.
fn saved(state: &AppState, notice: Notice) -> Response {
    notice.redirect("/dashboard/settings", state.config.secure_cookies())
}

/// After a section's save: [`saved`], or the page with the values posted and the reasons
/// beside their fields (`back` puts them in the section).
async fn section_saved(
    state: &AppState,
    session: &LiveSession,
    outcome: Result<(), PatchError>,
    (spec, body): (&'static BodySpec, Map<String, Value>),
    back: impl FnOnce((Map<String, Value>, FieldErrors)) -> Refused,
    notice: Notice,
) -> Result<Response, PageError> {
    match outcome {
        Ok(()) => Ok(saved(state, notice)),
        Err(PatchError::Invalid(errors)) => {
            view(state, session, StatusCode::UNPROCESSABLE_ENTITY, None, back((body, FieldErrors::of(spec, errors))))
                .await
        }
        // No condition is given from the dashboard.
        Err(PatchError::PreconditionFailed) => Err(PageError::internal("no precondition was given")),
        Err(PatchError::Store(e)) => Err(e.into()),
    }
}

async fn add_warehouse(State(state): State<AppState>, posted: SectionForm) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    // Blank fields are left out: the warehouse is new.
    let mut body = body(&WAREHOUSE_BODY, &form);
    body.retain(|_, v| !matches!(v, Value::String(s) if s.trim().is_empty()));
    let created = match NewWarehouse::parse(&body) {
        Ok(new) => warehouses::create(&state.core, &admin, &new).await,
        Err(errors) => Err(CreateError::Invalid(errors)),
    };
    match created {
        Ok(_) => Ok(saved(&state, Notice::WarehouseAdded)),
        Err(CreateError::Invalid(errors)) => {
            let values = self::body(&WAREHOUSE_BODY, &form);
            let refused =
                Refused { warehouse: Some((values, FieldErrors::of(&WAREHOUSE_BODY, errors))), ..Refused::default() };
            view(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, None, refused).await
        }
        Err(CreateError::Contended) => {
            let refused = Refused {
                warehouse_error: Some(Outcome::WarehousesContended.message().into_owned()),
                ..Refused::default()
            };
            view(&state, &session, StatusCode::CONFLICT, None, refused).await
        }
        Err(CreateError::Store(e)) => Err(e.into()),
    }
}

async fn update_warehouse(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: SectionForm,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    // Every field is given (a blank one clears it); the default is changed by its own button.
    let mut body = body(&WAREHOUSE_BODY, &form);
    body.remove("is_default");
    match warehouses::update(&state.core, &admin, &id, WarehouseEdit::parse(&body)).await {
        Ok(_) => Ok(saved(&state, Notice::WarehouseSaved)),
        Err(UpdateError::Invalid(errors)) => {
            let refused = Refused {
                warehouse_edit: Some((id, body, FieldErrors::of(&WAREHOUSE_BODY, errors))),
                ..Refused::default()
            };
            view(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, None, refused).await
        }
        Err(UpdateError::NotFound) => changed(&state, &session, Err(ChangeError::NotFound)).await,
        Err(UpdateError::Contended) => changed(&state, &session, Err(ChangeError::Contended)).await,
        Err(UpdateError::Store(e)) => Err(e.into()),
    }
}

async fn make_default(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let outcome = warehouses::set_default(&state.core, &admin, &id).await.map(|_| Notice::DefaultWarehouseChanged);
    changed(&state, &session, outcome).await
}

async fn confirm_delete_warehouse(
    State(state): State<AppState>,
    Path(id): Path<String>,
    SignedInAdmin { session, admin }: SignedInAdmin,
    asked: Asked,
) -> Result<Response, PageError> {
    let found = warehouses::list(&state.core, &admin).await?.into_iter().find(|w| w.id == id);
    let Some(warehouse) = found else {
        return Ok(confirm::elsewhere(asked, "/dashboard/settings"));
    };
    Ok(confirm::page(
        &session,
        asked,
        Confirm {
            title: format!("Delete the warehouse “{}”?", warehouse.label),
            lines: vec![
                "Listings collected from it move to your default warehouse.".to_owned(),
                "If it is your default, the oldest of your other warehouses becomes the default.".to_owned(),
            ],
            action: format!("/dashboard/settings/warehouses/{}/delete", warehouse.id),
            button: "Delete warehouse".to_owned(),
            cancel: "/dashboard/settings".to_owned(),
            keep: "No, keep the warehouse".to_owned(),
            fields: Vec::new(),
        },
    ))
}

async fn delete_warehouse(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    match warehouses::delete(&state.core, &admin, &id).await {
        Ok(_) => Ok(saved(&state, Notice::WarehouseDeleted)),
        Err(e) => changed(&state, &session, Err(e)).await,
    }
}

async fn changed(
    state: &AppState,
    session: &LiveSession,
    outcome: Result<Notice, ChangeError>,
) -> Result<Response, PageError> {
    let error = match outcome {
        Ok(notice) => return Ok(saved(state, notice)),
        Err(ChangeError::NotFound) => Outcome::WarehouseNotFound,
        Err(ChangeError::Contended) => Outcome::WarehousesContended,
        Err(ChangeError::Store(e)) => return Err(e.into()),
    };
    let refused = Refused { warehouse_error: Some(error.message().into_owned()), ..Refused::default() };
    view(state, session, StatusCode::UNPROCESSABLE_ENTITY, None, refused).await
}
