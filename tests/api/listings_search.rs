//! Finding listings by SKU and by words (decisions 11.2): `sku` matches exactly, every word
//! of `q` must appear in the title or the SKU whatever the case, wildcards match literally,
//! and only the caller's brand is searched.

use serde_json::json;

use crate::helpers::{assert_error, spawn_app};
use crate::listings::{create_id, ids, list};

#[tokio::test]
async fn sku_and_words_find_the_brands_listings() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let oak = create_id(&app, &acme.key, json!({"title": "Oak frame sofa", "sku": "OAK-100"})).await;
    let velvet = create_id(&app, &acme.key, json!({"title": "Velvet armchair", "sku": "VEL_7"})).await;
    let percent = create_id(&app, &acme.key, json!({"title": "Sofa 100% linen", "sku": "LIN-1"})).await;
    create_id(&app, &other.key, json!({"title": "Oak frame sofa", "sku": "OAK-100"})).await;

    assert_eq!(ids(&list(&app, &acme.key, "?sku=OAK-100").await), [oak]);
    assert!(ids(&list(&app, &acme.key, "?sku=oak-100").await).is_empty(), "sku is exact");
    assert_eq!(ids(&list(&app, &acme.key, "?q=oak%20SOFA").await), [oak]);
    assert_eq!(ids(&list(&app, &acme.key, "?q=sofa").await), [percent, oak]);
    assert_eq!(ids(&list(&app, &acme.key, "?q=vel_7").await), [velvet], "a word may match the SKU");
    assert_eq!(ids(&list(&app, &acme.key, "?q=100%25").await), [percent], "% matches itself");
    assert!(ids(&list(&app, &acme.key, "?q=VEL%5F%5F").await).is_empty(), "_ matches itself");
    assert!(ids(&list(&app, &acme.key, "?q=oak%20velvet").await).is_empty(), "every word must match");
    assert_eq!(list(&app, &acme.key, "?q=sofa").await["meta"]["total"], 2);

    for (query, code) in [("?sku=", "sku_invalid"), ("?q=%20", "q_invalid")] {
        let body =
            assert_error(app.get(&format!("/v1/listings{query}"), &acme.key).await, 400, "validation_failed").await;
        assert_eq!(body["errors"][0]["code"], code, "{query}: {body}");
    }
    app.stop().await;
}
