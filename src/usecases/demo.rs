//! The demo's sample data (decisions 12.2): `rehome serve --demo` seeds enough that every
//! dashboard page shows something: a warehouse, listings (one with a photo), a delivered
//! sale (a wallet entry, then its statement), a trade-in paid in credit (a redemption with
//! a code), an order whose collection is to schedule, and the webhook events they emit.
//! Everything goes through the use cases, as if an admin and the marketplace had done it.

use std::io::Cursor;

use anyhow::Context;
use chrono::{TimeDelta, Utc};
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use serde_json::{json, Value};

use crate::domain::reader::object;

use super::marketplace::{orders, payouts};
use super::photos::{self, PhotoUpload};
use super::{listings, wallet, warehouses, Core};
use crate::domain::listing::{ListingInput, ListingQuery};
use crate::domain::order::{BuyerWindow, Completion, OrderRequest};
use crate::domain::payout::{CreditDestination, CustomerChoice, PayoutChoice};
use crate::domain::settings::NewWarehouse;
use crate::domain::user::Actor;

/// Seeds the sample data once: a brand that has listings is left as it is.
pub async fn sample_data(core: &Core, admin: &Actor) -> anyhow::Result<()> {
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
    let footstool = listing(
        core,
        admin,
        json!({
            "title": "Velvet footstool", "price_gbp": 120, "channel": "clearance", "quantity": 2,
            "category": "Footstools", "condition": "like-new", "faults": ["None"], "sku": "DEMO-STOOL-1",
        }),
    )
    .await?;
    let armchair = listing(
        core,
        admin,
        json!({
            "title": "Leather armchair (trade-in)", "price_gbp": 180, "channel": "exchange",
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
    Ok(())
}

async fn listing(core: &Core, admin: &Actor, body: Value) -> anyhow::Result<i64> {
    let saved = listings::create(core, admin, &ListingInput::from_json(&object(body)))
        .await
        .map_err(|e| anyhow::anyhow!("demo listing: {e:?}"))?;
    Ok(saved.record.id)
}

/// A 640×480 PNG: a grey sofa-ish block on a warm wall.
fn sofa_png() -> anyhow::Result<Vec<u8>> {
    let image = RgbImage::from_fn(640, 480, |x, y| {
        let seat = (80..560).contains(&x) && (220..400).contains(&y);
        let back = (110..530).contains(&x) && (140..230).contains(&y);
        if seat || back {
            Rgb([120, 124, 130])
        } else if y > 400 {
            Rgb([150, 110, 80])
        } else {
            Rgb([235, 225, 205])
        }
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(image).write_to(&mut out, ImageFormat::Png)?;
    Ok(out.into_inner())
}
