//! Invariants that concurrency across two nodes could break: one quota, one default
//! warehouse, no oversold stock, single-use codes, one manufacturer brand per name.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_keys_quota_is_shared_across_processes_n_of_2n_concurrent_requests_pass() {
    const N: usize = 10;
    let Some(mut cluster) = Cluster::start("shared quota", N as u32, &[]).await else {
        return;
    };
    let api = cluster.api.clone();
    let answers = at_once(2 * N, |i| {
        let api = api.clone();
        async move { api.get(i % 2, OPTIONS).await }
    })
    .await;
    assert_eq!(count(&answers, 200), N, "{:?}", summary(&answers));
    assert_eq!(count(&answers, 429), N, "{:?}", summary(&answers));
    for answer in &answers {
        assert_eq!(answer.headers["x-ratelimit-limit"], N.to_string().as_str(), "node {}", answer.node);
        if answer.status == 429 {
            assert_eq!(answer.code(), "rate_limited");
            let retry_after: u64 = answer.headers["retry-after"].to_str().unwrap().parse().unwrap();
            assert!((1..=60).contains(&retry_after), "Retry-After {retry_after} on node {}", answer.node);
        }
    }
    // Spent on both nodes: one more on either is refused.
    for node in 0..2 {
        assert_eq!(api.get(node, OPTIONS).await.status, 429, "node {node}");
    }
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_set_default_on_both_nodes_leaves_exactly_one_default() {
    let Some(mut cluster) = Cluster::start("set-default", 100_000, &[]).await else {
        return;
    };
    let api = cluster.api.clone();
    let mut ids = Vec::new();
    for n in 0..5 {
        let created = api.post(n % 2, WAREHOUSES, json!({ "label": format!("Depot {n}") })).await;
        ids.push(created.expect(201, "create a warehouse")["warehouse"]["id"].as_str().unwrap().to_owned());
    }
    // PATCH is_default and POST set-default, on every warehouse, from both nodes at once.
    let answers = at_once(40, |i| {
        let api = api.clone();
        let id = ids[i % ids.len()].clone();
        async move {
            if i % 4 < 2 {
                api.patch(i % 2, &format!("{WAREHOUSES}/{id}"), json!({"is_default": true})).await
            } else {
                api.post(i % 2, &format!("{WAREHOUSES}/{id}/set-default"), json!({})).await
            }
        }
    })
    .await;
    assert_eq!(count(&answers, 200), answers.len(), "{:?}", summary(&answers));

    let mut defaults = Vec::new();
    for node in 0..2 {
        let list = api.get(node, WAREHOUSES).await.expect(200, "list warehouses");
        let warehouses = list["warehouses"].as_array().unwrap();
        assert_eq!(warehouses.len(), ids.len());
        let flagged: Vec<&str> =
            warehouses.iter().filter(|w| w["is_default"] == true).map(|w| w["id"].as_str().unwrap()).collect();
        assert_eq!(flagged.len(), 1, "exactly one default on node {node}: {warehouses:?}");
        defaults.push(flagged[0].to_owned());
    }
    assert_eq!(defaults[0], defaults[1], "both nodes show the same default");
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_orders_on_both_nodes_sell_exactly_the_stock_and_close_the_listing() {
    let Some(mut cluster) = Cluster::start("last unit", 100_000, &[]).await else {
        return;
    };
    let api = cluster.api.clone();
    for (channel, stock) in [("exchange", 1), ("clearance", 5)] {
        let id = api.create_listing(0, json!({"channel": channel, "quantity": stock})).await["id"].as_i64().unwrap();
        let answers = at_once(30, |i| {
            let api = api.clone();
            async move { api.ops(i % 2, "/orders", json!({ "listing_id": id })).await }
        })
        .await;
        assert_eq!(count(&answers, 201), stock, "{channel}: {:?}", summary(&answers));
        let refused: Vec<_> = answers.iter().filter(|a| a.status != 201).collect();
        assert!(
            refused.iter().all(|a| a.status == 409 && ["insufficient_stock", "listing_not_active"].contains(&a.code())),
            "{channel}: {:?}",
            summary(&answers)
        );
        let sold: i64 = answers.iter().filter(|a| a.status == 201).map(|a| a.body["quantity"].as_i64().unwrap()).sum();
        assert_eq!(sold, stock as i64);
        for node in 0..2 {
            let detail = api.get(node, &format!("/v1/listings/{id}")).await.expect(200, "listing detail");
            assert_eq!(
                (detail["quantity"].as_i64(), detail["status"].as_str()),
                (Some(0), Some("closed")),
                "{channel} on node {node}"
            );
        }
    }
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_redeems_of_one_code_on_both_nodes_exactly_one_succeeds() {
    let Some(mut cluster) = Cluster::start("code redeems", 100_000, &[]).await else {
        return;
    };
    let api = cluster.api.clone();
    let listing_id = api.create_listing(0, json!({"channel": "exchange", "price_gbp": 80})).await["id"].clone();
    let order = api.ops(1, "/orders", json!({ "listing_id": listing_id })).await.expect(201, "order");
    let order_id = order["id"].as_i64().unwrap();
    api.ops(0, &format!("/orders/{order_id}/complete"), json!({})).await.expect(200, "complete");
    let choice = json!({"customer_id": "cus_1", "customer_choice": "credit", "credit_destination": "code"});
    let redemption = api.ops(1, &format!("/orders/{order_id}/payout-choice"), choice).await.expect(201, "choice");
    let code = redemption["code"].as_str().expect("a credit code").to_owned();

    let answers = at_once(20, |i| {
        let api = api.clone();
        let body = json!({"code": code, "order_reference": format!("WEB-{i}")});
        async move { api.post(i % 2, REDEEM, body).await }
    })
    .await;
    assert_eq!(count(&answers, 200), 1, "{:?}", summary(&answers));
    assert!(
        answers
            .iter()
            .filter(|a| a.status != 200)
            .all(|a| a.status == 409 && a.code() == "credit_code_already_redeemed"),
        "{:?}",
        summary(&answers)
    );
    let spent = answers.iter().find(|a| a.status == 200).unwrap();
    assert!(spent.body["redeemed_at"].as_str().is_some(), "{}", spent.body);
    for node in 0..2 {
        let dry = api.post(node, REDEEM, json!({"code": code, "dry_run": true})).await;
        assert_eq!((dry.status, dry.code()), (409, "credit_code_already_redeemed"), "node {node}");
    }
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_uses_of_a_brand_on_both_nodes_create_it_once() {
    let Some(mut cluster) = Cluster::start("brand on first use", 100_000, &[]).await else {
        return;
    };
    let api = cluster.api.clone();
    let answers = at_once(20, |i| {
        let api = api.clone();
        // The same new brand, spelt two ways (matched case-insensitively).
        let brand = if i % 4 < 2 { "Hallowood Makers" } else { "HALLOWOOD makers" };
        async move { api.post(i % 2, "/v1/listings", listing(json!({ "brand": brand }))).await }
    })
    .await;
    assert_eq!(count(&answers, 201), answers.len(), "{:?}", summary(&answers));
    let spellings: HashSet<&str> = answers.iter().map(|a| a.body["brand"].as_str().unwrap_or("")).collect();
    assert_eq!(spellings.len(), 1, "every listing names the one catalogue brand: {spellings:?}");
    let spelling = spellings.into_iter().next().unwrap().to_owned();
    assert!(spelling.eq_ignore_ascii_case("hallowood makers"), "{spelling}");
    for node in 0..2 {
        let options = api.get(node, OPTIONS).await.expect(200, "options");
        let brands: Vec<&str> = options["brands"].as_array().unwrap().iter().map(|b| b.as_str().unwrap()).collect();
        let matching: Vec<&&str> = brands.iter().filter(|b| b.eq_ignore_ascii_case("hallowood makers")).collect();
        assert_eq!(matching, [&spelling.as_str()], "listed once on node {node}: {brands:?}");
        assert_eq!(brands.last(), Some(&"Other"), "node {node}");
    }
    cluster.assert_no_trouble();
}
