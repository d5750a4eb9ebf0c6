//! A listing's page, `/marketplace/listings/{id}`: exactly the listing's `url`.

use askama::Template;
use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, Form, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;

use super::{cached, message, not_found_page, seo, stylesheet_path, unavailable, Head, BASE};
use crate::domain::checkout::{CheckoutFields, FieldRefusal};
use crate::domain::listing::ListingFields;
use crate::domain::money::Pence;
use crate::domain::storefront::{channel_words, exposure_labels, CatalogueQuery, PageState};
use crate::domain::taxonomy::{CONDITIONS, FAULTS, NONE_VALUE};
use crate::domain::view::{MarketListing, MarketPhoto};
use crate::state::AppState;
use crate::usecases::marketplace::checkout::{self, CheckoutError, Placed};
use crate::usecases::storefront::{self, BrandFace, ListingPage};

/// A photo of the gallery: its sizes for `srcset`, the largest for the link.
pub struct PhotoView {
    pub src: String,
    pub srcset: String,
    pub full: String,
    pub width: i64,
    pub height: i64,
    pub alt: String,
}

/// The width of a `width`×`height` picture made to fit a `side`×`side` box (never enlarged).
fn fitted_width(width: i64, height: i64, side: i64) -> i64 {
    let longest = width.max(height).max(1);
    if longest <= side {
        width
    } else {
        (width * side + longest / 2) / longest
    }
}

impl PhotoView {
    fn of(photo: &MarketPhoto, media: &str, title: &str, n: usize, of: usize) -> Self {
        let url = |name: &str| format!("{media}/{name}");
        // Each size once, narrowest first: a picture no wider than a size's box is that size.
        let sizes = [
            (photo.medium.as_deref(), fitted_width(photo.width, photo.height, 300)),
            (photo.large.as_deref(), fitted_width(photo.width, photo.height, 1024)),
            (Some(photo.name.as_str()), photo.width),
        ];
        let mut srcset: Vec<String> = Vec::new();
        let mut widest = 0;
        for (name, width) in sizes {
            if let Some(name) = name.filter(|_| width > widest) {
                srcset.push(format!("{} {width}w", url(name)));
                widest = width;
            }
        }
        // The page shows the large size where it exists: it is what the gallery's width needs.
        let src = photo.large.as_deref().or(photo.medium.as_deref()).map_or_else(|| url(&photo.name), url);
        let alt = if of > 1 { format!("{title}, photo {n} of {of}") } else { title.to_owned() };
        Self { src, srcset: srcset.join(", "), full: url(&photo.name), width: photo.width, height: photo.height, alt }
    }
}

#[derive(Template)]
#[template(path = "storefront/listing.html")]
struct ListingPageView {
    head: Head,
    /// Buyers pay by card through the gateway (decisions 14.4).
    pays_by_card: bool,
    stylesheet: &'static str,
    title: String,
    category: String,
    category_lower: String,
    category_href: String,
    similar_href: String,
    brand_name: String,
    brand_href: String,
    brand_tagline: String,
    support: String,
    sold: bool,
    price: String,
    was: Option<String>,
    saving: String,
    rrp: Option<String>,
    stock: String,
    channel: &'static str,
    condition: &'static str,
    condition_help: &'static str,
    labels: Vec<&'static str>,
    details: Vec<(&'static str, String)>,
    measurements: Vec<(String, String, String, String)>,
    description: Option<String>,
    photos: Vec<PhotoView>,
    id: i64,
    /// Units left (the form offers a quantity only when there are several).
    quantity: i64,
    form: CheckoutForm,
    buyer_fields: Vec<BuyerField>,
}

/// A field of the checkout form as drawn.
pub struct BuyerField {
    pub name: &'static str,
    pub label: &'static str,
    pub kind: &'static str,
    pub autocomplete: &'static str,
    pub required: bool,
    pub value: String,
    pub error: Option<&'static str>,
}

/// The buyer's fields: (name, label, input type, autocomplete, required).
const BUYER_FIELDS: [(&str, &str, &str, &str, bool); 4] = [
    ("name", "Your name", "text", "name", true),
    ("email", "Email", "email", "email", true),
    ("phone", "Phone (optional)", "tel", "tel", false),
    ("postcode", "Delivery postcode (UK)", "text", "postal-code", true),
];

/// The checkout form of a listing on sale: its anti-forgery token, what the buyer typed, and
/// what must be corrected.
#[derive(Debug, Clone, Default)]
pub struct CheckoutForm {
    pub csrf: String,
    pub values: CheckoutFields,
    pub errors: Vec<FieldRefusal>,
    /// A refusal of the whole order (sold meanwhile, too many).
    pub refusal: Option<String>,
}

impl CheckoutForm {
    /// The sentence for `field`, if it must be corrected.
    pub fn error(&self, field: &str) -> Option<&'static str> {
        self.errors.iter().find(|e| e.field == field).map(|e| e.sentence)
    }

    /// What the buyer typed in `field`.
    pub fn value(&self, field: &str) -> &str {
        let v = &self.values;
        let value = match field {
            "name" => &v.name,
            "email" => &v.email,
            "phone" => &v.phone,
            "postcode" => &v.postcode,
            "quantity" => &v.quantity,
            _ => &None,
        };
        value.as_deref().unwrap_or("")
    }
}

/// `GET /marketplace/listings/{id}`: 200 on sale or sold, 410 trashed, 404 draft or unknown.
/// A view by a person counts in the listing's `view_count`, once a visitor a day.
pub async fn listing(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let Some(id) = id.parse::<i64>().ok().filter(|id| *id > 0) else {
        return not_found_page();
    };
    let page = match storefront::listing_page(&state.core, id).await {
        Ok(page) => page,
        Err(e) => return unavailable(&e),
    };
    let (state_of, listing, brand) = match page {
        ListingPage::Shown { state, listing, brand } => (state, listing, brand),
        ListingPage::Removed => {
            return message(
                StatusCode::GONE,
                "This item has been removed",
                "The seller has taken this item off the marketplace. Similar pieces may still be for sale.",
            )
        }
        ListingPage::NotFound => return not_found_page(),
    };
    if state_of == PageState::OnSale {
        let agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
        if let Err(error) = storefront::count_view(&state.core, id, peer.ip(), agent, Utc::now()).await {
            // A view not counted never costs the buyer the page.
            tracing::warn!(%error, listing_id = id, "cannot count a listing view");
        }
    }
    let form = match state_of {
        PageState::OnSale => match checkout::anti_forgery(&state.core, Utc::now().date_naive()).await {
            Ok(csrf) => CheckoutForm { csrf, ..CheckoutForm::default() },
            Err(e) => return unavailable(&e),
        },
        _ => CheckoutForm::default(),
    };
    let view = view(&state, &listing, brand.as_deref(), state_of == PageState::Sold, form);
    let mut response = cached(&headers, StatusCode::OK, &view, &view.head);
    set_anti_forgery_cookie(&state, &mut response, &view.form.csrf);
    response
}

/// The cookie half of the checkout form's double submit: the same token as the form's,
/// sent back only with posts from this site (`SameSite=Strict`), never readable by script.
pub(super) fn set_anti_forgery_cookie(state: &AppState, response: &mut Response, token: &str) {
    if token.is_empty() {
        return;
    }
    let secure =
        if state.config.public_url.as_deref().is_some_and(|u| u.starts_with("https:")) { "; Secure" } else { "" };
    let cookie = format!("{CSRF_COOKIE}={token}; Path={BASE}; Max-Age=172800; HttpOnly; SameSite=Strict{secure}");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// The checkout's anti-forgery cookie.
const CSRF_COOKIE: &str = "rehome_checkout";

/// `POST /marketplace/listings/{id}/checkout` (decisions 14.3): a buyer buys. 303 to the
/// order's page; every refusal a sentence on the listing's page, nothing taken.
pub async fn checkout_post(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    form: Result<Form<CheckoutFields>, FormRejection>,
) -> Response {
    let Some(id) = id.parse::<i64>().ok().filter(|id| *id > 0) else {
        return not_found_page();
    };
    let Ok(Form(fields)) = form else {
        return message(StatusCode::BAD_REQUEST, "That order could not be read", "Go back to the item and try again.");
    };
    match forged(&state, &headers, fields.csrf.as_deref().unwrap_or("")).await {
        Ok(false) => {}
        Ok(true) => {
            return message(
                StatusCode::FORBIDDEN,
                "This form has expired",
                "Nothing was bought. Go back to the item, reload its page and order again.",
            )
        }
        Err(page) => return page,
    }
    let (status, form) = match fields.parse() {
        Err(errors) => (StatusCode::BAD_REQUEST, CheckoutForm { errors, ..CheckoutForm::default() }),
        Ok((buyer, quantity)) => match checkout::checkout(&state.core, id, &buyer, quantity).await {
            Ok(placed) => {
                let location = match placed {
                    Placed::Order { token, .. } => format!("{BASE}/orders/{token}"),
                    Placed::Payment { url } => url,
                };
                return (
                    StatusCode::SEE_OTHER,
                    [(header::LOCATION, location), (header::CACHE_CONTROL, "no-store".to_owned())],
                )
                    .into_response();
            }
            Err(CheckoutError::NotFound) => return not_found_page(),
            Err(CheckoutError::SoldOut) => (
                StatusCode::CONFLICT,
                CheckoutForm {
                    refusal: Some("Sorry: this piece has just sold. Nothing was taken.".into()),
                    ..CheckoutForm::default()
                },
            ),
            Err(CheckoutError::TooMany { left }) => {
                let sentence = if left == 1 {
                    "Only one is left: order one.".to_owned()
                } else {
                    format!("Only {left} are left: order {left} or fewer.")
                };
                (StatusCode::CONFLICT, CheckoutForm { refusal: Some(sentence), ..CheckoutForm::default() })
            }
            Err(CheckoutError::PaymentUnavailable) => (
                StatusCode::SERVICE_UNAVAILABLE,
                CheckoutForm {
                    refusal: Some(
                        "Sorry: card payments cannot be taken just now. Nothing was taken; try again in a few minutes."
                            .into(),
                    ),
                    ..CheckoutForm::default()
                },
            ),
            Err(CheckoutError::Store(e)) => return unavailable(&e),
            Err(CheckoutError::Other(e)) => {
                tracing::error!(error = %e, "checkout failed");
                return message(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Something went wrong",
                    "Nothing was bought. Please try again.",
                );
            }
        },
    };
    // The listing's page again, with the sentences and what was typed.
    let page = match storefront::listing_page(&state.core, id).await {
        Ok(page) => page,
        Err(e) => return unavailable(&e),
    };
    let ListingPage::Shown { state: state_of, listing, brand } = page else {
        return not_found_page();
    };
    let csrf = if state_of == PageState::OnSale { fields.csrf.clone().unwrap_or_default() } else { String::new() };
    let form = CheckoutForm { csrf, values: CheckoutFields { csrf: None, ..fields }, ..form };
    let mut view = view(&state, &listing, brand.as_deref(), state_of == PageState::Sold, form);
    // A screen reader hears first that something went wrong.
    view.head.title = format!("Not ordered yet: {}", view.head.title);
    let mut response = cached(&HeaderMap::new(), status, &view, &view.head);
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// True unless the post carries the anti-forgery cookie and the same token in its form, of
/// today or yesterday, and comes from this site (the browser's `Sec-Fetch-Site`, when sent).
pub(super) async fn forged(state: &AppState, headers: &HeaderMap, token: &str) -> Result<bool, Response> {
    use subtle::ConstantTimeEq;
    let cross_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()).is_some_and(|v| v == "cross-site");
    let cookie = crate::web::cookies::get(headers, CSRF_COOKIE).unwrap_or_default();
    if cross_site || token.is_empty() || !bool::from(cookie.as_bytes().ct_eq(token.as_bytes())) {
        return Ok(true);
    }
    let holds = checkout::anti_forgery_holds(&state.core, token, Utc::now()).await.map_err(|e| unavailable(&e))?;
    Ok(!holds)
}

fn view(
    state: &AppState,
    listing: &MarketListing,
    brand: Option<&BrandFace>,
    sold: bool,
    form: CheckoutForm,
) -> ListingPageView {
    let fields = &listing.record.fields;
    let id = listing.record.id;
    let url = format!("{}/listings/{id}", state.config.marketplace_url());
    let public = state.config.media_url();
    let price = fields.price();
    let (brand_name, brand_tagline) = match brand {
        Some(b) => (b.name.clone(), b.profile.tagline.clone()),
        None => (listing.brand_name.clone(), String::new()),
    };
    let support = brand.map(|b| support_words(&b.profile.support_email, &b.profile.support_phone)).unwrap_or_default();
    let image = listing.photos.first().map(|p| format!("{public}/{}", p.large.as_deref().unwrap_or(&p.name)));
    let images: Vec<String> = listing.photos.iter().map(|p| format!("{public}/{}", p.name)).collect();
    let plain = fields.description.as_deref().map(seo::plain_text).unwrap_or_default();
    let description = if plain.is_empty() {
        format!(
            "{} from {brand_name}: {}, {}, {}.",
            fields.title,
            channel_words(fields.channel).to_lowercase(),
            fields.condition.words().to_lowercase(),
            price.pounds()
        )
    } else {
        seo::clip(&plain, 155)
    };
    let json_ld = seo::product(&seo::Product {
        url: &url,
        fields,
        brand: &brand_name,
        images: &images,
        description: &plain,
        sold,
    });
    let head = Head {
        title: format!("{} · {} · rehome marketplace", fields.title, price.pounds()),
        description,
        canonical: Some(url),
        og_type: "product",
        image,
        extra: vec![("product:price:amount", price.to_string()), ("product:price:currency", "GBP".to_owned())],
        json_ld: Some(json_ld),
        ..Head::default()
    };
    let of = listing.photos.len();
    let media = super::media_prefix(&state.config);
    let photos =
        listing.photos.iter().enumerate().map(|(i, p)| PhotoView::of(p, &media, &fields.title, i + 1, of)).collect();
    let similar =
        CatalogueQuery { category: crate::domain::storefront::category(&fields.category), ..CatalogueQuery::default() };
    ListingPageView {
        head,
        stylesheet: stylesheet_path(),
        title: fields.title.clone(),
        category: fields.category.clone(),
        category_lower: fields.category.to_lowercase(),
        category_href: similar.href(|_| {}),
        similar_href: similar.href(|_| {}),
        brand_href: format!("{BASE}/brands/{}", listing.brand_slug),
        brand_name,
        brand_tagline,
        support,
        sold,
        price: price.pounds(),
        was: fields.sale_price.map(|_| fields.regular_price.pounds()),
        saving: fields
            .sale_price
            .map(|sale| Pence::new(fields.regular_price.get() - sale.get()).pounds())
            .unwrap_or_default(),
        rrp: fields.rrp.filter(|rrp| *rrp > price).map(|rrp| rrp.pounds()),
        stock: match fields.quantity {
            1 => "One available".to_owned(),
            n => format!("{n} available"),
        },
        channel: channel_words(fields.channel),
        condition: fields.condition.words(),
        condition_help: CONDITIONS
            .iter()
            .find(|c| c.value == fields.condition.as_str())
            .and_then(|c| c.help)
            .unwrap_or(""),
        labels: exposure_labels(&fields.exposed_to),
        details: details(fields),
        measurements: fields
            .measurements
            .iter()
            .map(|m| (m.item_type.clone(), m.w_cm.to_string(), m.d_cm.to_string(), m.h_cm.to_string()))
            .collect(),
        description: fields.description.as_deref().map(ammonia::clean).filter(|d| !d.trim().is_empty()),
        photos,
        id,
        quantity: fields.quantity,
        buyer_fields: BUYER_FIELDS
            .iter()
            .map(|&(name, label, kind, autocomplete, required)| BuyerField {
                name,
                label,
                kind,
                autocomplete,
                required,
                value: form.value(name).to_owned(),
                error: form.error(name),
            })
            .collect(),
        pays_by_card: state.payments.is_some(),
        form,
    }
}

/// "help@acme.example or +44 20 7946 0000", from what the brand gives.
fn support_words(email: &str, phone: &str) -> String {
    match (email.is_empty(), phone.is_empty()) {
        (false, false) => format!("{email} or {phone}", phone = phone.replace(' ', "\u{a0}")),
        (false, true) => email.to_owned(),
        (true, false) => phone.replace(' ', "\u{a0}"),
        (true, true) => String::new(),
    }
}

/// The details a buyer compares, each only when given.
fn details(fields: &ListingFields) -> Vec<(&'static str, String)> {
    let mut details = vec![("Category", fields.category.clone())];
    let optional = [
        ("Made by", &fields.brand),
        ("Colour", &fields.colour),
        ("Material", &fields.fabric),
        ("Age", &fields.age_years),
    ];
    for (term, value) in optional {
        if let Some(value) = value.as_ref().filter(|v| !v.is_empty()) {
            details.push((term, value.clone()));
        }
    }
    if let Some(from) = fields.available_from.as_ref().and_then(|d| crate::domain::text::parse_date(d)) {
        details.push(("Available from", from.format("%-d %B %Y").to_string()));
    }
    let faults: Vec<&str> = fields
        .faults
        .iter()
        .filter(|f| f.as_str() != NONE_VALUE)
        .map(|f| FAULTS.iter().find(|c| c.value == f.as_str()).map_or(f.as_str(), |c| c.label))
        .collect();
    details.push(("Known faults", if faults.is_empty() { "None".to_owned() } else { faults.join(", ") }));
    details
}

#[cfg(test)]
mod tests {
    use super::fitted_width;

    #[test]
    fn a_size_keeps_the_aspect_and_never_enlarges() {
        assert_eq!(fitted_width(640, 480, 300), 300);
        assert_eq!(fitted_width(480, 640, 300), 225);
        assert_eq!(fitted_width(200, 100, 300), 200);
        assert_eq!(fitted_width(4000, 3000, 1024), 1024);
    }
}
