#!/usr/bin/env python3
"""The partner dashboard in a real headless Chromium (decisions 9): every page's main path
and a failure path, by the accessible names of section 9.3, as an admin and as a member.
No page may load anything from another origin or log a console error.

Seeds a brand with the CLI (an admin and a member with passwords, an API key) and over the
API and the operator API (listings, a delivered sale, a trade-in with a credit code, an
order to collect, a statement), then drives the pages. Optionally saves screenshots of the
main pages. Usage:

    python3 tests/browser/dashboard.py [--binary target/debug/rehome] [--screenshots DIR]
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from urllib.parse import urlsplit

from harness import ADMIN, MEMBER, PASSWORD, ROOT, Watch, ask, browser_args, cli, seed_people, sign_in, start_server
from playwright.sync_api import expect, sync_playwright

OPS = "ops-token-for-the-browser-test-0123"
# A 2x2 PNG (red, green, blue, white).
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a730000001249444154789c63f8cfc0c000c2"
    "0cff8100001fee05fb0bd9688b0000000049454e44ae426082")
NAV = ["Listings", "Orders", "Bulk import", "Settings", "Integrations", "Deliveries", "Redemptions", "Collections",
       "Team", "Wallet", "Audit log"]


def call(base, method, path, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"null")


def seed_market(base, key):
    """A listing, a sale delivered 3 days ago (then a statement), a trade-in paid in credit,
    and an order to collect."""
    def listing(**fields):
        body = {"title": "Oak frame sofa", "price_gbp": 450, "condition": "excellent", "category": "3-Seater Sofas",
                "faults": ["None"], "channel": "clearance", "quantity": 3}
        body.update(fields)
        return call(base, "POST", "/v1/listings", key, body)["id"]

    call(base, "POST", "/v1/partner/settings/warehouses", key, {"label": "Leeds DC", "address_1": "1 Dock Road",
         "city": "Leeds", "postcode": "LS1 4AP"})
    sold = listing(title="Grey velvet sofa")
    order = call(base, "POST", "/ops/v1/orders", OPS, {"listing_id": sold})["id"]
    delivered = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=3)).isoformat()
    call(base, "POST", f"/ops/v1/orders/{order}/complete", OPS, {"completed_at": delivered})
    call(base, "POST", "/ops/v1/remittances/run", OPS, {})
    start = (datetime.date.today() + datetime.timedelta(days=3)).isoformat()
    collect = call(base, "POST", "/ops/v1/orders", OPS, {"listing_id": sold, "buyer_window_start": start})["id"]
    exchange = listing(title="Trade-in armchair", channel="exchange", quantity=1, category="Armchairs")
    traded = call(base, "POST", "/ops/v1/orders", OPS, {"listing_id": exchange})["id"]
    call(base, "POST", f"/ops/v1/orders/{traded}/complete", OPS, {})
    call(base, "POST", f"/ops/v1/orders/{traded}/payout-choice", OPS,
         {"customer_id": "cus_1", "customer_choice": "credit", "credit_destination": "code"})
    return collect, start


def submit(page, watch, button, status=None):
    """Clicks `button`, allowing the failed-load console message of `status` meanwhile."""
    if status:
        watch.allowed_status.add(status)
    button.click()
    page.wait_for_load_state()
    watch.allowed_status.discard(status)


def check_admin(page, base, watch, collect_order, window_start, shots):
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

    def shot(name):
        if shots:
            page.screenshot(path=os.path.join(shots, f"{name}.png"), full_page=True)

    photo_path = os.path.join(shots or tempfile.gettempdir(), "sofa.png")
    with open(photo_path, "wb") as f:
        f.write(PNG)
    sign_in(page, base, ADMIN)
    nav = page.get_by_role("navigation", name="Dashboard")
    for text in NAV:
        need(nav.get_by_role("link", name=text, exact=True).count() == 1, f"no navigation link {text!r}")
    need(page.get_by_role("button", name="Sign out").count() == 1, "no Sign out")

    # Listings: the seeded ones, and a search.
    nav.get_by_role("link", name="Listings").click()
    page.wait_for_load_state()
    need(page.get_by_text("Grey velvet sofa").count() >= 1, "listings page misses a listing")
    # With htmx, typing filters the results in place (no page load: a mark set on the window
    # survives) and the address follows the search.
    need(page.evaluate("typeof htmx") == "object", "htmx is not loaded on the listings page")
    page.evaluate("window.__sameDocument = true")
    page.get_by_label("Search title or SKU").fill("armchair")
    try:
        page.get_by_text("Grey velvet sofa").wait_for(state="detached", timeout=5000)
    except Exception:
        pass
    need(page.get_by_text("Trade-in armchair").count() == 1 and page.get_by_text("Grey velvet sofa").count() == 0,
         "the search did not filter as it was typed")
    need(page.evaluate("window.__sameDocument === true"), "the search reloaded the page instead of swapping results")
    need("q=armchair" in page.url, f"the address does not follow the search: {page.url}")
    # Without htmx's help (the form submitted as a plain GET) the same page is served.
    page.goto(base + "/dashboard/listings?q=armchair")
    need(page.get_by_text("Trade-in armchair").count() == 1 and page.get_by_text("Grey velvet sofa").count() == 0,
         "the search page did not filter")
    shot("listings")

    # A new listing with a photo: a bad price shown beside its field, then created.
    page.get_by_role("button", name="New listing").click()
    page.wait_for_load_state()
    page.get_by_label("Title").fill("Blue corner sofa")
    page.get_by_label("Price (GBP)", exact=True).fill("12.345")
    page.get_by_label("Quantity").fill("2")
    page.get_by_label("Category").select_option("Corner Sofas")
    page.get_by_label("Condition").select_option("excellent")
    page.get_by_role("group", name="Faults").get_by_label("None of the above").check()
    page.get_by_label("Photos", exact=True).set_input_files(photo_path)
    submit(page, watch, page.get_by_role("button", name="Create listing"), 422)
    need("from £0.01 to £1,000,000.00" in page.locator("#price_gbp-error").inner_text(), "a bad price is not explained beside it")
    page.get_by_label("Price (GBP)", exact=True).fill("640")
    # The photo chosen with the refused try is kept by the form: not chosen again.
    need(page.get_by_text(re.compile("Kept from your last try")).count() == 1, "the refused try's photo is not kept")
    submit(page, watch, page.get_by_role("button", name="Create listing"))
    need(page.get_by_role("heading", name="Blue corner sofa").count() == 1, f"not on the new listing's page: {page.url}")
    need(page.get_by_text("524.80").count() == 1, "the payout per unit is not shown")
    need(page.get_by_role("img", name=re.compile("Photo 1 of Blue corner sofa")).count() == 1, "the photo is not shown")
    shot("listing")
    # Its photos: one added, made the cover, then removed.
    page.get_by_label("Add photos").set_input_files(photo_path)
    submit(page, watch, page.get_by_role("button", name="Upload photos"))
    need(page.get_by_role("img", name=re.compile("Photo 2 of Blue corner sofa")).count() == 1, "the added photo is not shown")
    submit(page, watch, page.get_by_role("button", name="Make photo 2 the cover"))
    need(page.get_by_text("Cover photo changed.").count() == 1, "the cover was not changed")
    # Removing takes a confirmation (decisions 9.8): cancelled, the photo stays.
    ask(page, page.get_by_role("button", name="Remove photo 2"))
    need(page.get_by_text("Remove photo 2 from this listing?").count() == 1, "no confirmation step")
    page.get_by_role("link", name="No, keep the photo").click()
    page.wait_for_load_state()
    need(page.get_by_role("img", name=re.compile("Photo 2 of")).count() == 1, "one click removed the photo")
    ask(page, page.get_by_role("button", name="Remove photo 2"))
    submit(page, watch, page.get_by_role("button", name="Remove photo 2"))
    need(page.get_by_text("Photo removed.").count() == 1, "removing did not say so")
    need(page.get_by_role("img", name=re.compile("Photo 2 of")).count() == 0, "the photo was not removed")
    page.get_by_role("button", name="Edit listing").click()
    page.wait_for_load_state()
    page.get_by_label("SKU").fill("BLUE-1")
    submit(page, watch, page.get_by_role("button", name="Save listing"))
    need(page.get_by_text("Listing saved.").count() == 1, "the edit was not saved")

    # Integrations: a key with its secret shown once, revoked; the webhook.
    page.goto(base + "/dashboard/integrations")
    page.get_by_role("button", name="Create key").click()
    page.wait_for_load_state()
    page.get_by_label("Label").fill("Stock sync")
    submit(page, watch, page.get_by_role("button", name="Create", exact=True))
    secret = page.locator("#new-key-secret").input_value() if page.locator("#new-key-secret").count() else ""
    need(secret.startswith("rhk_"), f"no key secret shown: {secret!r}")
    revoke = page.get_by_role("button", name="Revoke")
    need(revoke.count() == 2, f"expected two active keys with Revoke, got {revoke.count()}")
    page.get_by_label("Endpoint URL").fill("https://")
    submit(page, watch, page.get_by_role("button", name="Save", exact=True), 422)
    need(page.get_by_role("alert").filter(has_text="Endpoint URL must be a web address starting with https://").count() == 1, "a bad webhook URL is not explained")
    page.get_by_label("Endpoint URL").fill("https://127.0.0.1:9/hooks")
    page.get_by_label("Enabled").check()
    submit(page, watch, page.get_by_role("button", name="Save", exact=True))
    need(page.locator("#signing-secret").count() == 1, "no signing secret shown after the first save")
    first_secret = page.locator("#signing-secret").inner_text() if page.locator("#signing-secret").count() else ""
    ask(page, page.get_by_role("button", name="Rotate secret"))
    # One click only asks: with htmx the step is in place and the page still shows the first secret.
    need(page.locator("#signing-secret").count() == 0 or page.locator("#signing-secret").inner_text() == first_secret,
         "one click rotated the secret")
    submit(page, watch, page.get_by_role("button", name="Rotate secret now"))
    rotated = page.locator("#signing-secret")
    need(rotated.count() == 1 and rotated.inner_text() != first_secret, "no new secret after rotating")
    submit(page, watch, page.get_by_role("button", name="Send test event"))
    need(page.get_by_text("Test event queued").count() == 1, "the test event was not queued")
    shot("integrations")
    ask(page, page.get_by_role("button", name="Revoke").first)
    page.get_by_role("link", name="No, keep the key").click()
    page.wait_for_load_state()
    need(page.get_by_role("button", name="Revoke").count() == 2, "a dismissed confirmation revoked the key")
    ask(page, page.get_by_role("button", name="Revoke").first)
    submit(page, watch, page.get_by_role("button", name="Revoke key"))
    need(page.get_by_role("button", name="Revoke").count() == 1, "revoking left the key active")
    need(page.get_by_text(re.compile("Key revoked")).count() == 1, "revoking did not say so")
    page.reload()
    page.wait_for_load_state()
    need(page.get_by_text(re.compile("Key revoked")).count() == 0, "the notice shows again on reload")

    # Deliveries: filtered in place by status (htmx), then the test event replayed.
    page.goto(base + "/dashboard/deliveries")
    page.evaluate("window.__sameDocument = true")
    page.get_by_label("Status").select_option("delivered")
    try:
        page.get_by_role("button", name="Replay").first.wait_for(state="detached", timeout=5000)
    except Exception:
        pass
    need(page.get_by_role("button", name="Replay").count() == 0, "the status filter did not apply in place")
    need(page.evaluate("window.__sameDocument === true") and "status=delivered" in page.url,
         "the status filter reloaded the page or lost the address")
    page.goto(base + "/dashboard/deliveries")
    replay = page.get_by_role("button", name="Replay")
    need(replay.count() >= 1, "no delivery with Replay")
    if replay.count():
        replay.first.click()
        try:
            page.get_by_text("Queued: sending again now.").wait_for(timeout=5000)
        except Exception:
            pass
        need(page.get_by_text("Queued: sending again now.").count() == 1, "replay did not say in its row it queued")
    shot("deliveries")

    # Settings: a refused boost shown beside its field, then saved.
    page.goto(base + "/dashboard/settings")
    page.get_by_label("Credit boost (%)").fill("250")
    submit(page, watch, page.get_by_role("button", name="Save"), 422)
    need(page.locator("#boost-error").inner_text() == "Credit boost (%) must be a whole number from 100 to 200.",
         "the boost error is not beside it in words")
    page.get_by_label("Credit boost (%)").fill("120")
    page.get_by_label("Code validity (days)").fill("90")
    page.get_by_label("Cash", exact=True).uncheck()
    page.get_by_label("Credit", exact=True).check()
    submit(page, watch, page.get_by_role("button", name="Save"))
    need(page.get_by_text("Payout options saved.").count() == 1, "payouts not saved")
    shot("settings")

    # Collections: a date outside the window refused, one inside scheduled.
    page.goto(base + "/dashboard/collections")
    dates = page.get_by_label("Collection date")
    need(dates.count() == 2, f"expected two orders to schedule, got {dates.count()}")
    start = datetime.date.fromisoformat(window_start)
    dates.last.fill((start - datetime.timedelta(days=1)).isoformat())
    submit(page, watch, page.get_by_role("button", name="Schedule").last, 422)
    need(page.get_by_role("alert").filter(has_text="Choose a date from").count() == 1,
         "a date outside the buyer window is not refused beside the row")
    page.get_by_label("Collection date").last.fill((start + datetime.timedelta(days=2)).isoformat())
    submit(page, watch, page.get_by_role("button", name="Schedule").last)
    need(page.get_by_text(re.compile("Collection of order #[0-9]+ scheduled")).count() == 1,
         "the collection was not scheduled")
    need(page.get_by_label("Collection date").count() == 1, "the scheduled order is still offered")
    shot("collections")

    # Team: an invitation with its link, then removing the member.
    page.goto(base + "/dashboard/team")
    page.get_by_role("button", name="Invite").click()
    page.wait_for_load_state()
    page.get_by_label("Email").fill("sam@acme.example")
    page.get_by_label("Name").fill("Sam Stock")
    page.get_by_label("Role").select_option("member")
    submit(page, watch, page.get_by_role("button", name="Send invite"))
    link = page.locator("#invitation-link")
    need(link.count() == 1 and "/dashboard/invite/" in link.input_value(), "no invitation link shown")
    shot("team")
    removes = page.get_by_role("button", name="Remove")
    need(removes.count() == 2, f"expected Remove on the two other members, got {removes.count()}")
    ask(page, removes.last)
    need(page.get_by_text(re.compile("^Remove .* from the team")).count() == 1, "no confirmation step")
    submit(page, watch, page.get_by_role("button", name=re.compile("^Remove ")))
    need(page.get_by_text(re.compile("Member removed")).count() == 1, "removing did not say so")

    # Your account: the name in the header leads there from every page.
    page.get_by_role("link", name="Ada Admin").click()
    page.wait_for_load_state()
    need(page.get_by_role("heading", name="Your account").count() == 1, f"the name does not lead to the account: {page.url}")
    shot("account")

    # Redemptions: the trade-in listed; a wrong code refused.
    page.goto(base + "/dashboard/redemptions")
    need(page.get_by_text("Credit, as a code").count() == 1, "the credit redemption is not listed")
    page.get_by_label("Credit code").fill("RH-0000-0000-0000-0000")
    submit(page, watch, page.get_by_role("button", name="Check code"), 422)
    need(page.locator("#code-error").inner_text().startswith("No credit code of your brand matches"),
         "a wrong code is not said in words")
    # A real code: checked first (its value, not spent), then spent on confirmation.
    code = page.locator("td[data-label='Code']").first.inner_text().strip()
    page.get_by_label("Credit code").fill(code)
    submit(page, watch, page.get_by_role("button", name="Check code"), 200)
    need("Not spent yet" in page.inner_text("main"), "a checked code does not say it is unspent")
    spend = page.get_by_role("button", name=re.compile(r"^Spend £"))
    need(spend.count() == 1, "a checked code offers no button to spend it")
    shot("redemption-check")
    if spend.count() == 1:
        submit(page, watch, spend, 200)
        need(page.get_by_text("Credit code redeemed").count() == 1, "no notice after spending a code")
        need(page.locator("td[data-label='Spent']").first.inner_text().startswith("Spent "),
             "the table does not show the code spent")

    # Wallet: balances, the statement and its PDF.
    page.goto(base + "/dashboard/wallet")
    need(page.locator("#paid").inner_text() == "369.00", f"paid is {page.locator('#paid').inner_text()}")
    pdf = page.get_by_role("link", name="PDF")
    need(pdf.count() == 1, "no statement PDF link")
    if pdf.count():
        answer = page.request.get(base + pdf.get_attribute("href"))
        need(answer.headers.get("content-type") == "application/pdf", "the statement is not a PDF")
    shot("wallet")

    # Bulk import: the upload is reviewed with a row's error by cell (tests/browser/bulk_import.py
    # follows the whole flow); nothing is imported here.
    page.goto(base + "/dashboard/bulk-import")
    csv_dir = tempfile.mkdtemp()
    csv_path = os.path.join(csv_dir, "stock.csv")
    with open(csv_path, "w") as f:
        f.write("title,price_gbp,condition,category,faults\nGood sofa,120,fair,3-Seater Sofas,None\n"
                "Bad sofa,-5,fair,3-Seater Sofas,None\n")
    page.get_by_label("File").set_input_files(csv_path)
    submit(page, watch, page.get_by_role("button", name="Upload and review"))
    need(page.get_by_text("Price (GBP) must be an amount in pounds").count() == 1, "the bad cell's error is not explained")
    shot("bulk-import")
    page.get_by_role("button", name="Discard this file").click()
    page.wait_for_load_state()
    shutil.rmtree(csv_dir, ignore_errors=True)

    # Audit log: what was just done is there.
    page.goto(base + "/dashboard/audit-log")
    need(page.get_by_role("cell", name=re.compile("key")).count() >= 1, "the audit log shows no key action")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_load_state()
    return problems


WIDTH_PAGES = [
    ("home", "/dashboard"), ("account", "/dashboard/account"), ("listings", "/dashboard/listings"),
    ("new-listing", "/dashboard/listings/new"), ("bulk-import", "/dashboard/bulk-import"),
    ("settings", "/dashboard/settings"), ("integrations", "/dashboard/integrations"),
    ("new-key", "/dashboard/integrations/keys/new"), ("rotate-confirm", "/dashboard/integrations/webhook/rotate"),
    ("deliveries", "/dashboard/deliveries"), ("replay-confirm", "/dashboard/deliveries/replay-dead"),
    ("redemptions", "/dashboard/redemptions"), ("collections", "/dashboard/collections"),
    ("team", "/dashboard/team"), ("invite", "/dashboard/team/invite"), ("wallet", "/dashboard/wallet"),
    ("audit-log", "/dashboard/audit-log"), ("two-step", "/dashboard/account/two-step"),
]


def check_widths(browser, base, shots):
    """Every page at 1280 px and at 390 px: nothing scrolls the page sideways (decisions 9.7),
    the navigation marks the current page. (tests/browser/every_page.py saves these pages'
    screenshots, `<page>-1280.png` and `<page>-390.png`; this test saves its flow's.)"""
    problems = []
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, base, ADMIN)
    pages = list(WIDTH_PAGES)
    page.goto(base + "/dashboard/listings")
    first = page.locator("a[href^='/dashboard/listings/']").first
    if first.count():
        pages.append(("listing", first.get_attribute("href")))
    page.goto(base + "/dashboard/deliveries")
    event = page.locator("a[href^='/dashboard/deliveries/evt_']").first
    if event.count():
        pages.append(("delivery", event.get_attribute("href")))
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for name, path in pages:
            page.goto(base + path)
            page.wait_for_load_state()
            wide = page.evaluate("document.scrollingElement.scrollWidth")
            inner = page.evaluate("window.innerWidth")
            if wide > inner:
                problems.append(f"{path} scrolls sideways at {width} px ({wide} > {inner})")
            marked = page.locator("nav a[aria-current='page']")
            section = "/" + "/".join(path.split("?")[0].split("/")[1:3])
            if section in [f"/dashboard/{n}" for n in ("listings", "settings", "integrations", "deliveries",
                                                        "redemptions", "collections", "team", "wallet",
                                                        "audit-log", "bulk-import")]:
                if marked.count() != 1 or marked.first.get_attribute("href") != section:
                    problems.append(f"{path}: the navigation does not mark {section} as the current page")
    page.close()
    return problems


def check_member(page, base, watch):
    problems = []
    sign_in(page, base, MEMBER)
    nav = page.get_by_role("navigation", name="Dashboard")
    for text in NAV:
        admin_only = text in ("Integrations", "Team", "Audit log")
        count = nav.get_by_role("link", name=text, exact=True).count()
        if count != (0 if admin_only else 1):
            problems.append(f"member navigation: {text!r} appears {count} time(s)")
    page.goto(base + "/dashboard/settings")
    if page.get_by_role("button", name="Save").count():
        problems.append("a member is offered Save on Settings")
    # A forged admin POST with the member's own token: refused.
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    answer = page.request.post(base + "/dashboard/settings/payouts",
                               form={"csrf": token, "credit_boost_percent": "200", "code_validity_days": "5"})
    if answer.status != 403:
        problems.append(f"a member's forged payouts POST answered {answer.status}")
    return problems


def main():
    args, chromium, binary = browser_args()
    os.environ["REHOME_OPS_TOKEN"] = OPS
    os.environ["REHOME_ALLOW_PRIVATE_NETWORK"] = "true"
    with tempfile.TemporaryDirectory() as workdir:
        key = seed_people(binary, workdir)
        server, base = start_server(binary, workdir)
        try:
            collect, start = seed_market(base, key)
            origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                watch = Watch(page, origin)
                problems = check_admin(page, base, watch, collect, start, args.screenshots)
                member_page = browser.new_page()
                member_watch = Watch(member_page, origin)
                problems += check_member(member_page, base, member_watch)
                problems += check_widths(browser, base, args.screenshots)
                problems += watch.problems + member_watch.problems
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    if problems:
        for problem in problems:
            print("FAIL:", problem)
        sys.exit(1)
    print("dashboard: every page's main and failure paths passed in Chromium")


if __name__ == "__main__":
    main()
