//! The demo's sample data (decisions 12.2): `rehome serve --demo` seeds enough that every
//! dashboard page shows something: a warehouse, listings (one with a photo), a delivered
//! sale (a wallet entry, then its statement), a trade-in paid in credit (a redemption with
//! a code), an order whose collection is to schedule, and the webhook events they emit.
//! Everything goes through the use cases, as if an admin and the marketplace had done it.
//! The storefront gets two more brands with profiles, and listings with photos in both
//! channels, so that the catalogue, the brands' pages and a listing's gallery show something.

use std::io::Cursor;

use anyhow::Context;
use chrono::{TimeDelta, Utc};
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use serde_json::{json, Value};

use rehome_domain::reader::object;

use super::marketplace::{orders, payouts};
use super::photos::{self, PhotoUpload};
use super::{accounts, listings, settings, wallet, warehouses, Core};
use rehome_domain::listing::{ListingInput, ListingQuery};
use rehome_domain::order::{BuyerWindow, Completion, OrderRequest};
use rehome_domain::payout::{CreditDestination, CustomerChoice, PayoutChoice};
use rehome_domain::settings::{NewWarehouse, ProfileEdit};
use rehome_domain::user::{Admin, Role};

/// Seeds the sample data once: a brand that has listings is left as it is.
pub async fn sample_data(core: &Core, admin: &Admin) -> anyhow::Result<()> {
    if listings::list(core, admin, ListingQuery::default(), 1, 0).await?.total > 0 {
        return Ok(());
    }
    let leeds =
        object(json!({"label": "Leeds DC", "address_1": "1 Dock Road", "city": "Leeds", "postcode": "LS1 4AP"}));
    let leeds = NewWarehouse::parse(&leeds).map_err(|e| anyhow::anyhow!("demo warehouse: {e:?}"))?;
    warehouses::create(core, admin, &leeds).await.map_err(|e| anyhow::anyhow!("demo warehouse: {e}"))?;
    let photo = photos::upload(core, admin, PhotoUpload { bytes: sofa_png()?, filename: Some("sofa.png".into()) })
        .await
        .map_err(|e| anyhow::anyhow!("demo photo: {e}"))?;
    let sofa = listing(
        core,
        admin,
        json!({
            "title": "Grey velvet 3-seater sofa", "price_gbp": 450, "channel": "clearance", "quantity": 5,
            "category": "3-Seater Sofas", "condition": "excellent", "faults": ["None"], "sku": "DEMO-SOFA-1",
            "attachment_ids": [photo.id],
        }),
    )
    .await?;
    let footstool = photographed_listing(
        core,
        admin,
        &[SofaColours { body: [110, 60, 90], wall: [240, 232, 222] }],
        json!({
            "title": "Velvet footstool", "price_gbp": 120, "channel": "clearance", "quantity": 2,
            "category": "Footstools", "condition": "like-new", "faults": ["None"], "sku": "DEMO-STOOL-1",
        }),
    )
    .await?;
    let armchair = photographed_listing(
        core,
        admin,
        &[SofaColours { body: [120, 80, 50], wall: [232, 228, 220] }],
        json!({
            "title": "Brown leather armchair", "price_gbp": 180, "channel": "exchange",
            "category": "Armchairs", "condition": "gently-used", "faults": ["None"],
        }),
    )
    .await?;
    let today = Utc::now().date_naive();
    let window = BuyerWindow::default_from(today).context("the default buyer window")?;
    // A sale delivered three days ago: past the hold, so the statement pays it.
    let sale = orders::place(core, &OrderRequest { listing_id: sofa, quantity: 1, window }).await?;
    let delivered = Utc::now() - TimeDelta::days(3);
    orders::complete(core, sale.id, Completion { completed_at: Some(delivered) }).await?;
    wallet::run(&core.store, Utc::now(), core.config.mail_enabled().then_some(&core.mail)).await?;
    // Another sale, delivered now: a pending entry.
    let pending = orders::place(core, &OrderRequest { listing_id: sofa, quantity: 1, window }).await?;
    orders::complete(core, pending.id, Completion { completed_at: None }).await?;
    // An order whose collection is to schedule.
    orders::place(core, &OrderRequest { listing_id: footstool, quantity: 1, window }).await?;
    // A trade-in sold and delivered; its customer takes store credit as a code.
    let trade = orders::place(core, &OrderRequest { listing_id: armchair, quantity: 1, window }).await?;
    orders::complete(core, trade.id, Completion { completed_at: None }).await?;
    let choice = PayoutChoice {
        customer_id: "cus_demo_1".to_owned(),
        choice: CustomerChoice::Credit,
        destination: Some(CreditDestination::Code),
        original_order_id: None,
    };
    payouts::choose(core, trade.id, choice).await?;
    // Credit worth a fifth more than cash: what a customer's payout page then offers.
    let boost = rehome_domain::payout::PayoutOptionsPatch { credit_boost_percent: Some(120), ..Default::default() };
    payouts::change_options(core, admin, &boost, None).await.map_err(|e| anyhow::anyhow!("demo payouts: {e:?}"))?;
    profile(
        core,
        admin,
        json!({"display_name": "Demo Furniture Co", "tagline": "Sofas made in Yorkshire, sold twice.",
               "description": "Every piece here comes back from our showrooms or our customers, checked by our workshop in Leeds.",
               "support_email": "help@demo-furniture.example", "support_phone": "+44 113 496 0000", "accent_color": "#24443A"}),
    )
    .await?;
    let more = [
        (
            vec![
                SofaColours { body: [70, 72, 78], wall: [235, 225, 205] },
                SofaColours { body: [70, 72, 78], wall: [210, 222, 230] },
                SofaColours { body: [70, 72, 78], wall: [246, 240, 226] },
            ],
            json!({
            "title": "Charcoal corner sofa, left hand facing", "price_gbp": 1450, "sale_price_gbp": 1199,
            "rrp_gbp": 2400, "channel": "clearance", "quantity": 3, "category": "Corner Sofas", "condition": "like-new",
            "faults": ["None"], "exposed_to": ["None"], "colour": "Charcoal", "fabric": "Wool",
            "measurements": [{"type": "Corner Sofa", "w_cm": 268, "d_cm": 182, "h_cm": 86}],
            "description": "<p>Ex-display corner sofa in a hard-wearing wool blend. Feather-wrapped seat cushions.</p>"}),
        ),
        (
            vec![SofaColours { body: [46, 84, 70], wall: [240, 236, 228] }],
            json!({
            "title": "Green velvet 2-seater sofa", "price_gbp": 640, "channel": "exchange",
            "category": "2-Seater Sofas", "condition": "excellent", "faults": ["None"], "exposed_to": ["Cats"],
            "colour": "Green", "fabric": "Velvet", "age_years": "3 years old",
            "measurements": [{"type": "2-Seater", "w_cm": 172, "d_cm": 92, "h_cm": 84}],
            "description": "Traded in by its first owner: a cat lived in the house; professionally cleaned."}),
        ),
    ];
    for (colours, body) in more {
        photographed_listing(core, admin, &colours, body).await?;
    }
    for brand in &OTHER_BRANDS {
        other_brand(core, brand).await?;
    }
    Ok(())
}

/// The colours of a generated sofa picture.
#[derive(Clone, Copy)]
struct SofaColours {
    body: [u8; 3],
    wall: [u8; 3],
}

/// Another brand of the storefront: its profile and listings with photos.
struct OtherBrand {
    slug: &'static str,
    name: &'static str,
    profile: fn() -> Value,
    listings: fn() -> Vec<(SofaColours, Value)>,
}

const OTHER_BRANDS: [OtherBrand; 2] = [
    OtherBrand {
        slug: "oakhaven",
        name: "Oakhaven Living",
        profile: || {
            json!({"display_name": "Oakhaven Living", "tagline": "Solid wood and natural fabrics since 1962.",
                   "description": "Our pre-loved pieces come back through our trade-in scheme.\nEach is inspected, cleaned and photographed before it is listed.",
                   "support_email": "care@oakhaven.example", "accent_color": "#F2C14E"})
        },
        listings: || {
            vec![
                (
                    SofaColours { body: [196, 164, 120], wall: [245, 242, 235] },
                    json!({
                    "title": "Oatmeal linen armchair", "price_gbp": 320, "channel": "exchange", "category": "Armchairs",
                    "condition": "gently-used", "faults": ["None"], "exposed_to": ["None"], "colour": "Natural",
                    "fabric": "Linen", "age_years": "5 years old",
                    "measurements": [{"type": "Chair", "w_cm": 84, "d_cm": 88, "h_cm": 90}]}),
                ),
                (
                    SofaColours { body: [150, 110, 80], wall: [250, 246, 240] },
                    json!({
                    "title": "Tan leather 3-seater sofa", "price_gbp": 980, "sale_price_gbp": 850, "channel": "clearance",
                    "quantity": 2, "category": "3-Seater Sofas", "condition": "excellent", "faults": ["None"],
                    "colour": "Tan", "fabric": "Leather",
                    "description": "Discontinued colour from our Harrogate showroom. Full-grain leather, oak feet."}),
                ),
                (
                    SofaColours { body: [70, 80, 120], wall: [236, 238, 244] },
                    json!({
                    "title": "Navy sofa bed with storage", "price_gbp": 720, "channel": "exchange", "category": "Sofa Beds",
                    "condition": "fair", "faults": ["Rips or tears"], "exposed_to": ["Dogs", "Smoke"], "colour": "Navy",
                    "fabric": "Cotton", "age_years": "9 years old",
                    "description": "A small tear on the back, shown in the photos. Mechanism works smoothly."}),
                ),
            ]
        },
    },
    OtherBrand {
        slug: "nordvik",
        name: "Nordvik Studio",
        profile: || {
            json!({"display_name": "Nordvik Studio", "tagline": "Quiet Scandinavian design, built to be kept.",
                   "support_phone": "+44 20 7946 0123", "accent_color": "#1F3A5F"})
        },
        listings: || {
            vec![
                (
                    SofaColours { body: [230, 226, 214], wall: [200, 210, 214] },
                    json!({
                    "title": "Bouclé footstool in cream", "price_gbp": 149, "channel": "clearance", "quantity": 12,
                    "category": "Footstools", "condition": "like-new", "faults": ["None"], "colour": "Cream",
                    "fabric": "Bouclé", "measurements": [{"type": "Footstool", "w_cm": 60, "d_cm": 60, "h_cm": 42}]}),
                ),
                (
                    SofaColours { body: [90, 90, 95], wall: [225, 220, 210] },
                    json!({
                    "title": "Grey U-shape sofa", "price_gbp": 2100, "sale_price_gbp": 1790, "channel": "clearance",
                    "quantity": 1, "category": "Corner Sofas", "condition": "excellent", "faults": ["Fire Label"],
                    "colour": "Grey", "fabric": "Chenille",
                    "measurements": [{"type": "U-Shape Sofa", "w_cm": 320, "d_cm": 210, "h_cm": 80}]}),
                ),
                (
                    SofaColours { body: [170, 60, 50], wall: [240, 230, 220] },
                    json!({
                    "title": "Rust velvet armchair", "price_gbp": 275, "channel": "exchange", "category": "Armchairs",
                    "condition": "like-new", "faults": ["None"], "exposed_to": ["None"], "colour": "Red",
                    "fabric": "Velvet", "age_years": "1 year old"}),
                ),
            ]
        },
    },
];

/// Seeds another storefront brand once: its admin, profile and listings.
async fn other_brand(core: &Core, brand: &OtherBrand) -> anyhow::Result<()> {
    if core.store.brand_by_slug(brand.slug).await?.is_some() {
        return Ok(());
    }
    let record = accounts::create_brand(&core.store, brand.slug, brand.name).await?;
    let email = format!("admin@{}.example", brand.slug);
    let user = accounts::create_user(&core.store, brand.slug, "Demo Admin", &email, Role::Admin).await?;
    let admin = Admin::operator(record.id, brand.slug.to_owned(), user.id, user.name);
    profile(core, &admin, (brand.profile)()).await?;
    for (colours, body) in (brand.listings)() {
        photographed_listing(core, &admin, &[colours], body).await?;
    }
    Ok(())
}

async fn profile(core: &Core, admin: &Admin, body: Value) -> anyhow::Result<()> {
    settings::update_profile(core, admin, ProfileEdit::parse(&object(body)), None)
        .await
        .map_err(|e| anyhow::anyhow!("demo profile: {e:?}"))?;
    Ok(())
}

/// A listing with a generated photo of each of `shots`' colours.
async fn photographed_listing(
    core: &Core,
    admin: &Admin,
    shots: &[SofaColours],
    mut body: Value,
) -> anyhow::Result<i64> {
    let mut ids = Vec::new();
    for &colours in shots {
        let upload = PhotoUpload { bytes: sofa_png_of(colours)?, filename: Some("sofa.png".into()) };
        let photo = photos::upload(core, admin, upload).await.map_err(|e| anyhow::anyhow!("demo photo: {e}"))?;
        ids.push(photo.id);
    }
    if let Value::Object(map) = &mut body {
        map.insert("attachment_ids".into(), json!(ids));
    }
    listing(core, admin, body).await
}

async fn listing(core: &Core, admin: &Admin, body: Value) -> anyhow::Result<i64> {
    let saved = listings::create(core, admin, &ListingInput::from_json(&object(body)))
        .await
        .map_err(|e| anyhow::anyhow!("demo listing: {e:?}"))?;
    Ok(saved.record.id)
}

/// A 640×480 PNG: a grey sofa-ish block on a warm wall.
fn sofa_png() -> anyhow::Result<Vec<u8>> {
    sofa_png_of(SofaColours { body: [120, 124, 130], wall: [235, 225, 205] })
}

/// A 640×480 PNG: a sofa-ish block of `colours.body` on a wall of `colours.wall`.
fn sofa_png_of(colours: SofaColours) -> anyhow::Result<Vec<u8>> {
    let image = RgbImage::from_fn(640, 480, |x, y| {
        let seat = (80..560).contains(&x) && (220..400).contains(&y);
        let back = (110..530).contains(&x) && (140..230).contains(&y);
        if seat || back {
            Rgb(colours.body)
        } else if y > 400 {
            Rgb([150, 110, 80])
        } else {
            Rgb(colours.wall)
        }
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(image).write_to(&mut out, ImageFormat::Png)?;
    Ok(out.into_inner())
}
