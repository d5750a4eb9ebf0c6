//! Deliveries, an event's page, Collections and Redemptions (issue 31 items 2 and 7): the
//! payload and each answer shown escaped, the answer kept to its first kilobyte, Replay in
//! place with htmx and post/redirect/get without, "Retry every dead event" saying how many,
//! collections with their listing and warehouse, refusals as sentences, empty states that
//! say what to do next.

use std::time::Duration;

use axum::body::Bytes;
use rehome::domain::event::{Event, EventType};
use serde_json::json;

use super::failures::{refuse_audit, LEAKS};
use super::{admin, sql_i64, Browser};
use crate::helpers::{json, Partner, TestApp};
use crate::listings::warehouse;
use crate::marketplace::{credit_code, listing, market_app, order};
use crate::webhooks::receiver::{Receiver, Reply};
use crate::webhooks::{configure, wait_for_attempts, wait_for_status, WEBHOOK};

const WAIT: Duration = Duration::from_secs(10);
const HTMX: [(&str, &str); 1] = [("HX-Request", "true")];

/// An event of the brand whose data holds markup, emitted through the store.
async fn event_with_markup(app: &TestApp, partner: &Partner) -> String {
    let data = json!({"id": "red_1", "note": "<script>alert(1)</script> & more"});
    let event = Event::new(partner.brand_id, EventType::RedemptionCreated, data).unwrap();
    app.store.emit_event(&event).await.unwrap();
    event.id
}

#[tokio::test]
async fn an_events_page_shows_its_payload_and_the_first_kilobyte_of_each_answer_escaped() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let receiver = Receiver::start().await;
    let huge = Bytes::from(vec![b'a'; 10 << 20]);
    let html = Bytes::from_static(b"<html><script>alert(1)</script><p>thanks</p></html>");
    receiver.plan([Reply::Body(200, "text/plain", huge), Reply::Body(200, "text/html", html)]);
    configure(&app, &partner, &receiver.url()).await;
    let big = event_with_markup(&app, &partner).await;
    wait_for_status(&app, &partner, &big, "delivered", WAIT).await;
    let marked = event_with_markup(&app, &partner).await;
    wait_for_status(&app, &partner, &marked, "delivered", WAIT).await;
    let mut ada = Browser::signed_in(&app, &email).await;

    // The payload, indented and escaped, in its own scrolling box.
    let page = ada.get(&format!("/dashboard/deliveries/{big}")).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<pre class=\"payload\""), "{}", page.body);
    assert!(
        page.body.contains("&#34;note&#34;: &#34;&#60;script&#62;alert(1)&#60;/script&#62; &#38; more&#34;"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("<script>alert"), "never unescaped");
    // Of a 10 MB answer, 1024 bytes are kept and shown.
    let kept = sql_i64(&app, "SELECT CAST(MAX(LENGTH(response_excerpt)) AS BIGINT) FROM webhook_attempts").await;
    assert_eq!(kept, Some(1024));
    let a = "a".repeat(1024);
    assert!(page.body.contains(&format!(">{a}</pre>")), "the first kilobyte");
    assert!(!page.body.contains(&format!("{a}a")), "and no more");
    assert!(page.body.contains("HTTP 200"));

    // Markup in an answer is text on the page.
    let page = ada.get(&format!("/dashboard/deliveries/{marked}")).await;
    assert!(
        page.body.contains(
            "&#60;html&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#60;p&#62;thanks&#60;/p&#62;&#60;/html&#62;"
        ),
        "{}",
        page.body
    );
    assert!(!page.body.contains("<script>alert") && !page.body.contains("<p>thanks"), "{}", page.body);

    // The API's delivery log keeps its documented shape (the spec does not add the answer).
    let entry = wait_for_attempts(&app, &partner, &marked, 1, WAIT).await;
    let attempt = entry["attempt_log"][0].as_object().expect("an attempt").clone();
    assert!(!attempt.contains_key("response_excerpt") && !attempt.contains_key("response_body"), "{attempt:?}");
}

#[tokio::test]
async fn replay_swaps_its_row_with_htmx_and_redirects_with_a_notice_without() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    let event = event_with_markup(&app, &partner).await;
    wait_for_status(&app, &partner, &event, "delivered", WAIT).await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let list = ada.get("/dashboard/deliveries").await;
    assert!(list.body.contains(&format!("hx-post=\"/dashboard/deliveries/{event}/replay\"")), "{}", list.body);
    let csrf = list.csrf();
    let path = format!("/dashboard/deliveries/{event}/replay");

    // htmx: the row alone, in its new state, saying it was queued.
    let row = ada.post_with(&path, &[("csrf", &csrf), ("status", "any"), ("page", "1")], &HTMX).await;
    assert_eq!(row.status, 200, "{}", row.body);
    assert!(row.body.trim_start().starts_with(&format!("<tr id=\"event-{event}\">")), "{}", row.body);
    assert!(!row.body.contains("<html") && !row.body.contains("<nav"), "the row alone: {}", row.body);
    assert!(row.body.contains("role=\"status\">Queued: sending again now.<"), "{}", row.body);
    assert!(row.body.contains(">Replay</button>"), "the row can be replayed again");
    assert_eq!(row.headers["vary"], "HX-Request");
    receiver.wait_for_hits(2, WAIT).await;

    // Without JavaScript: 303 back to the list as it was, a notice shown once.
    let back = ada.post(&path, &[("csrf", &csrf), ("status", "delivered"), ("page", "1")]).await;
    back.assert_redirect("/dashboard/deliveries?status=delivered&page=1");
    let shown = ada.get("/dashboard/deliveries?status=delivered&page=1").await;
    assert!(shown.body.contains("Event queued: it is being sent to your endpoint again."), "{}", shown.body);
    let again = ada.get("/dashboard/deliveries?status=delivered&page=1").await;
    assert!(!again.body.contains("Event queued"), "a reload neither replays nor repeats the notice");
    receiver.wait_for_hits(3, WAIT).await;
    crate::webhooks::settled(&app).await;
    assert_eq!(receiver.hits().len(), 3, "each replay sent the event once");
    // From the event's page, back to it.
    ada.post(&path, &[("csrf", &csrf), ("back", "event")])
        .await
        .assert_redirect(&format!("/dashboard/deliveries/{event}"));
    // A list address is rebuilt from what it names, never echoed.
    let odd = ada.post(&path, &[("csrf", &csrf), ("status", "<b>"), ("page", "-3")]).await;
    odd.assert_redirect("/dashboard/deliveries");

    // Refused: the catalogue's sentence, in the row with htmx, on the page without.
    let off = app.patch(WEBHOOK, &partner.key, &json!({"enabled": false})).await;
    assert_eq!(off.status(), 200);
    let row = ada.post_with(&path, &[("csrf", &csrf)], &HTMX).await;
    assert_eq!(row.status, 200);
    assert!(row.body.contains("role=\"alert\">No webhook endpoint is enabled"), "{}", row.body);
    let page = ada.post(&path, &[("csrf", &csrf)]).await;
    assert_eq!(page.status, 409);
    assert!(page.body.contains("role=\"alert\">No webhook endpoint is enabled"), "{}", page.body);
    assert!(!page.body.contains("webhook_not_configured"), "no code on the page");
    // An unknown event is the 404 page.
    assert_eq!(ada.post("/dashboard/deliveries/evt_nope/replay", &[("csrf", &csrf)]).await.status, 404);
}

#[tokio::test]
async fn retry_every_dead_event_redirects_saying_how_many_were_queued() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let receiver = Receiver::start().await;
    receiver.plan([Reply::Status(400), Reply::Status(400)]);
    configure(&app, &partner, &receiver.url()).await;
    let first = event_with_markup(&app, &partner).await;
    let second = event_with_markup(&app, &partner).await;
    wait_for_status(&app, &partner, &first, "dead", WAIT).await;
    wait_for_status(&app, &partner, &second, "dead", WAIT).await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let confirm = ada.get("/dashboard/deliveries/replay-dead").await;
    assert!(confirm.body.contains(">Retry every dead event now</button>"), "{}", confirm.body);
    let csrf = confirm.csrf();
    ada.post("/dashboard/deliveries/replay-dead", &[("csrf", &csrf)]).await.assert_redirect("/dashboard/deliveries");
    let page = ada.get("/dashboard/deliveries").await;
    assert!(page.body.contains("2 dead events queued: they are being sent to your endpoint again."), "{}", page.body);
    assert!(!ada.get("/dashboard/deliveries").await.body.contains("dead events queued"), "shown once");
    wait_for_status(&app, &partner, &first, "delivered", WAIT).await;
    wait_for_status(&app, &partner, &second, "delivered", WAIT).await;
    ada.post("/dashboard/deliveries/replay-dead", &[("csrf", &csrf)]).await.assert_redirect("/dashboard/deliveries");
    let page = ada.get("/dashboard/deliveries").await;
    assert!(page.body.contains("No event was dead, so nothing was queued."), "{}", page.body);
}

#[tokio::test]
async fn collections_show_the_listing_and_its_warehouse_and_scheduling_redirects_with_a_notice() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    warehouse(&app, &partner, "Leeds DC").await;
    let york = warehouse(&app, &partner, "York Yard").await;
    let changes =
        json!({"channel": "clearance", "quantity": 2, "title": "Oak <b>frame</b> sofa", "warehouse_id": york});
    let listing_id = listing(&app, &partner, changes).await;
    let placed = order(&app, json!({"listing_id": listing_id, "buyer_window_start": "2026-12-10"})).await;
    let order_id = placed["id"].as_i64().unwrap().to_string();
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/collections").await;
    assert!(
        page.body.contains(&format!(
            "<a href=\"/dashboard/listings/{listing_id}\">Oak &#60;b&#62;frame&#60;/b&#62; sofa</a>"
        )),
        "the title, linked and escaped: {}",
        page.body
    );
    assert!(page.body.contains(&format!("<option value=\"{york}\" selected>York Yard</option>")), "{}", page.body);
    assert!(page.body.contains("min=\"2026-12-10\" max=\"2026-12-19\""), "the date field is bounded to the window");
    let csrf = page.csrf();
    let form = |date| [("csrf", csrf.as_str()), ("order_id", order_id.as_str()), ("scheduled_for", date)];

    // Refused: a sentence naming the window beside the field, the date given kept.
    for date in ["", "12/12/2026", "2026-12-25"] {
        let page = ada.post("/dashboard/collections", &form(date)).await;
        assert_eq!(page.status, 422, "{date}");
        let error = format!(
            "id=\"error-{order_id}\" role=\"alert\">Choose a date from 10 Dec to 19 Dec 2026: the buyer&#39;s collection window.<"
        );
        assert!(page.body.contains(&error), "{date}: {}", page.body);
        assert!(page.body.contains(&format!("value=\"{date}\"")), "{date}: the date given is kept");
        assert!(!page.body.contains("scheduled_for_"), "{date}: no code on the page");
    }
    // The API says the same sentence beside the same code.
    let outside = json!({"order_id": order_id.parse::<i64>().unwrap(), "scheduled_for": "2026-12-25"});
    let answer = app.post("/v1/partner/collections", &partner.key, &outside).await;
    assert_eq!(answer.status(), 400);
    let answer = json(answer).await;
    assert_eq!(answer["errors"][0]["code"], "scheduled_for_invalid", "{answer}");
    assert_eq!(
        answer["errors"][0]["message"], "Choose a date from 10 Dec to 19 Dec 2026: the buyer's collection window.",
        "{answer}"
    );

    // Scheduled: 303 to the list, a notice once, the row with its date and warehouse.
    let posted = form("2026-12-12");
    ada.post("/dashboard/collections", &posted).await.assert_redirect("/dashboard/collections");
    let page = ada.get("/dashboard/collections").await;
    assert!(page.body.contains(&format!("Collection of order #{order_id} scheduled.")), "{}", page.body);
    let row = "<td data-label=\"Collection date\">12 Dec 2026</td>\n    <td data-label=\"Warehouse\">York Yard</td>";
    assert!(page.body.contains(row), "{}", page.body);
    assert!(page.body.contains("Nothing to schedule."), "{}", page.body);
    assert!(!ada.get("/dashboard/collections").await.body.contains("scheduled."), "the notice shows once");
    // Posted again (a second tab): the catalogue's sentence, not the code.
    let page = ada.post("/dashboard/collections", &posted).await;
    assert_eq!(page.status, 422);
    assert!(
        page.body.contains(
            "This order&#39;s collection is already scheduled: move or cancel that collection to change its date."
        ),
        "{}",
        page.body
    );
}

/// A scheduled collection on the dashboard: its row offers a new date and a cancel to an
/// admin; each asks first (a page, or the step in place with htmx), then moves or cancels
/// with a notice; refusals are sentences beside the row; a member is offered neither.
#[tokio::test]
async fn a_scheduled_collection_is_moved_or_cancelled_after_a_confirmation_step() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    warehouse(&app, &partner, "Leeds DC").await;
    let today = chrono::Utc::now().date_naive();
    let day = |n: i64| today + chrono::Duration::days(n);
    let listing_id = listing(&app, &partner, json!({"channel": "clearance", "quantity": 2})).await;
    let placed = order(&app, json!({"listing_id": listing_id, "buyer_window_start": day(-1).to_string()})).await;
    let order_id = placed["id"].as_i64().unwrap();
    let body = json!({"order_id": order_id, "scheduled_for": day(1).to_string()});
    let collection = json(app.post("/v1/partner/collections", &partner.key, &body).await).await;
    let id = collection["id"].as_str().unwrap().to_owned();
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/collections").await;
    assert!(page.body.contains(&format!("action=\"/dashboard/collections/{id}/move\"")), "{}", page.body);
    assert!(page.body.contains(&format!("min=\"{}\" max=\"{}\"", today, day(8))), "moves to days still open");
    assert!(page.body.contains(&format!("hx-get=\"/dashboard/collections/{id}/cancel\"")), "{}", page.body);

    // The step names both days and posts the new one; the way back keeps the day.
    let words = |d: chrono::NaiveDate| d.format("%A %-d %B %Y").to_string();
    let step = ada.get(&format!("/dashboard/collections/{id}/move?scheduled_for={}", day(3))).await;
    assert_eq!(step.status, 200);
    assert!(step.body.contains(&format!("Move the collection of order #{order_id} to {}?", words(day(3)))));
    assert!(step.body.contains(&format!("It is booked for {} from Leeds DC now.", words(day(1)))), "{}", step.body);
    assert!(step.body.contains(&format!("name=\"scheduled_for\" value=\"{}\"", day(3))), "{}", step.body);
    assert!(step.body.contains(&format!("No, keep {}", words(day(1)))), "{}", step.body);
    assert!(!step.body.contains("collection.scheduled"), "no wire names: {}", step.body);
    let csrf = step.csrf();
    let new_day = day(3).to_string();
    let moved =
        ada.post(&format!("/dashboard/collections/{id}/move"), &[("csrf", &csrf), ("scheduled_for", &new_day)]).await;
    moved.assert_redirect("/dashboard/collections");
    let page = ada.get("/dashboard/collections").await;
    assert!(page.body.contains(&format!("Collection of order #{order_id} moved")), "{}", page.body);
    assert!(page.body.contains(&format!("<td data-label=\"Collection date\">{}</td>", day(3).format("%-d %b %Y"))));

    // Refused before the step: a day past, or after the window, said beside the row.
    for date in [day(-1).to_string(), day(9).to_string(), "soon".to_owned()] {
        let page = ada.get(&format!("/dashboard/collections/{id}/move?scheduled_for={date}")).await;
        assert_eq!(page.status, 422, "{date}");
        let sentence = format!(
            "id=\"error-{order_id}\" role=\"alert\">Choose a date from {} to {}: the buyer&#39;s collection window.<",
            today.format("%-d %b"),
            day(8).format("%-d %b %Y")
        );
        assert!(page.body.contains(&sentence), "{date}: {}", page.body);
        assert!(!page.body.contains("scheduled_for_"), "{date}: no code on the page");
    }

    // Cancel: the step in place with htmx, then the post; the order is to schedule again.
    let fragment = ada.get_with(&format!("/dashboard/collections/{id}/cancel"), &HTMX).await;
    assert!(!fragment.body.contains("<html"), "a fragment: {}", fragment.body);
    assert!(fragment.body.contains(&format!("Cancel the collection of order #{order_id} on {}?", words(day(3)))));
    assert!(fragment.body.contains("No, keep the collection"), "{}", fragment.body);
    let cancelled = ada.post(&format!("/dashboard/collections/{id}/cancel"), &[("csrf", &csrf)]).await;
    cancelled.assert_redirect("/dashboard/collections");
    let page = ada.get("/dashboard/collections").await;
    assert!(page.body.contains(&format!("Collection of order #{order_id} cancelled")), "{}", page.body);
    assert!(page.body.contains("Nothing scheduled yet."), "{}", page.body);
    // Gone: a second post says so in words; the step leads back to the list.
    let again = ada.post(&format!("/dashboard/collections/{id}/cancel"), &[("csrf", &csrf)]).await;
    assert_eq!(again.status, 422);
    assert!(again.body.contains("No scheduled collection with this id in your brand"), "{}", again.body);
    ada.get(&format!("/dashboard/collections/{id}/cancel")).await.assert_redirect("/dashboard/collections");
    let actions = super::audit_actions(&app, partner.brand_id).await;
    for action in ["collection.rescheduled", "collection.cancelled"] {
        assert!(actions.iter().any(|a| a == action), "{action}: {actions:?}");
    }

    // Filtered to one list, and the same as CSV.
    let again = json(app.post("/v1/partner/collections", &partner.key, &body).await).await;
    let scheduled_only = ada.get("/dashboard/collections?status=scheduled").await;
    assert!(!scheduled_only.body.contains("unscheduled-title") && scheduled_only.body.contains("scheduled-title"));
    let unscheduled_only = ada.get("/dashboard/collections?status=unscheduled").await;
    assert!(!unscheduled_only.body.contains("id=\"scheduled-title\""), "{}", unscheduled_only.body);
    let csv = ada.get("/dashboard/collections.csv?status=scheduled").await;
    assert_eq!(csv.headers["content-type"], "text/csv; charset=utf-8");
    let lines: Vec<&str> = csv.body.lines().collect();
    assert_eq!(
        lines[0],
        "order,listing_id,item,quantity,window_start,window_end,status,collection_date,warehouse,collection_id"
    );
    assert_eq!(lines.len(), 2, "{}", csv.body);
    assert!(
        lines[1].starts_with(&format!("#{order_id},{listing_id},")) && lines[1].contains(",Scheduled,"),
        "{}",
        lines[1]
    );
    assert!(lines[1].ends_with(again["id"].as_str().unwrap()), "{}", lines[1]);
    // A collection whose day has passed offers nothing; a post says why above the lists.
    let past = order(&app, json!({"listing_id": listing_id, "buyer_window_start": day(-3).to_string()})).await;
    let past_id = past["id"].as_i64().unwrap();
    let body = json!({"order_id": past_id, "scheduled_for": day(-1).to_string()});
    let gone_by = json(app.post("/v1/partner/collections", &partner.key, &body).await).await;
    let page = ada.get("/dashboard/collections").await;
    assert!(page.body.contains("Its day has passed: nothing to change."), "{}", page.body);
    let late = ada
        .post(&format!("/dashboard/collections/{}/cancel", gone_by["id"].as_str().unwrap()), &[("csrf", &csrf)])
        .await;
    assert_eq!(late.status, 422);
    assert!(late.body.contains("role=\"alert\">This collection&#39;s day has passed"), "{}", late.body);
    // A member sees the lists without the changes, and cannot ask for them.
    let again_id = again["id"].as_str().unwrap();
    let (member_id, _) = app.user(&partner, "Mo Member", rehome::domain::user::Role::Member).await;
    super::set_password(&app, member_id).await;
    let mut mo = Browser::new(&app);
    mo.sign_in("mo.member@acme.example", super::PASSWORD).await.assert_redirect("/dashboard");
    let page = mo.get("/dashboard/collections").await;
    assert!(!page.body.contains("/move") && !page.body.contains("/cancel"), "{}", page.body);
    assert_eq!(mo.get(&format!("/dashboard/collections/{again_id}/cancel")).await.status, 403);
    let csrf = mo.get("/dashboard/account").await.csrf();
    assert_eq!(mo.post(&format!("/dashboard/collections/{again_id}/cancel"), &[("csrf", &csrf)]).await.status, 403);
}

#[tokio::test]
async fn a_credit_code_is_redeemed_with_a_redirect_and_refusals_are_sentences() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let redemption = credit_code(&app, &partner, json!(100)).await;
    let code = redemption["code"].as_str().unwrap().to_owned();
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/redemptions").await;
    assert!(page.body.contains("Credit, as a code"), "{}", page.body);
    // No RFC 3339 instant (`2026-11-27T…`); a random credit code may well hold "T0".
    let iso = page
        .body
        .as_bytes()
        .windows(11)
        .any(|w| w[..4].iter().all(u8::is_ascii_digit) && w[4] == b'-' && w[7] == b'-' && w[10] == b'T');
    assert!(!iso && !page.body.contains(":00Z"), "dates in words: {}", page.body);
    let csrf = page.csrf();

    let page = ada.post("/dashboard/redemptions/check", &[("csrf", &csrf), ("code", "RH-0000-0000")]).await;
    assert_eq!(page.status, 422);
    assert!(
        page.body.contains("id=\"code-error\" role=\"alert\">No credit code of your brand matches: check the code"),
        "{}",
        page.body
    );
    assert!(page.body.contains("value=\"RH-0000-0000\""), "the code given is kept");
    let page = ada.post("/dashboard/redemptions/check", &[("csrf", &csrf), ("code", "")]).await;
    assert!(page.body.contains("role=\"alert\">Credit code is required.<"), "{}", page.body);

    // Checked first (decisions 15.5): its value and state, and the button that spends it;
    // nothing is spent, nothing audited. A post to spend without the confirmation is a check.
    let before = super::audit_actions(&app, partner.brand_id).await.len();
    for (path, fields) in [
        ("/dashboard/redemptions/check", vec![("csrf", csrf.as_str()), ("code", code.as_str())]),
        ("/dashboard/redemptions/redeem", vec![("csrf", csrf.as_str()), ("code", code.as_str())]),
    ] {
        let checked = ada.post(path, &fields).await;
        assert_eq!(checked.status, 200, "{path}: {}", checked.body);
        for said in
            ["£100.00", "Not spent yet. It can be spent until", "Spend £100.00", "name=\"confirm\" value=\"yes\""]
        {
            assert!(checked.body.contains(said), "{path}: {said}: {}", checked.body);
        }
    }
    assert_eq!(super::audit_actions(&app, partner.brand_id).await.len(), before, "a check changes nothing");
    let unspent = app.post("/v1/partner/credits/redeem", &partner.key, &json!({"code": code, "dry_run": true})).await;
    assert_eq!(unspent.status(), 200, "the code is still unspent");

    let confirmed =
        [("csrf", csrf.as_str()), ("code", code.as_str()), ("order_reference", "WEB-7"), ("confirm", "yes")];
    let spent = ada.post("/dashboard/redemptions/redeem", &confirmed).await;
    spent.assert_redirect("/dashboard/redemptions");
    let page = ada.get("/dashboard/redemptions").await;
    assert!(page.body.contains("Credit code redeemed: £100.00 of credit"), "{}", page.body);
    assert!(page.body.contains("Spent ") && page.body.contains(" by Ada"), "the table shows it spent: {}", page.body);
    assert!(!ada.get("/dashboard/redemptions").await.body.contains("Credit code redeemed"), "shown once");
    // Audited: who spent which redemption.
    let entries = app.store.audit_page(partner.brand_id, 5, None).await.expect("audit");
    let entry = entries.iter().find(|e| e.action == "credit_code.redeemed").expect("the spending is audited");
    assert_eq!(entry.target.as_deref(), Some(format!("redemption:{}", redemption["id"].as_str().unwrap()).as_str()));
    assert!(entry.actor_display.starts_with("Ada"), "{entry:?}");
    // Checked again: spent, when, by whom, on which order; no button.
    let again = ada.post("/dashboard/redemptions/check", &[("csrf", &csrf), ("code", &code)]).await;
    assert!(again.body.contains("on order WEB-7: it cannot be spent again."), "{}", again.body);
    assert!(!again.body.contains("Spend £100.00"), "{}", again.body);
    let page = ada.post("/dashboard/redemptions/redeem", &confirmed).await;
    assert_eq!(page.status, 422);
    assert!(page.body.contains("This credit code has already been spent: each code works only once."), "{}", page.body);
    // The API sends the same sentence with its code.
    let answer = app.post("/v1/partner/credits/redeem", &partner.key, &json!({"code": "RH-0000-0000"})).await;
    assert_eq!(answer.status(), 404);
    let answer = json(answer).await;
    assert_eq!(answer["code"], "credit_code_not_found");
    assert!(answer["message"].as_str().unwrap().starts_with("No credit code of your brand matches"), "{answer}");
}

#[tokio::test]
async fn empty_pages_say_what_to_do_next() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/deliveries").await;
    assert!(page.body.contains("No events yet.") && page.body.contains("Send test event"), "{}", page.body);
    assert!(!page.body.contains("0 event") && !page.body.contains("<table"), "{}", page.body);
    let page = ada.get("/dashboard/deliveries?status=dead").await;
    assert!(
        page.body.contains("No events with the status “Gave up (dead)”.")
            && page.body.contains(">Show every event</a>"),
        "{}",
        page.body
    );
    let page = ada.get("/dashboard/collections").await;
    assert!(
        page.body.contains("Nothing to schedule.") && page.body.contains("Nothing scheduled yet."),
        "{}",
        page.body
    );
    let page = ada.get("/dashboard/redemptions").await;
    assert!(page.body.contains("No redemptions yet.") && !page.body.contains("<table"), "{}", page.body);
    // An event with no endpoint to go to: no attempt, and what to do about it.
    let event = event_with_markup(&app, &partner).await;
    let page = ada.get(&format!("/dashboard/deliveries/{event}")).await;
    assert!(page.body.contains("No attempt yet:</strong> no webhook endpoint is enabled."), "{}", page.body);
    assert!(page.body.contains("href=\"/dashboard/integrations\""), "{}", page.body);
    assert_eq!(ada.get("/dashboard/deliveries/evt_unknown").await.status, 404);
}

#[tokio::test]
async fn an_action_that_fails_inside_shows_the_error_page_not_its_text() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let redemption = credit_code(&app, &partner, json!(100)).await;
    let listing_id = listing(&app, &partner, json!({"channel": "clearance"})).await;
    let placed = order(&app, json!({"listing_id": listing_id, "buyer_window_start": "2026-12-10"})).await;
    let order_id = placed["id"].as_i64().unwrap().to_string();
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/collections").await.csrf();
    let code = redemption["code"].as_str().unwrap();
    let token = ("csrf", csrf.as_str());
    // Scheduling and spending a code write their audit entries with the change: refused there.
    let actions: [(&str, Vec<(&str, &str)>); 2] = [
        ("/dashboard/collections", vec![token, ("order_id", &order_id), ("scheduled_for", "2026-12-12")]),
        ("/dashboard/redemptions/redeem", vec![token, ("code", code), ("confirm", "yes")]),
    ];
    refuse_audit(&app, true).await;
    for (path, fields) in &actions {
        let page = ada.post(path, fields).await;
        assert_eq!(page.status, 500, "{path}: {}", page.body);
        for leak in LEAKS {
            assert!(!page.body.contains(leak), "{path} shows {leak:?}: {}", page.body);
        }
    }
    refuse_audit(&app, false).await;
    // Nothing was scheduled or spent; then both work.
    let page = ada.get("/dashboard/collections").await;
    assert!(page.body.contains("Nothing scheduled yet."), "{}", page.body);
    let page = ada.get("/dashboard/redemptions").await;
    assert!(page.body.contains("Not spent"), "the failed spend spent nothing: {}", page.body);
    let (path, fields) = &actions[0];
    ada.post(path, fields).await.assert_redirect("/dashboard/collections");
    let (path, fields) = &actions[1];
    ada.post(path, fields).await.assert_redirect("/dashboard/redemptions");
}
