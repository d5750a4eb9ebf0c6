//! Numbered pages at any depth (issue 34): a page's keys are chosen from the index before
//! its rows are read, and totals filtered by status and channel come from the brand's kept
//! counts. Either way a page holds exactly the rows of the newest-first list at its place,
//! and a total is the number of listings the filter matches, counted one by one.

use serde_json::{json, Value};

use crate::helpers::spawn_app;
use crate::listings::{create_id, ids, list};

const FILTERS: [&str; 6] = [
    "status=any",
    "status=active",
    "status=draft",
    "status=any&channel=exchange",
    "status=active&channel=clearance",
    "status=active&channel=exchange&q=oak",
];

/// Every listing's (id, status, channel, title) as the brand's newest-first list shows it.
fn rows(page: &Value) -> Vec<(i64, String, String, String)> {
    let text = |l: &Value, k: &str| l[k].as_str().unwrap().to_owned();
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["id"].as_i64().unwrap(), text(l, "status"), text(l, "channel"), text(l, "title")))
        .collect()
}

#[tokio::test]
async fn every_page_holds_the_rows_of_the_whole_list_at_its_place() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let mut made = Vec::new();
    for n in 0..23 {
        let status = if n % 4 == 0 { "draft" } else { "active" };
        let channel =
            if n % 3 == 0 { json!({"channel": "exchange", "quantity": 1}) } else { json!({"channel": "clearance"}) };
        let title = if n % 2 == 0 { format!("Oak sofa {n}") } else { format!("Pine bed {n}") };
        let mut body = json!({"title": title, "status": status});
        body.as_object_mut().unwrap().extend(channel.as_object().unwrap().clone());
        made.push(create_id(&app, &acme.key, body).await);
        if n % 5 == 0 {
            create_id(&app, &other.key, json!({})).await;
        }
    }
    for trashed in [made[3], made[10]] {
        assert_eq!(app.delete(&format!("/v1/listings/{trashed}"), &acme.key).await.status(), 200);
    }
    let moved = format!("/v1/listings/{}", made[7]);
    assert_eq!(app.patch(&moved, &acme.key, &json!({"channel": "exchange", "quantity": 1})).await.status(), 200);

    for filter in FILTERS {
        let whole = list(&app, &acme.key, &format!("?{filter}&per_page=100")).await;
        let all = rows(&whole);
        assert!(!all.is_empty(), "{filter}");
        assert_eq!(whole["meta"]["total"], all.len(), "{filter}: the total counts the matches");
        for per_page in [1, 2, 3, 7] {
            let mut walked = Vec::new();
            for page in 1.. {
                let one = list(&app, &acme.key, &format!("?{filter}&per_page={per_page}&page={page}")).await;
                assert_eq!(one["meta"]["total"], all.len(), "{filter}, page {page} of {per_page}");
                let got = rows(&one);
                if got.is_empty() {
                    break;
                }
                walked.extend(got);
            }
            assert_eq!(walked, all, "{filter}: pages of {per_page} walked one by one");
        }
    }
    // Newest first, and trashed listings nowhere.
    let everything = ids(&list(&app, &acme.key, "?status=any&per_page=100").await);
    let mut expected: Vec<i64> = made.iter().copied().filter(|id| *id != made[3] && *id != made[10]).collect();
    expected.reverse();
    assert_eq!(everything, expected);
    app.stop().await;
}
