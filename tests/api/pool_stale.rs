//! Issue 30.7, not solved: two nodes on one SQLite file editing the same listings at once.
//! A PATCH re-reads a listing another node changed meanwhile; three reads in a row that
//! still show the old version answer 409 `edit_conflict`. With the pool's hand-out set to
//! LIFO (`src/store/pool.rs`) this failed 1 run of 5 at 200 rounds (3 conflicts); with FIFO
//! it passed 8 of 8. Ignored: it reproduces by chance, and its cause is not found yet. Run
//! `STALE_ROUNDS=200 cargo test --test api pool_stale -- --ignored` a few times.

use serde_json::json;

use crate::helpers::{on_postgres, second_node, spawn_app};
use crate::listings::create_id;

#[tokio::test]
#[ignore = "reproduction of issue 30.7 (stale reads with LIFO hand-out): run by hand, several times"]
async fn two_nodes_editing_the_same_listings_at_once_never_conflict() {
    if on_postgres() {
        return;
    }
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let mut listings = Vec::new();
    for n in 0..12 {
        listings.push(create_id(&app, &acme.key, json!({"title": format!("Sofa {n}")})).await);
    }
    let (second, _stop) = second_node(&app).await;
    let rounds: usize = std::env::var("STALE_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(200);
    let mut writers = Vec::new();
    for (writer, base) in [app.url(""), second].into_iter().enumerate() {
        let (key, ids) = (acme.key.clone(), listings.clone());
        writers.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut conflicts = Vec::new();
            for round in 0..rounds {
                for id in &ids {
                    let response = client
                        .patch(format!("{base}/v1/listings/{id}"))
                        .bearer_auth(&key)
                        .json(&json!({"title": format!("Sofa {id} by writer {writer}, round {round}")}))
                        .send()
                        .await
                        .unwrap();
                    if response.status() != 200 {
                        conflicts.push((round, *id, response.status().as_u16()));
                    }
                }
            }
            conflicts
        }));
    }
    let mut conflicts = Vec::new();
    for writer in writers {
        conflicts.extend(writer.await.unwrap());
    }
    assert!(conflicts.is_empty(), "{} conflicts: {conflicts:?}", conflicts.len());
}
