#!/usr/bin/env python3
"""Paying by card through Stripe Checkout (decisions 14.4) as a buyer does it, in a real
headless Chromium, with JavaScript on and off, at 1280 px and at 390 px wide. The server runs
`serve --demo` with REHOME_PAYMENTS=stripe against the Stripe stand-in of tests/stripe/mock.py
(every request it gets held to Stripe's published description); webhooks are signed by
Stripe's own Node library (tests/stripe/sign.mjs). Nothing reaches Stripe: the browser's
navigations to https://checkout.stripe.com are answered by a small stand-in page
(`page.route`), so a walk that lands there proves the browser was allowed to follow the
checkout's 303 (a `form-action` the CSP did not widen would block it and log an error).
Each of the four walks has a fresh demo of its own, so its pieces are in stock:

    the listing with the most units  →  "Pay £X each by card" for two  →  303 to the
    Stripe session's page (the stand-in, at checkout.stripe.com/c/pay/<session id>)  →  the
    session's success_url (= cancel_url), the buyer's page: "Your piece is held for you" (pieces, for several),
    "Awaiting payment", a link "Pay £X by card" back to the session (followed: it lands on the
    stand-in again), item, quantity, price, brand, delivery window  →  a signed
    `checkout.session.completed` (status complete, payment_status paid) POSTed to
    /payments/stripe/webhook  →  reloaded: "Order #N", "Paid", "You have paid £X by card"

then a piece of one unit: "Pay £X by card"  →  the stand-in  →  its page awaiting payment  →
a signed `checkout.session.expired`  →  reloaded: "Payment not completed", "Not ordered",
"nothing was charged", no link to pay; the piece is on sale again.

On every storefront page (listing, awaiting payment, placed, not completed): axe-core finds
no violation (through the DevTools protocol, the page's CSP kept), nothing scrolls sideways,
every request goes to the server's own origin but the intercepted navigations to Stripe's
session pages, no console error, no broken image, no snake_case code shown as text (an error
that is only a code, or a wire name such as `payment_status` or a `cs_test_…` id anywhere in
the page). The listing's CSP says `form-action 'self' https://checkout.stripe.com`; the
buyer's pages are `private, no-store`, noindex and no-referrer. The Stripe stand-in must have
seen no request Stripe would refuse.

Full-page screenshots go to --screenshots DIR (`<page>-<width>.png`, `<page>-nojs-<width>.png`
without JavaScript); --docs writes listing-card, payment-held, payment-paid and payment-lapsed
at both widths (JavaScript on) to docs/marketplace/.

Usage: python3 tests/browser/payment.py [--binary target/debug/rehome] [--screenshots DIR] [--docs]
Needs Node and `npm ci` in tests/browser (axe-core, and the `stripe` package to sign events).
"""

import argparse
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from harness import ROOT, axe_source, start_server
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright
from storefront import WIDTHS, Visit, get, look_at, sitemap_ids, wait_for_thumbnails

sys.path.insert(0, os.path.join(ROOT, "tests", "stripe"))
from mock import CHECKOUT_URL, StripeMock, node_ready, sign_headers  # noqa: E402

DOCS = os.path.join(ROOT, "docs", "marketplace")
DOC_PAGES = ("listing-card", "payment-held", "payment-paid", "payment-lapsed")
STRIPE_PAGES = "https://checkout.stripe.com/**"
STAND_IN = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Stripe stand-in</title></head>"
            "<body><main><h1>Stripe stand-in</h1><p>Session {sid}</p></main></body></html>")
SESSION_URL = re.compile(re.escape(CHECKOUT_URL) + r"(cs_test_[A-Za-z0-9]+)$")
FORM_ACTION = "form-action 'self' https://checkout.stripe.com"
BUYER = {"Your name": "Sam Buyer", "Email": "sam.buyer@example.co.uk", "Phone (optional)": "07700 900123"}
TYPED_POSTCODE, POSTCODE = "sw1a1aa", "SW1A 1AA"
ORDER_PATH = re.compile(r"^/marketplace/orders/[A-Za-z0-9_-]{16,}$")
HOLD_NOTE = "You pay on Stripe’s secure page; what you order is held for you for 30 minutes while you do."
WINDOW = re.compile(r"\d{1,2} [A-Z][a-z]{2}( \d{4})? to \d{1,2} [A-Z][a-z]{2} \d{4}")
# A wire name shown as text: snake_case (`payment_status`, `checkout_session`), or a Stripe id.
WIRE = re.compile(r"\b(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|(?:cs|pi|evt|whsec|sk)_(?:test|live)?_?[A-Za-z0-9]{6,})\b")


def pounds(pence):
    return f"£{pence // 100:,}.{pence % 100:02d}"


def pence_of(text):
    return round(float(re.sub(r"[^0-9.]", "", text)) * 100)


def on_sale(base):
    """(listing id, units on sale) of each listing in the sitemap, most units first."""
    found = []
    for i in sitemap_ids(base):
        stock = re.search(r'class="stock">(One|\d+) available<', get(f"{base}/marketplace/listings/{i}")[2])
        if stock:
            found.append((i, 1 if stock.group(1) == "One" else int(stock.group(1))))
    return sorted(found, key=lambda f: -f[1])


def stock_of(base, listing_id):
    stock = re.search(r'class="stock">(One|\d+) available<', get(f"{base}/marketplace/listings/{listing_id}")[2])
    return 0 if not stock else 1 if stock.group(1) == "One" else int(stock.group(1))


def post_event(base, payload, header):
    """(status, text) of a webhook delivery, as Stripe sends one."""
    request = urllib.request.Request(base + "/payments/stripe/webhook", data=payload.encode(), method="POST", headers={
        "Content-Type": "application/json; charset=utf-8",
        "User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
        "Stripe-Signature": header})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


class StandIn:
    """Answers the browser's navigations to Stripe's pages with the stand-in page; anything
    else sent there (a subresource, a fetch) is refused and recorded as a problem."""

    def __init__(self):
        self.navigations = []  # the URL of each page asked for
        self.problems = []

    def handle(self, route, request):
        if request.is_navigation_request() and request.resource_type == "document" and request.method == "GET":
            self.navigations.append(request.url)
            found = SESSION_URL.match(request.url)
            route.fulfill(status=200, content_type="text/html; charset=utf-8",
                          body=STAND_IN.format(sid=found.group(1) if found else "?"))
        else:
            self.problems.append(f"a {request.resource_type} {request.method} request to Stripe: {request.url}")
            route.abort()

    def urls(self):
        return set(self.navigations)


class Walk:
    """The two purchases at one width, with JavaScript on or off."""

    def __init__(self, page, visit, stand_in, base, mock, webhook_secret, width, js, axe, shots, need):
        self.page, self.visit, self.stand_in, self.base, self.mock = page, visit, stand_in, base, mock
        self.secret, self.width, self.js, self.axe, self.shots, self.need = webhook_secret, width, js, axe, shots, need

    def where(self, name):
        return f"{name} at {self.width} px, JavaScript {'on' if self.js else 'off'} ({urlsplit(self.page.url).path})"

    def look(self, name, private=False):
        """The checks every storefront page gets, and its screenshot."""
        def no_wire(page):
            wire = sorted(set(WIRE.findall(page.locator("body").inner_text())))
            self.need(not wire, f"{self.where(name)} shows wire names or ids as text: {wire}")

        look_at(self.page, self.visit.document, self.where(name), self.need, axe=self.axe, js=self.js,
                shots=self.shots, name=name, width=self.width, private=private, extra=no_wire)

    def heading(self):
        h1 = self.page.get_by_role("heading", level=1)
        return h1.first.inner_text().strip() if h1.count() else None

    def facts(self):
        terms = self.page.locator(".order dt").all_inner_texts()
        return terms, dict(zip(terms, self.page.locator(".order dd").all_inner_texts()))

    def status(self):
        found = self.page.locator(".order .status")
        return found.inner_text().strip() if found.count() == 1 else None

    # -- buying --
    def buy(self, listing_id, units, quantity, name):
        """The listing's page, the form filled and sent: lands on the stand-in. Returns what
        was bought (title, each, total, brand, listing path, session id, order page URL) or None."""
        page, need, base = self.page, self.need, self.base
        page.goto(f"{base}/marketplace/listings/{listing_id}")
        page.wait_for_load_state()
        where = self.where(name)
        listing_path = urlsplit(page.url).path
        title = self.heading()
        price = page.locator(".buy .price").evaluate("e => e.firstChild.textContent.trim()")
        brand = page.locator(".buy .by a").inner_text().strip()
        each = pence_of(price)
        csp = self.visit.document.headers.get("content-security-policy", "") if self.visit.document else ""
        need(FORM_ACTION in csp, f"{where}: the CSP does not say {FORM_ACTION!r}: {csp!r}")
        form = page.get_by_role("form", name="Buy this piece")
        if form.count() != 1:
            need(False, f"{where}: no form named 'Buy this piece'")
            return None
        label = f"Pay {price} each by card" if units > 1 else f"Pay {price} by card"
        button = form.get_by_role("button", name=label, exact=True)
        need(button.count() == 1,
             f"{where}: no button {label!r} (buttons: {form.get_by_role('button').all_inner_texts()})")
        need(form.get_by_role("button", name=re.compile(r"^Order for ")).count() == 0,
             f"{where}: still offers to order without paying")
        note = form.locator("p.small").inner_text() if form.locator("p.small").count() == 1 else ""
        need(note.startswith(HOLD_NOTE), f"{where}: the note under the button is {note!r}")
        how_many = form.get_by_label(f"How many (up to {units})", exact=True)
        need(how_many.count() == (1 if units > 1 else 0),
             f"{where}: {how_many.count()} fields 'How many (up to {units})'")
        self.look(name)
        if button.count() != 1:
            return None

        for field, value in BUYER.items():
            form.get_by_label(field, exact=True).fill(value)
        form.get_by_label("Delivery postcode (UK)", exact=True).fill(TYPED_POSTCODE)
        if units > 1:
            how_many.fill(str(quantity))
        made = len(self.mock.created())
        arrived, errors = len(self.stand_in.navigations), len(self.visit.errors)
        try:
            with page.expect_response(lambda r: r.request.method == "POST"
                                      and urlsplit(r.url).path == listing_path + "/checkout") as answer:
                button.click()
            page.wait_for_url(SESSION_URL, timeout=15000)
        except PlaywrightTimeout:
            need(False, f"{where}: sending the form did not reach Stripe's page: the browser is at {page.url} "
                        f"({self.heading()!r}); console: {self.visit.errors[errors:]}")
            return None
        page.wait_for_load_state()
        sid = SESSION_URL.match(page.url).group(1)
        need(self.heading() == "Stripe stand-in", f"{where}: the page at {page.url} is not the stand-in")
        # The checkout answered 303 to the session's page, and the browser followed it there.
        sent = answer.value
        need(sent.status == 303 and sent.headers.get("location") == page.url,
             f"{where}: the checkout answered {sent.status} to {sent.headers.get('location')!r}, not 303 to {page.url}")
        navigations = self.stand_in.navigations[arrived:]
        need(navigations == [page.url], f"{where}: the browser asked Stripe for {navigations}, not {page.url} once")
        created = self.mock.created()[made:]
        if len(created) != 1 or created[0]["response"]["id"] != sid:
            need(False, f"{where}: the Stripe stand-in made {len(created)} sessions, "
                        f"not the one the browser was sent to ({sid})")
            return None
        params = created[0]["params"]
        success, cancel = params.get("success_url") or "", params.get("cancel_url") or ""
        need(success == cancel, f"{where}: success_url {success!r} and cancel_url {cancel!r} differ")
        own = urlsplit(base)
        url = urlsplit(success)
        need((url.scheme, url.netloc) == (own.scheme, own.netloc) and ORDER_PATH.match(url.path) is not None,
             f"{where}: success_url {success!r} is not an order page of {base}")
        return {"title": title, "each": each, "total": each * quantity, "quantity": quantity, "brand": brand,
                "listing": listing_path, "listing_id": listing_id, "sid": sid, "order": success}

    def held(self, bought, name):
        """The buyer's page before paying: held, awaiting payment, a link back to the session."""
        page, need = self.page, self.need
        page.goto(bought["order"])
        page.wait_for_load_state()
        where = self.where(name)
        heading = self.heading()
        held = "Your pieces are held for you" if bought.get("quantity", 1) > 1 else "Your piece is held for you"
        need(heading == held, f"{where}: the heading is {heading!r}, not {held!r}")
        need(self.status() == "Awaiting payment", f"{where}: the status is {self.status()!r}")
        said = page.locator(".order").inner_text()
        need("(UK time)" in said, f"{where}: does not say until when the piece is held")
        total = pounds(bought["total"])
        pay = page.get_by_role("link", name=f"Pay {total} by card", exact=True)
        need(pay.count() == 1 and pay.get_attribute("href") == CHECKOUT_URL + bought["sid"],
             f"{where}: no link 'Pay {total} by card' to the session "
             f"({[a.get_attribute('href') for a in page.locator('a.pay').all()]})")
        self.bought_facts(where, bought, ["Item", "Quantity", "Price", "Sold by", "Delivery window"])
        self.look(name, private=True)
        if pay.count() == 1:
            pay.click()
            try:
                page.wait_for_url(CHECKOUT_URL + bought["sid"], timeout=15000)
                page.wait_for_load_state()
            except PlaywrightTimeout:
                need(False, f"{where}: the link to pay did not lead to Stripe's page (at {page.url})")

    def bought_facts(self, where, bought, wanted):
        need = self.need
        terms, values = self.facts()
        need(terms == wanted, f"{where}: the page says {terms}, not {wanted}")
        need(values.get("Item") == bought["title"], f"{where}: the item is {values.get('Item')!r}")
        item = self.page.locator(".order dd a")
        need(item.count() == 1 and item.get_attribute("href") == bought["listing"],
             f"{where}: the item does not link back to {bought['listing']}")
        need(values.get("Quantity") == str(bought["quantity"]), f"{where}: the quantity is {values.get('Quantity')!r}")
        price = pounds(bought["total"]) + (f" ({pounds(bought['each'])} each)" if bought["quantity"] > 1 else "")
        need(values.get("Price") == price, f"{where}: the price is {values.get('Price')!r}, not {price!r}")
        need(values.get("Sold by") == bought["brand"], f"{where}: sold by {values.get('Sold by')!r}, "
                                                       f"not {bought['brand']!r}")
        need(WINDOW.fullmatch(values.get("Delivery window", "")) is not None,
             f"{where}: the delivery window is {values.get('Delivery window')!r}")

    def deliver(self, kind, session, what):
        """A signed event about `session`, sent as Stripe sends it: 200 expected."""
        payload = json.dumps(self.mock.event(kind, session), indent=2)
        header = sign_headers([{"payload": payload, "secret": self.secret, "timestamp": int(time.time())}])[0]
        status, body = post_event(self.base, payload, header)
        self.need(status == 200, f"{what}: the webhook answered {status} to {kind}, not 200 ({body[:300]})")

    def paid(self, bought, name):
        """Reloaded after checkout.session.completed: the order, placed and paid."""
        page, need = self.page, self.need
        page.goto(bought["order"])
        page.wait_for_load_state()
        where = self.where(name)
        heading = self.heading() or ""
        need(re.fullmatch(r"Order #\d+", heading) is not None, f"{where}: the heading is {heading!r}, not 'Order #N'")
        need(self.status() == "Paid", f"{where}: the status is {self.status()!r}, not 'Paid'")
        said = page.locator(".order").inner_text()
        total = pounds(bought["total"])
        need(f"You have paid {total} by card" in said, f"{where}: does not say 'You have paid {total} by card'")
        need("You pay nothing on this site" not in said, f"{where}: still says the buyer pays nothing here")
        need(page.locator("a.pay").count() == 0, f"{where}: still offers to pay")
        self.bought_facts(where, bought, ["Item", "Quantity", "Price", "Sold by", "Delivery window",
                                          "Leaves the warehouse", "Deliver to", "Ordered"])
        _, values = self.facts()
        need(values.get("Deliver to") == f"{BUYER['Your name']}, {POSTCODE}",
             f"{where}: deliver to {values.get('Deliver to')!r}")
        self.look(name, private=True)

    def lapsed(self, bought, name):
        """Reloaded after checkout.session.expired: not ordered, nothing charged, no link to pay."""
        page, need = self.page, self.need
        page.goto(bought["order"])
        page.wait_for_load_state()
        where = self.where(name)
        need(self.heading() == "Payment not completed", f"{where}: the heading is {self.heading()!r}")
        need(self.status() == "Not ordered", f"{where}: the status is {self.status()!r}")
        said = page.locator(".order").inner_text()
        need("nothing was charged" in said, f"{where}: does not say nothing was charged")
        need("appears here as soon as" not in said, f"{where}: still promises the order will appear")
        need(page.get_by_role("link", name="See this piece").count() == 1, f"{where}: no way back to the piece")
        need(page.locator("a.pay").count() == 0 and page.get_by_role("link", name=re.compile(r"^Pay ")).count() == 0,
             f"{where}: still offers to pay")
        self.bought_facts(where, bought, ["Item", "Quantity", "Price", "Sold by", "Delivery window"])
        self.look(name, private=True)

    def run(self, first, second):
        """`first` (id, units) bought two at a time and paid; `second` (id, units) bought once and lapsed."""
        need = self.need
        units = first[1]
        bought = self.buy(first[0], units, 2 if units > 2 else 1, "listing-card")
        if bought:
            self.held(bought, "payment-held")
            paid = self.mock.complete(bought["sid"])
            need(paid is not None and paid["status"] == "complete" and paid["payment_status"] == "paid",
                 f"the stand-in did not complete session {bought['sid']}")
            self.deliver("checkout.session.completed", paid, self.where("payment-paid"))
            self.paid(bought, "payment-paid")
        before = stock_of(self.base, second[0])
        other = self.buy(second[0], second[1], 1, "listing-card-second")
        if other:
            self.held(other, "payment-held-second")
            expired = self.mock.expire(other["sid"])
            self.deliver("checkout.session.expired", expired, self.where("payment-lapsed"))
            self.lapsed(other, "payment-lapsed")
            after = stock_of(self.base, second[0])
            need(after == before, f"{self.where('payment-lapsed')}: after the payment lapsed listing {second[0]} has "
                                  f"{after} on sale, not {before} again")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "rehome"))
    parser.add_argument("--screenshots", help="a directory for every page's screenshots")
    parser.add_argument("--docs", action="store_true", help=f"also write the pages of {DOCS}")
    args = parser.parse_args()
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("no chromium found (apt-get install chromium, or set CHROMIUM)")
    missing = node_ready()
    if missing:
        sys.exit(f"payment.py signs webhooks with Stripe's Node library: {missing}")
    shots = []
    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)
        shots.append((args.screenshots, None))
    if args.docs:
        os.makedirs(DOCS, exist_ok=True)
        shots.append((DOCS, DOC_PAGES))
    axe = axe_source()
    secret_key = "sk_test_rehome" + secrets.token_hex(12)
    webhook_secret = "whsec_" + secrets.token_urlsafe(24)
    mock = StripeMock(secret_key)
    os.environ.update({
        "REHOME_PAYMENTS": "stripe",
        "REHOME_STRIPE_SECRET_KEY": secret_key,
        "REHOME_STRIPE_WEBHOOK_SECRET": webhook_secret,
        "REHOME_STRIPE_API_URL": mock.start(),
        "REHOME_MARKETPLACE_RATE_LIMIT": "100000",
    })
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
            for js in (True, False):
                for width in WIDTHS:
                    label = f"at {width} px, JavaScript {'on' if js else 'off'}"
                    # A fresh demo each walk: its pieces are all in stock.
                    with tempfile.TemporaryDirectory() as workdir:
                        server, base = start_server(os.path.abspath(args.binary), workdir, "--demo")
                        origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
                        try:
                            wait_for_thumbnails(base)
                            listings = on_sale(base)
                            if len(listings) < 2 or listings[0][1] < 3:
                                need(False, f"{label}: the demo has no listing of several units and another on "
                                            f"sale: {listings}")
                                continue
                            # The one of most units, then one of a single unit if there is one.
                            first = listings[0]
                            second = next((f for f in listings[1:] if f[1] == 1), listings[1])
                            context = browser.new_context(java_script_enabled=js,
                                                          viewport={"width": width, "height": 900})
                            stand_in = StandIn()
                            context.route(STRIPE_PAGES, stand_in.handle)
                            page = context.new_page()
                            visit = Visit(page, origin)
                            kept = [(d, names) for d, names in shots if js or names is None]
                            Walk(page, visit, stand_in, base, mock, webhook_secret, width, js, axe, kept, need).run(
                                first, second)
                            allowed = stand_in.urls()
                            for url in visit.foreign():
                                need(url in allowed, f"{label}: a request to another origin: {url}")
                            for problem in stand_in.problems:
                                need(False, f"{label}: {problem}")
                            for error in visit.errors:
                                need(False, f"{label}: {error}")
                            context.close()
                        finally:
                            server.terminate()
                            server.wait(timeout=10)
            browser.close()
    finally:
        mock.stop()
    for problem in mock.problems():
        need(False, f"the Stripe stand-in: {problem}")
    if problems:
        for problem in problems:
            print("FAIL:", problem)
        sys.exit(1)
    print(f"payment: a purchase paid by card (listing → Stripe's page → held, awaiting payment → signed "
          f"checkout.session.completed → placed and paid) and one that lapsed (checkout.session.expired → not "
          f"ordered), with JavaScript on and off at 1280 and 390 px; {len(mock.created())} Checkout Sessions, each "
          f"valid for Stripe: no axe-core violation, no sideways scroll, no request to another origin but Stripe's "
          f"page, no console error, no code shown")


if __name__ == "__main__":
    main()
