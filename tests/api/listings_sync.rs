//! Listing sync (decisions 11.2): `updated_since` walks every listing changed since, trashed
//! ones too, in (`updated_at`, `id`) order by cursor; a walk while another client (on
//! another node) changes listings still visits every change.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rehome::domain::time::Ts;
use serde_json::{json, Value};

use crate::helpers::{assert_error, json, on_raw, second_node, spawn_app, TestApp};
use crate::listings::{create, create_id, ids, list, listing};

/// Walks from `query` to the end, `per_page` at a time: every listing seen, in order.
async fn walk(app: &TestApp, key: &str, query: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    let mut page = list(app, key, query).await;
    loop {
        seen.extend(page["data"].as_array().unwrap().iter().cloned());
        let meta = &page["meta"];
        if meta["has_more"] != json!(true) {
            assert_eq!(meta["next_cursor"], Value::Null, "{meta}");
            return seen;
        }
        let cursor = meta["next_cursor"].as_str().expect("a cursor while has_more");
        page = list(app, key, &format!("?cursor={cursor}&per_page={}", meta["per_page"])).await;
    }
}

fn since(at: &str) -> String {
    format!("?updated_since={}&per_page=2", at.replace('+', "%2B"))
}

#[tokio::test]
async fn a_walk_shows_every_change_in_order_with_trashed_listings() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let old = create_id(&app, &acme.key, json!({"title": "Before the walk"})).await;
    let detail = json(app.get(&format!("/v1/listings/{old}"), &acme.key).await).await;
    let start = detail["updated_at"].as_str().unwrap().to_owned();
    assert_eq!(detail["deleted_at"], Value::Null);

    let draft = create_id(&app, &acme.key, json!({"title": "A draft", "status": "draft"})).await;
    let gone = create_id(&app, &acme.key, json!({"title": "Soon trashed"})).await;
    let edited = create_id(&app, &acme.key, json!({"title": "Edited later"})).await;
    create_id(&app, &other.key, json!({"title": "Another brand's"})).await;
    assert_eq!(app.delete(&format!("/v1/listings/{gone}"), &acme.key).await.status(), 200);
    let response = app.patch(&format!("/v1/listings/{edited}"), &acme.key, &json!({"title": "Edited"})).await;
    assert_eq!(response.status(), 200);

    let seen = walk(&app, &acme.key, &since(&start)).await;
    let order: Vec<i64> = seen.iter().map(|l| l["id"].as_i64().unwrap()).collect();
    assert_eq!(order, [old, draft, gone, edited], "changed at or after the instant, in change order, drafts too");
    let stamps: Vec<&str> = seen.iter().map(|l| l["updated_at"].as_str().unwrap()).collect();
    assert!(stamps.windows(2).all(|w| w[0] < w[1]), "updated_at ascends: {stamps:?}");
    assert!(seen[2]["deleted_at"].is_string(), "{}", seen[2]);
    assert_eq!(seen[2]["deleted_at"], seen[2]["updated_at"]);
    assert!(seen.iter().filter(|l| l["id"] != gone).all(|l| l["deleted_at"].is_null()));
    assert_eq!(seen[3]["title"], "Edited");

    // From the last instant seen: that listing again, and nothing older.
    let last = seen[3]["updated_at"].as_str().unwrap();
    assert_eq!(ids(&list(&app, &acme.key, &since(last)).await), [edited]);
    // Filters still apply; trashed listings are not on numbered pages.
    assert_eq!(ids(&list(&app, &acme.key, &format!("{}&status=draft", since(&start))).await), [draft]);
    assert!(!ids(&list(&app, &acme.key, "?status=any&per_page=100").await).contains(&gone));
    let numbered = list(&app, &acme.key, "").await;
    assert!(numbered["meta"]["total"].is_number() && numbered["meta"].get("has_more").is_none(), "{numbered}");
    // Each page's meta says which kind it is (the document's discriminator).
    assert_eq!(numbered["meta"]["paging"], "page");
    assert_eq!(list(&app, &acme.key, &since(last)).await["meta"]["paging"], "cursor");
    app.stop().await;
}

#[tokio::test]
async fn bad_sync_parameters_are_refused() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    for (query, code) in [
        ("?updated_since=yesterday", "updated_since_invalid"),
        ("?updated_since=2026-11-21", "updated_since_invalid"),
        ("?cursor=bm90LWEtY3Vyc29y", "cursor_invalid"),
        ("?updated_since=2026-11-21T10:00:00Z&page=2", "page_invalid"),
    ] {
        let body =
            assert_error(app.get(&format!("/v1/listings{query}"), &acme.key).await, 400, "validation_failed").await;
        assert_eq!(body["errors"][0]["code"], code, "{query}: {body}");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_walk_during_changes_on_two_nodes_visits_every_change() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let mut listings = Vec::new();
    for n in 0..12 {
        listings.push(create_id(&app, &acme.key, json!({"title": format!("Sofa {n}")})).await);
    }
    let start = json(app.get(&format!("/v1/listings/{}", listings[0]), &acme.key).await).await["updated_at"]
        .as_str()
        .unwrap()
        .to_owned();
    let (second, _stop) = second_node(&app).await;

    // Two writers, one per node, edit every listing in turns while the walk runs.
    let mut writers = Vec::new();
    for (writer, base) in [app.url(""), second].into_iter().enumerate() {
        let (key, ids) = (acme.key.clone(), listings.clone());
        writers.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            for round in 0..4 {
                for id in &ids {
                    let response = client
                        .patch(format!("{base}/v1/listings/{id}"))
                        .bearer_auth(&key)
                        .json(&json!({"title": format!("Sofa {id} by writer {writer}, round {round}")}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(response.status(), 200);
                }
            }
        }));
    }
    let mut seen: BTreeMap<i64, String> = BTreeMap::new();
    // Whether the writers had all finished before the page in hand was asked for.
    let mut writers_done = false;
    let mut page = list(&app, &acme.key, &since(&start)).await;
    loop {
        for listing in page["data"].as_array().unwrap() {
            let stamp = listing["updated_at"].as_str().unwrap().to_owned();
            let entry = seen.entry(listing["id"].as_i64().unwrap()).or_default();
            if stamp > *entry {
                *entry = stamp;
            }
        }
        if page["meta"]["has_more"] != json!(true) {
            if writers_done {
                break;
            }
            writers_done = writers.iter().all(|w| w.is_finished());
            // Caught up with the writers: a new walk from the last instant seen, as a
            // client polling for changes would.
            let last = seen.values().max().cloned().unwrap_or(start.clone());
            page = list(&app, &acme.key, &since(&last)).await;
            continue;
        }
        let cursor = page["meta"]["next_cursor"].as_str().unwrap().to_owned();
        writers_done = writers.iter().all(|w| w.is_finished());
        page = list(&app, &acme.key, &format!("?cursor={cursor}&per_page=2")).await;
    }
    for writer in writers {
        writer.await.unwrap();
    }
    // Every listing's final state was seen: its last change is the last instant walked.
    let visited: BTreeSet<i64> = seen.keys().copied().collect();
    assert_eq!(visited, listings.iter().copied().collect::<BTreeSet<_>>());
    for id in &listings {
        let detail = json(app.get(&format!("/v1/listings/{id}"), &acme.key).await).await;
        assert_eq!(seen[id], detail["updated_at"].as_str().unwrap(), "listing {id}'s last change was walked");
    }
    app.stop().await;
}

/// The gap a clock per change would leave: a change that took its instant first but
/// commits last, behind a walk that has already passed that instant. The test holds such a
/// change open in a transaction of its own (taking the brand's listing instant as the
/// service does) while the service changes another listing, walks, then commits it.
#[tokio::test]
async fn a_change_that_commits_late_is_not_passed_by_a_walk() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let slow = create_id(&app, &acme.key, json!({"title": "Slow"})).await;
    let quick = create_id(&app, &acme.key, json!({"title": "Quick"})).await;
    let start = json(app.get(&format!("/v1/listings/{slow}"), &acme.key).await).await["updated_at"]
        .as_str()
        .unwrap()
        .to_owned();

    let raw = app.db.raw().await;
    on_raw!(&raw, |pool| {
        let mut tx = pool.begin().await.unwrap();
        let micros: i64 = sqlx::query_scalar(
            "UPDATE listing_clocks SET micros = micros + 1
             WHERE brand_id = (SELECT brand_id FROM listings WHERE id = $1) RETURNING micros",
        )
        .bind(slow)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
        sqlx::query(
            "UPDATE listings SET title = 'Slow, changed', version = version + 1, updated_at = $1 WHERE id = $2",
        )
        .bind(Ts::from_micros(micros).unwrap())
        .bind(slow)
        .execute(&mut *tx)
        .await
        .unwrap();

        let (base, key) = (app.url(""), acme.key.clone());
        let mut quick_change = tokio::spawn(async move {
            let url = format!("{base}/v1/listings/{quick}");
            let body = json!({"title": "Quick, changed"});
            reqwest::Client::new().patch(url).bearer_auth(key).json(&body).send().await.unwrap().status()
        });
        // Give the quick change time to commit, were it not made to wait for the slow one.
        let early = tokio::time::timeout(Duration::from_millis(500), &mut quick_change).await.ok();
        let first = walk(&app, &acme.key, &since(&start)).await;
        tx.commit().await.unwrap();
        let status = match early {
            Some(done) => done.unwrap(),
            None => quick_change.await.unwrap(),
        };
        assert_eq!(status, 200);

        // A client polling for changes starts again from the last instant it saw.
        let last = first.iter().filter_map(|l| l["updated_at"].as_str()).max().unwrap_or(&start).to_owned();
        let titles: BTreeSet<String> = first
            .iter()
            .chain(walk(&app, &acme.key, &since(&last)).await.iter())
            .map(|l| l["title"].as_str().unwrap().to_owned())
            .collect();
        assert!(titles.contains("Slow, changed") && titles.contains("Quick, changed"), "{titles:?}");
    });
    raw.close().await;
    app.stop().await;
}

/// A node whose clock is behind the brand's listing clock (here: the clock set an hour
/// ahead) still stamps its changes after the last one: creating, editing and trashing take
/// the next instant of the brand's clock, never their own earlier one.
#[tokio::test]
async fn changes_are_stamped_after_the_brands_last_instant_even_from_a_clock_behind() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let first = create_id(&app, &acme.key, json!({"title": "First"})).await;
    let ahead = Ts::from_micros(Ts::now().micros() + 3_600_000_000).unwrap();
    let raw = app.db.raw().await;
    raw.execute(&format!("UPDATE listing_clocks SET micros = {}", ahead.micros())).await;
    raw.close().await;

    let second = create(&app, &acme.key, listing(json!({"title": "Second"}))).await;
    assert_eq!(second["updated_at"], Ts::from_micros(ahead.micros() + 1).unwrap().to_string(), "{second}");
    let edited = json(app.patch(&format!("/v1/listings/{first}"), &acme.key, &json!({"title": "Edited"})).await).await;
    assert_eq!(edited["updated_at"], Ts::from_micros(ahead.micros() + 2).unwrap().to_string());
    assert_eq!(app.delete(&format!("/v1/listings/{first}"), &acme.key).await.status(), 200);

    let seen = walk(&app, &acme.key, &since(&ahead.to_string())).await;
    let stamps: Vec<(i64, &str, &str)> = seen
        .iter()
        .map(|l| (l["id"].as_i64().unwrap(), l["updated_at"].as_str().unwrap(), l["deleted_at"].as_str().unwrap_or("")))
        .collect();
    let trashed = Ts::from_micros(ahead.micros() + 3).unwrap().to_string();
    assert_eq!(
        stamps,
        [
            (second["id"].as_i64().unwrap(), second["updated_at"].as_str().unwrap(), ""),
            (first, trashed.as_str(), trashed.as_str())
        ]
    );
    let detail = json(app.get(&format!("/v1/listings/{}", second["id"]), &acme.key).await).await;
    assert_eq!(detail["updated_at"], second["updated_at"], "the answer is what was stored");
    app.stop().await;
}

/// The OpenAPI document says what the server enforces of the list's query (issue 18: a
/// looser document sends generated clients into refusals).
#[tokio::test]
async fn the_documented_list_parameters_are_as_tight_as_the_server() {
    let app = spawn_app().await;
    let doc = json(app.get("/v1/openapi.json", "").await).await;
    let params = doc["paths"]["/v1/listings"]["get"]["parameters"].as_array().unwrap().clone();
    let schema = |name: &str| -> Value {
        let param = params.iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("no {name}"));
        // An optional enum is `oneOf: [null, $ref]`.
        let schema = &param["schema"];
        let referenced = schema["$ref"]
            .as_str()
            .or_else(|| schema["oneOf"].as_array().and_then(|options| options.iter().find_map(|o| o["$ref"].as_str())));
        match referenced {
            Some(reference) => doc["components"]["schemas"][reference.rsplit('/').next().unwrap()].clone(),
            None => schema.clone(),
        }
    };
    assert_eq!(schema("page")["minimum"], 1);
    assert_eq!((schema("per_page")["minimum"].clone(), schema("per_page")["maximum"].clone()), (json!(1), json!(100)));
    assert_eq!(schema("status")["enum"], json!(["active", "draft", "any"]));
    assert_eq!(schema("channel")["enum"], json!(["clearance", "exchange"]));
    assert_eq!(schema("sku")["maxLength"], 100);
    app.stop().await;
}
