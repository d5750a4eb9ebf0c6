#!/usr/bin/env python3
"""Words on the dashboard in a real headless Chromium (issue 31 item 1):

- The brand's time zone: an admin sets it on Settings; every page then writes instants in
  it with the zone's abbreviation; an unknown zone is refused with a sentence beside the
  field and the page opens on the error summary.
- Error summaries: a refused listing form opens focused on "There is a problem", each
  reason a link that takes the reader to its field.
- No wire names: on every signed-in page, no visible word is a bare `snake_case` or
  `dotted.event` token. Excluded, where a wire name is the point: `<code>` and `<pre>`
  (event ids, an event's type beside its words, the payload box, audit targets, keys),
  form values, and words holding `@` or `/` (emails, URLs, tz names like America/New_York).
- Screenshots of Settings, Wallet, Deliveries, an event's page and the listing form with
  errors at 1280 and 390 px when asked (docs/dashboard/<page>-<width>.png).

Usage: python3 tests/browser/words.py [--binary target/debug/rehome] [--screenshots DIR]
"""

import datetime
import json
import os
import re
import sys
import tempfile
import urllib.error
import urllib.request

from harness import ADMIN, PASSWORD, browser_args, cli, shoot_pages, start_server
from playwright.sync_api import sync_playwright

OPS = "ops-token-for-the-words-test-000001"
SNAKE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)+$")
DOTTED = re.compile(r"^[a-z]+(?:\.[a-z_]+)+$")
# Abbreviations a sentence may hold.
ALLOWED = {"e.g", "i.e"}


def call(base, method, path, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path} answered {e.code}: {e.read().decode(errors='replace')}")


def seed(base, key):
    """A sale delivered 3 days ago and its statement, an order to collect, a trade-in paid in
    credit, a test event (no endpoint: it waits), and a key: something on every page."""
    def listing(**fields):
        body = {"title": "Oak frame sofa", "price_gbp": 450, "condition": "excellent", "category": "3-Seater Sofas",
                "faults": ["None"], "channel": "clearance", "quantity": 3}
        body.update(fields)
        return call(base, "POST", "/v1/listings", key, body)["id"]

    call(base, "POST", "/v1/partner/settings/warehouses", key, {"label": "Leeds DC", "city": "Leeds"})
    sold = listing(title="Grey velvet sofa")
    order = call(base, "POST", "/ops/v1/orders", OPS, {"listing_id": sold})["id"]
    delivered = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=3)).isoformat()
    call(base, "POST", f"/ops/v1/orders/{order}/complete", OPS, {"completed_at": delivered})
    call(base, "POST", "/ops/v1/remittances/run", OPS, {})
    start = (datetime.date.today() + datetime.timedelta(days=3)).isoformat()
    call(base, "POST", "/ops/v1/orders", OPS, {"listing_id": sold, "buyer_window_start": start})
    exchange = listing(title="Trade-in armchair", channel="exchange", quantity=1, category="Armchairs")
    traded = call(base, "POST", "/ops/v1/orders", OPS, {"listing_id": exchange})["id"]
    call(base, "POST", f"/ops/v1/orders/{traded}/complete", OPS, {})
    call(base, "POST", f"/ops/v1/orders/{traded}/payout-choice", OPS,
         {"customer_id": "cus_1", "customer_choice": "credit", "credit_destination": "code"})
    call(base, "PATCH", "/v1/partner/settings/integrations/webhook", key,
         {"url": "https://hooks.example.com/rehome", "enabled": True})
    event = call(base, "POST", "/v1/partner/settings/integrations/webhook/test", key, {})["event_id"]
    return sold, event


def sign_in(page, base):
    page.goto(base + "/dashboard/login")
    page.get_by_label("Email").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()


# The visible text of the page's main, without code, preformatted text and form values.
VISIBLE_WORDS = """() => {
  const main = document.querySelector('main') || document.body;
  const copy = main.cloneNode(true);
  copy.querySelectorAll('code, pre, script, style, template, [hidden]').forEach(e => e.remove());
  return copy.innerText;
}"""


def wire_names(page):
    words = page.evaluate(VISIBLE_WORDS).split()
    found = []
    for word in words:
        if "@" in word or "/" in word:
            continue
        token = word.strip(".,;:!?()[]{}\"'\u201c\u201d\u2018\u2019")
        if token in ALLOWED:
            continue
        if SNAKE.match(token) or DOTTED.match(token):
            found.append(token)
    return found


def check(browser, base, sold, event, shots):
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    # A refused form answers 422, which Chromium logs as a failed load: not a problem.
    page.on("console", lambda m: problems.append(f"console error: {m.text}")
            if m.type == "error" and "status of 422" not in m.text else None)
    sign_in(page, base)

    # London by default: the team's sign-ins say GMT or BST.
    page.goto(base + "/dashboard/team")
    text = page.inner_text("main")
    need(" GMT" in text or " BST" in text, "the team page is not in London time")

    # An unknown zone: refused beside the field, the page opens on the summary.
    page.goto(base + "/dashboard/settings")
    page.locator("#time_zone").fill("Mars/Olympus")
    page.get_by_role("button", name="Update time zone").click()
    page.wait_for_load_state()
    need(page.evaluate("document.activeElement && document.activeElement.classList.contains('error-summary')"),
         "the refused settings page does not open on its error summary")
    need(page.get_by_role("heading", name="There is a problem").count() == 1, "no error summary on Settings")
    need(page.locator("#time-zone-error").count() == 1, "no sentence beside the time zone field")
    page.locator(".error-summary a").first.click()
    need(page.url.endswith("#time_zone"), f"the summary's link led to {page.url}")
    need(page.evaluate("document.activeElement && document.activeElement.id") == "time_zone",
         "the summary's link does not take the reader to the field")
    if shots:
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(base + "/dashboard/settings")
            page.locator("#time_zone").fill("Mars/Olympus")
            page.get_by_role("button", name="Update time zone").click()
            page.wait_for_load_state()
            page.screenshot(path=os.path.join(shots, f"settings-errors-{width}.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})

    # Tokyo: saved, and the pages follow.
    page.goto(base + "/dashboard/settings")
    page.locator("#time_zone").fill("Asia/Tokyo")
    page.get_by_role("button", name="Update time zone").click()
    page.wait_for_load_state()
    need(page.get_by_text("Time zone saved.").count() == 1, "no notice after saving the time zone")
    for path in ("/dashboard/team", "/dashboard/wallet", "/dashboard/deliveries", f"/dashboard/deliveries/{event}",
                 "/dashboard/redemptions", "/dashboard/audit-log"):
        page.goto(base + path)
        text = page.inner_text("main")
        need(" JST" in text, f"{path} does not write its instants in Tokyo time")
        need(" GMT" not in text and " BST" not in text and " UTC" not in text, f"{path} still says another zone")
    page.goto(base + "/dashboard/wallet")
    need(re.search(r"Next statement: \d{1,2} [A-Z][a-z]{2} \d{4}\.", page.inner_text("main")) is not None,
         "the next statement's day is not in words")

    # A refused listing: the summary first, each link to its field.
    page.goto(base + "/dashboard/listings/new")
    page.get_by_label("Price (GBP)", exact=True).fill("19.999")
    page.get_by_role("button", name=re.compile("^(Create|Save)")).first.click()
    page.wait_for_load_state()
    need(page.evaluate("document.activeElement && document.activeElement.classList.contains('error-summary')"),
         "the refused listing form does not open on its error summary")
    links = page.locator(".error-summary a")
    need(links.count() >= 2, f"the summary lists {links.count()} reasons")
    for i in range(links.count()):
        target = links.nth(i).get_attribute("href")
        need(page.locator(target).count() == 1, f"the summary links to {target}, not on the page")
    price = page.locator(".error-summary a[href='#price_gbp']")
    need(price.count() == 1, "the price's reason is not in the summary")
    if price.count() == 1:
        price.click()
        need(page.evaluate("document.activeElement && document.activeElement.id") == "price_gbp",
             "the price's link does not take the reader to the field")
    need("price_gbp-error" in (page.locator("#price_gbp").get_attribute("aria-describedby") or "").split(),
         "the price field is not described by its sentence")
    if shots:
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(base + "/dashboard/listings/new")
            page.get_by_label("Price (GBP)", exact=True).fill("19.999")
            page.get_by_role("button", name=re.compile("^(Create|Save)")).first.click()
            page.wait_for_load_state()
            wide, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
            need(wide <= inner, f"the refused listing form scrolls sideways at {width} px ({wide} > {inner})")
            page.screenshot(path=os.path.join(shots, f"new-listing-errors-{width}.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})

    # Refused forms name each field by its label and say the rule in words (decisions
    # 15.4): the brand profile with a name too long, a bad email and an http logo, the
    # webhook with an http URL; no backtick, wire name or "API reference" anywhere on them.
    page.goto(base + "/dashboard/settings")
    page.locator("#brand-display_name").fill("A" * 81)
    page.locator("#brand-support_email").fill("not an email")
    page.locator("#brand-logo_url").fill("http://example.com/logo.png")
    page.locator("#brand-accent_color").fill("green")
    page.locator("form[action='/dashboard/settings/brand'] button[type=submit]").click()
    page.wait_for_load_state()
    said = page.inner_text("main")
    for sentence in ("Display name can be at most 80 characters.",
                     "Support email must be an email address at a public domain",
                     "Logo URL must be a web address starting with https://",
                     "Accent colour must be # and six hex digits"):
        need(sentence in said, f"the refused brand profile does not say: {sentence}")
    # Payout options that leave customers no way to be paid, and a country that is none.
    page.goto(base + "/dashboard/settings")
    page.locator("#credit_enabled").uncheck()
    page.locator("#cash_enabled").uncheck()
    page.locator("form[action='/dashboard/settings/payouts'] button[type=submit]").click()
    page.wait_for_load_state()
    need("Offer customers at least one way to be paid" in page.inner_text("main"),
         "payout options with no choice are not refused in words")
    page.goto(base + "/dashboard/settings")
    page.locator("#billing-country").fill("Narnia")
    page.locator("form[action='/dashboard/settings/billing'] button[type=submit]").click()
    page.wait_for_load_state()
    need("Country must be a country's name or its two-letter code" in page.inner_text("main"),
         "a country that is none is not refused in words")
    page.goto(base + "/dashboard/integrations")
    page.get_by_label("Endpoint URL").fill("http://hooks.example.com/rehome")
    page.locator("form[action='/dashboard/integrations/webhook'] button[type=submit]").click()
    page.wait_for_load_state()
    need("Endpoint URL must be a web address starting with https://" in page.inner_text("main"),
         "a refused webhook URL does not say it must start with https://")
    page.goto(base + "/dashboard/listings/new")
    page.get_by_label("Price (GBP)", exact=True).fill("19.999")
    page.get_by_label("Quantity").fill("2")
    page.get_by_label("Channel").select_option("exchange")
    page.get_by_role("button", name=re.compile("^(Create|Save)")).first.click()
    page.wait_for_load_state()
    said = page.inner_text("main")
    need("must be 1 for an exchange listing" in said, "an exchange listing's quantity is not explained")
    for wrong in ("`", "API reference", "maxLength", "_invalid", "_required"):
        need(wrong not in said, f"a refused form shows {wrong!r}")

    # No wire names on any signed-in page.
    pages = ["/dashboard", "/dashboard/listings", f"/dashboard/listings/{sold}", "/dashboard/listings/new",
             "/dashboard/bulk-import", "/dashboard/settings", "/dashboard/integrations", "/dashboard/deliveries",
             f"/dashboard/deliveries/{event}", "/dashboard/redemptions", "/dashboard/collections", "/dashboard/team",
             "/dashboard/wallet", "/dashboard/audit-log", "/dashboard/account"]
    for path in pages:
        page.goto(base + path)
        page.wait_for_load_state()
        found = wire_names(page)
        need(not found, f"{path} shows wire names: {sorted(set(found))}")

    # Screenshots of the pages in words, at both widths.
    named = [("settings", "/dashboard/settings"), ("wallet", "/dashboard/wallet"),
             ("deliveries", "/dashboard/deliveries"), ("delivery", f"/dashboard/deliveries/{event}")]
    shoot_pages(page, base, named, shots, need)
    context.close()
    return problems


def main():
    args, chromium, binary = browser_args()
    os.environ["REHOME_OPS_TOKEN"] = OPS
    with tempfile.TemporaryDirectory() as workdir:
        cli(binary, workdir, "brands", "create", "acme", "--name", "Acme Sofas")
        admin = cli(binary, workdir, "users", "create", "--brand", "acme", "--name", "Ada Admin", "--email", ADMIN)
        cli(binary, workdir, "users", "set-password", admin, stdin=PASSWORD + "\n")
        key = cli(binary, workdir, "keys", "create", "--user", admin, "--rate-limit", "10000")
        server, base = start_server(binary, workdir)
        try:
            sold, event = seed(base, key)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                problems = check(browser, base, sold, event, args.screenshots)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    if problems:
        for problem in problems:
            print("FAIL:", problem)
        sys.exit(1)
    print("words: the brand's time zone, error summaries and no wire names on any page passed in Chromium")


if __name__ == "__main__":
    main()
