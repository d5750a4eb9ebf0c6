#!/usr/bin/env python3
"""Every dashboard page, with data on it, as an admin and as a member, at 1280 px and at
390 px, in a real headless Chromium (issue 31 item 8 and its Tests section). On each page:

- nothing scrolls the page sideways: `document.scrollingElement.scrollWidth <= innerWidth`
  (decisions 9.7);
- axe-core (tests/browser/package.json, `npm ci` there) finds no violation: it is injected
  with the page's CSP bypassed, for this test's browser context only;
- no visible error text is only a `snake_case` code;
- no console error and no request to another origin.

The brand is seeded with the CLI, the API and the operator API (listings with photos, a
sale, a statement, a trade-in with a credit code, collections to schedule and scheduled,
webhook deliveries delivered and dead, keys, an invitation, a bulk draft with a refused
row), and the pages include confirmation steps, forms in their error states, the 404 and
403 pages, sign-in, two-step and an invitation. Screenshots of every page at both widths
go to --screenshots DIR (`<page>-1280.png`, `<page>-390.png`; docs/dashboard/ keeps them).

Usage: python3 tests/browser/every_page.py [--binary target/debug/rehome] [--screenshots DIR]
"""

import http.server
import json
import os
import re
import sys
import tempfile
import threading
import time
import urllib.request
from urllib.parse import urlsplit

from dashboard import OPS, PNG, call, seed_market
from harness import (ADMIN, MEMBER, PASSWORD, Watch, axe_source, axe_violations, browser_args, codes_on_page,
                     seed_people, sideways, sign_in, start_server)
from playwright.sync_api import sync_playwright

WIDTHS = (1280, 390)
BAD_CSV = ("title,price_gbp,condition,category,faults,sku\n"
           "Grey sofa,120,fair,3-Seater Sofas,None,SOFA-1\n"
           "Red sofa with a rather long name that wraps,-5,mint,Sofas,Scratches,SOFA-2\n")


class Endpoint(http.server.BaseHTTPRequestHandler):
    """A webhook receiver: /ok answers 200, anything else 500 (so its events die)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status = 200 if self.path == "/ok" else 500
        body = b"received" if status == 200 else b"<h1>Internal Server Error</h1>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def wait_for(what, check, seconds=30):
    """Polls `check` (the delivery queue runs on its own clock) until it holds."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    sys.exit(f"timed out waiting for {what}")


def seed_deliveries(base, key, hook):
    """A dead event (the endpoint answers 500 until the short retry window closes), then a
    delivered one; returns both event ids."""
    call(base, "PATCH", "/v1/partner/settings/integrations/webhook", key, {"url": hook + "/fail", "enabled": True})
    dead = call(base, "POST", "/v1/partner/settings/integrations/webhook/test", key, {})["event_id"]
    wait_for("an event to die", lambda: call(
        base, "GET", f"/v1/partner/webhooks/deliveries/{dead}", key)["status"] == "dead")
    call(base, "PATCH", "/v1/partner/settings/integrations/webhook", key, {"url": hook + "/ok", "enabled": True})
    delivered = call(base, "POST", "/v1/partner/settings/integrations/webhook/test", key, {})["event_id"]
    wait_for("an event delivered", lambda: call(
        base, "GET", f"/v1/partner/webhooks/deliveries/{delivered}", key)["status"] == "delivered")
    return dead, delivered


def click(page, locator):
    locator.click()
    page.wait_for_load_state()


def seed_in_pages(page, base, workdir, watch):
    """What is easiest through the pages themselves: photos on a listing, a second key, an
    invitation, a bulk draft with a refused row. Returns the ids the page list needs."""
    found = {}
    sign_in(page, base, ADMIN)
    page.goto(base + "/dashboard/listings")
    href = page.locator("a[href^='/dashboard/listings/']").filter(has_text="Grey velvet sofa").first.get_attribute("href")
    found["listing"] = href
    photo = os.path.join(workdir, "sofa.png")
    with open(photo, "wb") as f:
        f.write(PNG)
    page.goto(base + href)
    for _ in range(2):
        page.get_by_label("Add photos").set_input_files(photo)
        click(page, page.get_by_role("button", name="Upload photos"))
    page.goto(base + "/dashboard/integrations/keys/new")
    page.get_by_label("Label").fill("Warehouse stock sync (nightly)")
    click(page, page.get_by_role("button", name="Create", exact=True))
    page.goto(base + "/dashboard/team/invite")
    page.get_by_label("Email").fill("sam.stockroom-lead@acme.example")
    page.get_by_label("Name").fill("Sam Stockroom-Lead")
    page.get_by_label("Role").select_option("member")
    click(page, page.get_by_role("button", name="Send invite"))
    found["invitation"] = page.locator("#invitation-link").input_value()
    found["sam"] = page.locator("form[action$='/cancel-invitation']").first.get_attribute("action")
    found["mo"] = page.get_by_role("row").filter(has_text=MEMBER).locator("form[action$='/remove']").get_attribute("action")
    page.goto(base + "/dashboard/integrations")
    found["key"] = page.locator("form[action$='/revoke']").first.get_attribute("action")
    found["roll"] = page.locator("form[action$='/roll']").first.get_attribute("action")
    csv = os.path.join(workdir, "stock.csv")
    with open(csv, "w") as f:
        f.write(BAD_CSV)
    page.goto(base + "/dashboard/bulk-import")
    page.get_by_label("File").set_input_files(csv)
    click(page, page.get_by_role("button", name="Upload and review"))
    found["draft"] = urlsplit(page.url).path
    page.goto(base + "/dashboard/settings")
    delete = page.locator("form[action$='/delete']").first
    found["warehouse"] = delete.get_attribute("action") if delete.count() else None
    return found


def fill_and_submit(path, fields, button, status=422):
    """A state: the form at `path` with `fields` (label → value) submitted, refused."""
    def act(page, base, watch):
        page.goto(base + path)
        for label, value in fields:
            page.get_by_label(label, exact=True).fill(value)
        watch.allowed.add(status)
        click(page, page.get_by_role("button", name=button, exact=True))
        watch.allowed.discard(status)
    return act


def visit(path, status=None):
    def act(page, base, watch):
        if status:
            watch.allowed.add(status)
        page.goto(base + path)
        page.wait_for_load_state()
        if status:
            watch.allowed.discard(status)
    return act


def admin_states(ids, events):
    dead, delivered = events
    states = [
        ("home", visit("/dashboard")),
        ("account", visit("/dashboard/account")),
        ("two-step", visit("/dashboard/account/two-step")),
        ("listings", visit("/dashboard/listings")),
        ("listings-empty-search", visit("/dashboard/listings?q=nothing-matches-this")),
        ("orders", visit("/dashboard/orders")),
        ("listing", visit(ids["listing"])),
        ("edit-listing", visit(ids["listing"] + "/edit")),
        ("remove-photo-confirm", visit(ids["listing"] + "/photos/2/remove")),
        ("new-listing", visit("/dashboard/listings/new")),
        ("new-listing-errors", fill_and_submit("/dashboard/listings/new", [("Title", ""), ("Price (GBP)", "12.345")],
                                               "Create listing")),
        ("bulk-import", visit("/dashboard/bulk-import")),
        ("bulk-review", visit(ids["draft"])),
        ("settings", visit("/dashboard/settings")),
        ("settings-errors", fill_and_submit("/dashboard/settings", [("Credit boost (%)", "250")], "Save")),
        ("integrations", visit("/dashboard/integrations")),
        ("integrations-webhook-error", fill_and_submit("/dashboard/integrations", [("Endpoint URL", "https://")],
                                                       "Save")),
        ("new-key", visit("/dashboard/integrations/keys/new")),
        ("revoke-confirm", visit(ids["key"])),
        ("roll-key", visit(ids["roll"])),
        ("rotate-confirm", visit("/dashboard/integrations/webhook/rotate")),
        ("deliveries", visit("/dashboard/deliveries")),
        ("deliveries-dead", visit("/dashboard/deliveries?status=dead")),
        ("delivery-dead", visit(f"/dashboard/deliveries/{dead}")),
        ("delivery", visit(f"/dashboard/deliveries/{delivered}")),
        ("replay-confirm", visit("/dashboard/deliveries/replay-dead")),
        ("redemptions", visit("/dashboard/redemptions")),
        ("redemptions-error", fill_and_submit("/dashboard/redemptions", [("Credit code", "RH-0000-0000-0000-0000")],
                                              "Check code")),
        ("collections", visit("/dashboard/collections")),
        ("team", visit("/dashboard/team")),
        ("invite", visit("/dashboard/team/invite")),
        ("invite-errors", fill_and_submit("/dashboard/team/invite", [("Email", "not an email")], "Send invite")),
        ("remove-member-confirm", visit(ids["mo"])),
        ("cancel-invitation-confirm", visit(ids["sam"])),
        ("wallet", visit("/dashboard/wallet")),
        ("audit-log", visit("/dashboard/audit-log")),
        ("audit-log-filtered", visit("/dashboard/audit-log?topic=sign-in")),
        ("wallet-filtered", visit("/dashboard/wallet?kind=sale")),
        ("redemptions-filtered", visit("/dashboard/redemptions?state=not-spent")),
        ("search", visit("/dashboard/search?q=sofa")),
        ("search-nothing", visit("/dashboard/search?q=nothing-matches-this")),
        ("collections-scheduled", visit("/dashboard/collections?status=scheduled")),
        ("not-found", visit("/dashboard/listings/99999", 404)),
    ]
    if ids.get("warehouse"):
        states.append(("delete-warehouse-confirm", visit(ids["warehouse"])))
    return states


def member_states(ids):
    return [
        ("member-home", visit("/dashboard")),
        ("member-listings", visit("/dashboard/listings")),
        ("member-orders", visit("/dashboard/orders")),
        ("member-listing", visit(ids["listing"])),
        ("member-bulk-import", visit("/dashboard/bulk-import")),
        ("member-settings", visit("/dashboard/settings")),
        ("member-deliveries", visit("/dashboard/deliveries")),
        ("member-redemptions", visit("/dashboard/redemptions")),
        ("member-collections", visit("/dashboard/collections")),
        ("member-wallet", visit("/dashboard/wallet")),
        ("member-account", visit("/dashboard/account")),
        ("member-search", visit("/dashboard/search?q=sofa")),
        ("forbidden", visit("/dashboard/team", 403)),
    ]


def signed_out_states(ids):
    def failed_sign_in(page, base, watch):
        page.goto(base + "/dashboard/login")
        page.get_by_label("Email").fill(ADMIN)
        page.get_by_label("Password").fill("not the password")
        watch.allowed.add(401)
        watch.allowed.add(422)
        click(page, page.get_by_role("button", name="Sign in"))
        watch.allowed.clear()

    def invitation_mismatch(page, base, watch):
        page.goto(ids["invitation"])
        page.get_by_label("Password", exact=True).fill("short")
        page.get_by_label("Confirm password").fill("other")
        watch.allowed.add(422)
        click(page, page.get_by_role("button", name="Set password"))
        watch.allowed.clear()

    return [
        ("sign-in", visit("/dashboard/login")),
        ("sign-in-failed", failed_sign_in),
        ("invitation", lambda page, base, watch: page.goto(ids["invitation"])),
        ("invitation-errors", invitation_mismatch),
        ("invitation-used", visit("/dashboard/invite/rhi_not-a-real-invitation-token", 410)),
    ]


def check_states(context, base, origin, who, states, shots, axe, need):
    """Each state at each width: no sideways scroll, axe clean, no bare codes."""
    page = context.new_page()
    watch = Watch(page, origin)
    if who:
        sign_in(page, base, who)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for name, act in states:
            act(page, base, watch)
            where = f"{name} at {width} px ({urlsplit(page.url).path})"
            over = sideways(page)
            need(over <= 0, f"{where} scrolls sideways by {over} px")
            for violation in axe_violations(page, axe):
                need(False, f"{where}: axe: {violation}")
            codes = codes_on_page(page)
            need(not codes, f"{where} shows codes instead of sentences: {codes}")
            if width < 640:
                # Phones: no table scrolls inside its box, and the menu opens on the links with
                # this page's marked (when the page has the navigation).
                boxed = page.evaluate("""[...document.querySelectorAll('main .table-scroll, main table')]
                    .filter(e => e.scrollWidth > e.clientWidth + 1)
                    .map(e => (e.getAttribute('aria-label') || e.tagName) + ' ' + e.scrollWidth + '>' + e.clientWidth)""")
                need(not boxed, f"{where}: a table scrolls inside its box: {boxed}")
                menu = page.locator("button.menu-toggle")
                if menu.count() and menu.is_visible():
                    menu.click()
                    need(menu.get_attribute("aria-expanded") == "true", f"{where}: the menu does not say it is open")
                    links = page.locator("#dashboard-nav a")
                    need(links.count() > 0 and links.first.is_visible(), f"{where}: the menu shows no links")
                    marked = page.locator("#dashboard-nav a[aria-current='page']")
                    if marked.count():
                        need(marked.first.is_visible() and marked.first.inner_text() in menu.inner_text(),
                             f"{where}: the menu's button does not name the page it marks")
                    menu.click()
            if shots:
                page.screenshot(path=os.path.join(shots, f"{name}-{width}.png"), full_page=True)
    page.close()
    return watch.problems


def main():
    args, chromium, binary = browser_args()
    os.environ["REHOME_OPS_TOKEN"] = OPS
    os.environ["REHOME_ALLOW_PRIVATE_NETWORK"] = "true"
    os.environ["REHOME_WEBHOOK_ALLOW_HTTP"] = "true"
    os.environ["REHOME_WEBHOOK_RETRY_BASE_MS"] = "20"
    os.environ["REHOME_WEBHOOK_RETRY_WINDOW_S"] = "1"
    os.environ["REHOME_WEBHOOK_POLL_MS"] = "20"
    axe = axe_source()
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
            events = seed_deliveries(base, key, hook)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                # The CSP is bypassed only so that axe-core can be injected: this context only.
                admin = browser.new_context(bypass_csp=True)
                seeding = admin.new_page()
                seeding_watch = Watch(seeding, origin)
                ids = seed_in_pages(seeding, base, workdir, seeding_watch)
                seeding.close()
                problems += seeding_watch.problems
                # Signed in while seeding.
                problems += check_states(admin, base, origin, None, admin_states(ids, events), args.screenshots,
                                         axe, need)
                member = browser.new_context(bypass_csp=True)
                problems += check_states(member, base, origin, MEMBER, member_states(ids), args.screenshots, axe,
                                         need)
                nobody = browser.new_context(bypass_csp=True)
                problems += check_states(nobody, base, origin, None, signed_out_states(ids), args.screenshots, axe,
                                         need)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
            receiver.shutdown()
    if problems:
        for problem in problems:
            print("FAIL:", problem)
        sys.exit(1)
    print("every page: no sideways scroll, no axe-core violation, no bare code, at 1280 and 390 px")


if __name__ == "__main__":
    main()
