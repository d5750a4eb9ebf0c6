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

/// The brand's live listings that the rule of decisions 11.2 matches for `word`, read by the
/// database itself with no index in the way: `lower(title)` or `lower(sku)` contains
/// `lower(word)` (literally), in list order.
async fn by_the_rule(app: &crate::helpers::TestApp, brand_id: i64, word: &str) -> Vec<i64> {
    let pattern = format!("%{}%", word.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
    let raw = app.db.raw().await;
    let found: Vec<i64> = crate::helpers::on_raw!(&raw, |pool| {
        sqlx::query_scalar(
            "SELECT id FROM listings WHERE brand_id = $1 AND deleted_at IS NULL
               AND (lower(title) LIKE lower($2) ESCAPE '\\' OR lower(COALESCE(sku, '')) LIKE lower($2) ESCAPE '\\')
             ORDER BY created_at DESC, id DESC",
        )
        .bind(brand_id)
        .bind(&pattern)
        .fetch_all(pool)
        .await
        .unwrap()
    });
    raw.close().await;
    found
}

/// The search indexes of migration 0050 (SQLite FTS5 trigram, PostgreSQL pg_trgm) find
/// exactly what the rule finds: the same listings, accents and case included, short words,
/// wildcards and quotes, after edits and deletions.
#[tokio::test]
async fn the_search_index_finds_exactly_what_the_rule_finds() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let titles = [
        ("Bouclé armchair", "BCL-1"),
        ("BOUCLÉ SOFA", "BCL-2"),
        ("boucle bench", "bcl-3"),
        ("Crème velvet chair", "CRM-ÀB-100"),
        ("CRÈME linen stool", "crm-àb-101"),
        ("Éclair side table", "ECL-1"),
        ("éclair floor lamp", "ECL-2"),
        ("Sofa 100% linen", "LIN_1"),
        ("Say \"hello\" mirror", "QUO\"TE"),
        ("Straße console", "STR-1"),
        ("STRASSE cabinet", "STR-2"),
        ("Oak sofa", "OAK-1"),
    ];
    let mut ids = Vec::new();
    for (title, sku) in titles {
        ids.push(create_id(&app, &acme.key, json!({"title": title, "sku": sku})).await);
    }
    create_id(&app, &other.key, json!({"title": "Bouclé armchair", "sku": "BCL-1"})).await;
    let brand_id = by_the_rule_brand(&app, ids[0]).await;
    // An edit moves a listing in the index, a deletion takes it out.
    let path = format!("/v1/listings/{}", ids[11]);
    assert_eq!(app.patch(&path, &acme.key, &json!({"title": "Oak bouclé bench"})).await.status(), 200);
    assert_eq!(app.delete(&format!("/v1/listings/{}", ids[2]), &acme.key).await.status(), 200);

    let words = [
        "bouclé",
        "BOUCLÉ",
        "Bouclé",
        "boucle",
        "BOUCLE",
        "oucl",
        "éclair",
        "ÉCLAIR",
        "eclair",
        "clair",
        "crème",
        "CRÈME",
        "àb-10",
        "ÀB",
        "àb",
        "é",
        "É",
        "x",
        "so",
        "sofa",
        "SOFA",
        "100%",
        "lin_",
        "_1",
        "\"hello\"",
        "o\"t",
        "straße",
        "strasse",
        "STRASSE",
        "ß",
        "bench",
        "oak",
        "%",
        "\\",
        "*",
        "a:b",
        "NEAR(",
        "ch-",
    ];
    for word in words {
        let expected = by_the_rule(&app, brand_id, word).await;
        let query = format!("?status=any&per_page=100&q={}", urlencode(word));
        let page = list(&app, &acme.key, &query).await;
        assert_eq!(ids_of(&page), expected, "q={word}");
        assert_eq!(page["meta"]["total"], expected.len(), "q={word}");
    }
    app.stop().await;
}

/// Copies listing `from` `n` times, titled "`title` 1" to "`title` n", in one statement:
/// the copies share its creation time (the list orders them by id) and its brand.
async fn copies(app: &crate::helpers::TestApp, from: i64, n: i64, title: &str) {
    let raw = app.db.raw().await;
    crate::helpers::on_raw!(&raw, |pool| {
        sqlx::query(
            "WITH RECURSIVE n(i) AS (SELECT CAST(1 AS BIGINT) UNION ALL SELECT i + 1 FROM n WHERE i < $2)
             INSERT INTO listings (brand_id, user_id, status, channel, title, category, condition,
               regular_price_pence, delivery_contribution_gbp, quantity, created_at, updated_at)
             SELECT brand_id, user_id, status, channel, CAST($3 AS TEXT) || ' ' || CAST(i AS TEXT), category,
               condition, regular_price_pence, delivery_contribution_gbp, quantity, created_at, updated_at
             FROM listings, n WHERE id = $1",
        )
        .bind(from)
        .bind(n)
        .bind(title)
        .execute(pool)
        .await
        .unwrap();
    });
    raw.close().await;
}

/// Past 1,000 matches a search's total is an estimate (`total_is_estimate`), its pages are
/// still exactly the rule's matches in list order, and a page that reaches the last match
/// makes the total exact again; up to 1,000 the total is exact. Another brand's matches
/// never count.
#[tokio::test]
async fn a_search_past_a_thousand_matches_estimates_its_total_and_pages_on_exactly() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let oak = create_id(&app, &acme.key, json!({"title": "Oak chair", "sku": "OAK-0"})).await;
    copies(&app, oak, 1_100, "Oak chair").await;
    let pine = create_id(&app, &acme.key, json!({"title": "Pine desk"})).await;
    copies(&app, pine, 29, "Pine desk").await;
    let elsewhere = create_id(&app, &other.key, json!({"title": "Oak chair"})).await;
    copies(&app, elsewhere, 49, "Oak chair").await;
    let brand_id = by_the_rule_brand(&app, oak).await;
    let rule = by_the_rule(&app, brand_id, "oak").await;
    assert_eq!(rule.len(), 1_101);

    // Many matches: the first page is the rule's first 20, the total an estimate of them.
    let page = list(&app, &acme.key, "?q=oak").await;
    assert_eq!(ids_of(&page), rule[..20], "{page}");
    assert_eq!(page["meta"]["total_is_estimate"], true, "{}", page["meta"]);
    let total = page["meta"]["total"].as_i64().unwrap();
    assert!((1_001..=1_131).contains(&total), "between what the count saw and the brand's listings: {total}");
    // A middle page is the rule's; the page with the last match makes the total exact; a
    // page past it too.
    let page = list(&app, &acme.key, "?q=oak&per_page=100&page=6").await;
    assert_eq!(ids_of(&page), rule[500..600]);
    assert_eq!(page["meta"]["total_is_estimate"], true);
    for n in [12_usize, 13] {
        let page = list(&app, &acme.key, &format!("?q=oak&per_page=100&page={n}")).await;
        assert_eq!(ids_of(&page), rule.iter().skip((n - 1) * 100).take(100).copied().collect::<Vec<_>>());
        assert_eq!(page["meta"]["total"], 1_101, "page {n}: {}", page["meta"]);
        assert_eq!(page["meta"]["total_is_estimate"], false);
        assert_eq!(page["meta"]["total_pages"], 12);
    }
    // A short word alone walks the brand: the same answers.
    let chair = by_the_rule(&app, brand_id, "ch").await;
    let page = list(&app, &acme.key, "?q=ch&per_page=50").await;
    assert_eq!(ids_of(&page), chair[..50]);
    assert_eq!(page["meta"]["total_is_estimate"], true);
    // Few matches: exact, whatever the other brand has; beside a long word, short ones are
    // checked on its matches.
    for (q, expected) in [("pine", 30), ("oak%20ch", 1_101), ("desk%201", 12), ("oak-0", 1)] {
        let page = list(&app, &acme.key, &format!("?q={q}&per_page=100")).await;
        if expected <= 1_000 {
            assert_eq!(page["meta"]["total"], expected, "q={q}: {}", page["meta"]);
            assert_eq!(page["meta"]["total_is_estimate"], false, "q={q}");
        } else {
            assert_eq!(page["meta"]["total_is_estimate"], true, "q={q}");
        }
    }
    let page = list(&app, &other.key, "?q=oak&per_page=100").await;
    assert_eq!((page["meta"]["total"].as_i64(), page["data"].as_array().unwrap().len()), (Some(50), 50));
    assert_eq!(page["meta"]["total_is_estimate"], false);
    // Without `q` the total is the kept count, exact.
    let page = list(&app, &acme.key, "").await;
    assert_eq!(
        (page["meta"]["total"].as_i64(), page["meta"]["total_is_estimate"].as_bool()),
        (Some(1_131), Some(false))
    );
    app.stop().await;
}

/// The brand of a listing.
async fn by_the_rule_brand(app: &crate::helpers::TestApp, listing: i64) -> i64 {
    let raw = app.db.raw().await;
    let id = crate::helpers::on_raw!(&raw, |pool| {
        sqlx::query_scalar("SELECT brand_id FROM listings WHERE id = $1").bind(listing).fetch_one(pool).await.unwrap()
    });
    raw.close().await;
    id
}

fn ids_of(page: &serde_json::Value) -> Vec<i64> {
    ids(page)
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
