#!/usr/bin/env python3
"""Confirm before destroying (decisions 9.8, issue 31 item 2) in a real headless Chromium,
once with JavaScript on (htmx shows the step in place of the button that asked, with the
focus on it) and once with JavaScript off (the step is its own page, the GET of the
action's address). For each of Revoke (a key), Remove (a member), Remove (a photo), Delete
(a warehouse), Rotate secret, Retry every dead event, Cancel invitation and Cancel collection:

- one click only asks: the record is still there;
- "Cancel" dismisses the step and the record is kept;
- the step's button (its accessible name begins with the action's word) does it, then
  post/redirect/get: the browser ends on a GET page with a one-time notice;
- a reload afterwards sends no POST, shows the same records and no longer the notice.

The inline steps are also checked at 390 px (no sideways scroll) and, with --screenshots DIR,
saved as `confirm-inline-<action>-1280.png` / `-390.png`.

Moving a collection to another day (a date field, then "Move collection") asks on its own
page in both modes: the step names both days, "No, keep …" keeps the day, the step's button
moves it and the list shows the new day with a notice.

Usage: python3 tests/browser/confirm_steps.py [--binary target/debug/rehome] [--screenshots DIR]
"""

import datetime
import http.server
import os
import re
import sys
import tempfile
import threading
from urllib.parse import urlsplit

from dashboard import OPS, PNG, call, seed_market
from every_page import Endpoint, seed_deliveries
from harness import ADMIN, Watch, browser_args, cli, seed_people, sideways, sign_in, start_server
from playwright.sync_api import sync_playwright


def keys(base, key):
    return [k for k in call(base, "GET", "/v1/partner/settings/integrations/keys", key)["data"]
            if k["revoked_at"] is None]


def members(base, key):
    return call(base, "GET", "/v1/partner/settings/team", key)["members"]


def warehouses(base, key):
    found = call(base, "GET", "/v1/partner/settings/warehouses", key)
    return found["warehouses"]


def dead(base, key):
    return call(base, "GET", "/v1/partner/webhooks/deliveries?status=dead", key)["data"]


def scheduled(base, key):
    """The brand's scheduled collections: {order reference: its day}."""
    found = call(base, "GET", "/v1/partner/collections?status=scheduled&per_page=100", key)["data"]
    return {o["order_reference"]: o["collection"]["scheduled_for"] for o in found}


def day(n):
    return (datetime.date.today() + datetime.timedelta(days=n)).isoformat()


def seed(base, key, workdir, page):
    """Two of each record to destroy (one per JavaScript mode)."""
    orders = {}
    for n in (1, 2):
        listing = call(base, "POST", "/v1/listings", key, {
            "title": f"Clearance armchair {n}", "price_gbp": 300, "condition": "excellent",
            "category": "Armchairs", "faults": ["None"], "channel": "clearance", "quantity": 2})["id"]
        for kind in ("cancel", "move"):
            order = call(base, "POST", "/ops/v1/orders", OPS, {"listing_id": listing, "buyer_window_start": day(1)})
            call(base, "POST", "/v1/partner/collections", key, {"order_id": order["id"], "scheduled_for": day(2)})
            orders[(kind, n)] = f"#{order['id']}"
    for n in (1, 2):
        call(base, "POST", "/v1/partner/settings/integrations/keys", key, {"label": f"Doomed key {n}"})
        call(base, "POST", "/v1/partner/settings/warehouses", key,
             {"label": f"Spare depot {n}", "address_1": f"{n} Quay", "city": "Hull", "postcode": "HU1 1AA"})
        cli_member(base, workdir, n)
    sign_in(page, base, ADMIN)
    for n in (1, 2):
        page.goto(base + "/dashboard/team/invite")
        page.get_by_label("Email").fill(f"invitee{n}@acme.example")
        page.get_by_label("Name").fill(f"Invitee {n}")
        page.get_by_role("button", name="Send invite").click()
        page.wait_for_load_state()
    page.goto(base + "/dashboard/listings")
    listing = page.locator("a[href^='/dashboard/listings/']").first.get_attribute("href")
    photo = os.path.join(workdir, "sofa.png")
    with open(photo, "wb") as f:
        f.write(PNG)
    page.goto(base + listing)
    for _ in range(3):
        page.get_by_label("Add photos").set_input_files(photo)
        page.get_by_role("button", name="Upload photos").click()
        page.wait_for_load_state()
    return listing, orders


def cli_member(base, workdir, n):
    cli(BINARY, workdir, "users", "create", "--brand", "acme", "--name", f"Leaver {n}", "--email",
        f"leaver{n}@acme.example", "--role", "member")


def photos(page):
    return page.get_by_role("img", name=re.compile("^Photo [0-9]+ of")).count()


def run(browser, base, origin, key, seeded, javascript, need):
    listing, orders = seeded
    mode = "with JavaScript" if javascript else "without JavaScript"
    context = browser.new_context(java_script_enabled=javascript, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    watch = Watch(page, origin)
    sign_in(page, base, ADMIN)
    n = 1 if javascript else 2

    def key_id(label):
        return next(k["id"] for k in keys(base, key) if k["label"] == label)

    def member_id(email):
        return next(m["id"] for m in members(base, key) if m["email"] == email)

    def warehouse_id(label):
        return next(w["id"] for w in warehouses(base, key) if w["label"] == label)

    # (what, page, the button that asks, the step's button, how many of the records are left)
    label, leaver, invitee, depot = f"Doomed key {n}", f"leaver{n}@acme.example", f"invitee{n}@acme.example", \
        f"Spare depot {n}"
    cases = [
        ("revoke a key", "/dashboard/integrations",
         lambda: page.get_by_role("row").filter(has_text=label).get_by_role("button", name="Revoke", exact=True),
         "Revoke key", lambda: sum(k["label"] == label for k in keys(base, key))),
        ("remove a member", "/dashboard/team",
         lambda: page.get_by_role("row").filter(has_text=leaver).get_by_role("button", name="Remove", exact=True),
         f"Remove Leaver {n}", lambda: sum(m["email"] == leaver for m in members(base, key))),
        ("cancel an invitation", "/dashboard/team",
         lambda: page.get_by_role("row").filter(has_text=invitee).get_by_role("button", name=re.compile("^Cancel invitation")),
         "Cancel invitation", lambda: sum(m["email"] == invitee for m in members(base, key))),
        ("delete a warehouse", "/dashboard/settings",
         lambda: page.get_by_role("row").filter(has_text=depot).get_by_role("button", name="Delete", exact=True),
         "Delete warehouse", lambda: sum(w["label"] == depot for w in warehouses(base, key))),
        ("remove a photo", listing,
         lambda: page.get_by_role("button", name="Remove photo 2", exact=True),
         "Remove photo 2", lambda: photos_on(listing)),
        ("rotate the webhook secret", "/dashboard/integrations",
         lambda: page.get_by_role("button", name="Rotate secret", exact=True),
         "Rotate secret now", lambda: 1),
        ("retry every dead event", "/dashboard/deliveries",
         lambda: page.get_by_role("button", name="Retry every dead event", exact=True),
         "Retry every dead event now", lambda: len(dead(base, key))),
        ("cancel a collection", "/dashboard/collections",
         lambda: page.get_by_role("row").filter(has_text=orders[("cancel", n)])
         .get_by_role("button", name="Cancel collection", exact=True),
         "Cancel collection", lambda: int(orders[("cancel", n)] in scheduled(base, key))),
    ]

    checker = context.new_page()

    def photos_on(path):
        checker.goto(base + path)
        return photos(checker)

    for what, where, asks, button, left in cases:
        page.goto(base + where)
        before = left()
        need(before >= 1, f"{mode}, {what}: nothing to act on ({before})")
        # One click asks, and only asks.
        if not asks().count():
            need(False, f"{mode}, {what}: no button on {page.url}: {page.locator('main').inner_text()[:300]!r}")
            continue
        asks().click()
        page.wait_for_load_state()
        step = page.locator(".confirm-inline" if javascript else "section.confirm")
        try:
            step.wait_for(state="visible", timeout=5000)
        except Exception:
            need(False, f"{mode}, {what}: no confirmation step after one click ({page.url})")
            continue
        if javascript:
            need(urlsplit(page.url).path == urlsplit(base + where).path,
                 f"{mode}, {what}: the step left the page ({page.url})")
            try:
                # htmx moves the focus to the step's `autofocus` once the swap settles.
                page.wait_for_function("!!document.activeElement.closest('.confirm-inline')", timeout=3000)
            except Exception:
                need(False, f"{mode}, {what}: the focus is not on the step")
        need(left() == before, f"{mode}, {what}: one click changed something")
        # The step in place fits a phone too.
        for width in (390, 1280):
            page.set_viewport_size({"width": width, "height": 900})
            over = sideways(page)
            need(over <= 0, f"{mode}, {what}: the step scrolls the page sideways by {over} px at {width} px")
            if SHOTS and javascript:
                slug = what.replace(" ", "-")
                page.screenshot(path=os.path.join(SHOTS, f"confirm-inline-{slug}-{width}.png"), full_page=True)
        # Dismissed: the record stays.
        # The step's one link is its way back (its words may say what it keeps).
        step.get_by_role("link").click()
        page.wait_for_load_state()
        need(left() == before, f"{mode}, {what}: a dismissed confirmation changed something")
        need(page.locator(".confirm-inline, section.confirm").count() == 0, f"{mode}, {what}: the step is still shown")
        # Confirmed: done once, then post/redirect/get.
        asks().click()
        page.wait_for_load_state()
        step.wait_for(state="visible", timeout=5000)
        confirm = step.get_by_role("button", name=button, exact=True)
        need(confirm.count() == 1, f"{mode}, {what}: the step has no button {button!r}")
        if not confirm.count():
            continue
        with page.expect_navigation():
            confirm.click()
        page.wait_for_load_state()
        after = left()
        if what == "retry every dead event":
            need(page.get_by_text(re.compile("dead events? queued")).count() == 1,
                 f"{mode}, {what}: no notice after the action")
        elif what == "rotate the webhook secret":
            need(page.locator("#signing-secret").count() == 1, f"{mode}, {what}: no new secret shown")
        else:
            need(after == before - 1, f"{mode}, {what}: {before} before, {after} after the action")
            need(page.locator(".notice").count() == 1, f"{mode}, {what}: no notice after the action")
        shown = page.url
        # A reload submits nothing and shows the same records, without the notice.
        methods = []

        def record(request):
            if request.resource_type == "document":
                methods.append(request.method)
        page.on("request", record)
        page.reload()
        page.wait_for_load_state()
        page.remove_listener("request", record)
        need(methods and all(m == "GET" for m in methods), f"{mode}, {what}: the reload sent {methods}")
        need(page.url == shown, f"{mode}, {what}: the reload went from {shown} to {page.url}")
        if what != "retry every dead event":
            need(left() == after, f"{mode}, {what}: the reload changed the records")
        need(page.locator(".notice").count() == 0 and page.locator("#signing-secret").count() == 0,
             f"{mode}, {what}: the notice or secret is shown again after the reload")
    move_collection(page, base, key, orders[("move", n)], mode, need)
    checker.close()
    context.close()
    return watch.problems


def move_collection(page, base, key, reference, mode, need):
    """A new day asks on its own page; kept, then moved."""
    what = "move a collection"
    page.goto(base + "/dashboard/collections")
    row = page.get_by_role("row").filter(has_text=reference)
    row.get_by_label("New date").fill(day(4))
    row.get_by_role("button", name="Move collection", exact=True).click()
    page.wait_for_load_state()
    step = page.locator("section.confirm")
    if not step.count():
        need(False, f"{mode}, {what}: no confirmation step ({page.url}): {page.locator('main').inner_text()[:300]!r}")
        return
    text = step.inner_text()
    words = lambda d: datetime.date.fromisoformat(d).strftime("%A %-d %B %Y")
    need(words(day(2)) in text and words(day(4)) in text, f"{mode}, {what}: the step does not name both days: {text!r}")
    need(scheduled(base, key)[reference] == day(2), f"{mode}, {what}: asking moved it")
    step.get_by_role("link", name=f"No, keep {words(day(2))}").click()
    page.wait_for_load_state()
    need(scheduled(base, key)[reference] == day(2), f"{mode}, {what}: the way back moved it")
    row = page.get_by_role("row").filter(has_text=reference)
    row.get_by_label("New date").fill(day(4))
    row.get_by_role("button", name="Move collection", exact=True).click()
    page.wait_for_load_state()
    with page.expect_navigation():
        page.locator("section.confirm").get_by_role("button", name="Move collection", exact=True).click()
    page.wait_for_load_state()
    need(scheduled(base, key)[reference] == day(4), f"{mode}, {what}: not moved")
    need(page.locator(".notice").filter(has_text=f"Collection of order {reference} moved").count() == 1,
         f"{mode}, {what}: no notice after the move")
    if SHOTS:
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.screenshot(path=os.path.join(SHOTS, f"collections-moved-{width}.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})


BINARY = None
SHOTS = None


def main():
    global BINARY, SHOTS
    args, chromium, binary = browser_args()
    BINARY, SHOTS = binary, args.screenshots
    os.environ["REHOME_OPS_TOKEN"] = OPS
    os.environ["REHOME_ALLOW_PRIVATE_NETWORK"] = "true"
    os.environ["REHOME_WEBHOOK_ALLOW_HTTP"] = "true"
    os.environ["REHOME_WEBHOOK_RETRY_BASE_MS"] = "20"
    os.environ["REHOME_WEBHOOK_RETRY_WINDOW_S"] = "1"
    os.environ["REHOME_WEBHOOK_POLL_MS"] = "20"
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hook = f"http://127.0.0.1:{receiver.server_address[1]}"
    with tempfile.TemporaryDirectory() as workdir:
        key = seed_people(binary, workdir)
        server, base = start_server(binary, workdir)
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
        try:
            seed_market(base, key)
            seed_deliveries(base, key, hook)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                seeding = browser.new_page()
                seeded = seed(base, key, workdir, seeding)
                seeding.close()
                for javascript in (True, False):
                    # Each mode finds at least one dead event to retry.
                    if not dead(base, key):
                        seed_deliveries(base, key, hook)
                    problems += run(browser, base, origin, key, seeded, javascript, need)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
            receiver.shutdown()
    if problems:
        for problem in problems:
            print("FAIL:", problem)
        sys.exit(1)
    print("confirmation steps: one click asks, Cancel keeps, the button does it once; with and without JavaScript")


if __name__ == "__main__":
    main()
