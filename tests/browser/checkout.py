#!/usr/bin/env python3
"""Buying and choosing a payout on the storefront (decisions 14.3, 14.5, 14.6) as a buyer and
a customer do it, in a real headless Chromium, with JavaScript on and off, at 1280 px and
at 390 px wide. Each of the four walks has a fresh `serve --demo` of its own (it starts in
well under a second), so each buys pieces that are still in stock:

    the Pre-loved catalogue  →  its first piece  →  "Buy this piece" with the postcode
    "NARNIA" (400: the sentence beside the field and in an error summary whose link leads to
    it, everything typed kept)  →  corrected  →  303 to the order's page ("Order #N", status,
    item, price, delivery window, collection, deliver to)

then a clearance piece of several units bought two at a time ("How many (up to N)"; the
order page says the total and the price of each), and, once the operator API has completed
the pre-loved order and made its payout link (`REHOME_OPS_TOKEN`):

    the payout page  →  "Confirm my choice" with nothing chosen (400: a sentence)  →  store
    credit to a code  →  "Your store credit is ready" with the code  →  reloaded, and the
    link opened again: 410 "This link no longer works"

On every page: axe-core finds no violation (evaluated through the DevTools protocol, the
page's CSP kept), nothing scrolls sideways, every request goes to the server's own origin,
no console error other than the status of an expected refusal, no broken image, no error
that is only a snake_case code. The form's hidden `csrf` equals the `rehome_checkout`
cookie the page set (HttpOnly, SameSite=Strict, Path=/marketplace); the order and payout
pages are `private, no-store` and noindex.

Full-page screenshots go to --screenshots DIR (`<page>-<width>.png`, `<page>-nojs-<width>.png`
without JavaScript); --docs writes checkout-errors, order, payout and payout-done at both
widths (JavaScript on) to docs/marketplace/.

Usage: python3 tests/browser/checkout.py [--binary target/debug/rehome] [--screenshots DIR] [--docs]
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from harness import ROOT, axe_source, start_server
from playwright.sync_api import sync_playwright
from storefront import WIDTHS, Visit, get, look_at, sitemap_ids, wait_for_thumbnails

DOCS = os.path.join(ROOT, "docs", "marketplace")
DOC_PAGES = ("checkout-errors", "order", "payout", "payout-done")
OPS_TOKEN = "browser-check-ops-token-0123456789"
BUYER = {"Your name": "Sam Buyer", "Email": "sam.buyer@example.co.uk", "Phone (optional)": "07700 900123"}
# Typed in lower case without its space, shown as a postcode is written.
BAD_POSTCODE, TYPED_POSTCODE, POSTCODE = "NARNIA", "sw1a1aa", "SW1A 1AA"
POSTCODE_SENTENCE = "Give a UK postcode such as SW1A 1AA: we deliver in the UK only."
MONEY = r"£[\d,]+\.\d\d"


def ops(base, path, body=None):
    """(status, JSON) of an operator API POST."""
    request = urllib.request.Request(base + path, data=json.dumps(body or {}).encode(), method="POST", headers={
        "Authorization": f"Bearer {OPS_TOKEN}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def several_units(base):
    """The listing on sale with the most units (a clearance one, in the demo) and its count."""
    best = (None, 0)
    for i in sitemap_ids(base):
        found = re.search(r'class="stock">(\d+) available<', get(f"{base}/marketplace/listings/{i}")[2])
        if found and int(found.group(1)) > best[1]:
            best = (i, int(found.group(1)))
    return best


class Walk:
    """Buying and the payout at one width, with JavaScript on or off."""

    def __init__(self, page, visit, base, width, js, axe, shots, need):
        self.page, self.visit, self.base, self.width, self.js = page, visit, base, width, js
        self.axe, self.shots, self.need = axe, shots, need

    def where(self, name):
        return f"{name} at {self.width} px, JavaScript {'on' if self.js else 'off'} ({urlsplit(self.page.url).path})"

    def look(self, name, status=200, private=False):
        """The checks every page gets, and its screenshot."""
        look_at(self.page, self.visit.document, self.where(name), self.need, axe=self.axe, js=self.js,
                shots=self.shots, name=name, width=self.width, status=status, private=private)

    def submit(self, button):
        button.click()
        self.page.wait_for_load_state()

    def fill_buyer(self, form, postcode):
        for label, value in BUYER.items():
            form.get_by_label(label, exact=True).fill(value)
        form.get_by_label("Delivery postcode (UK)", exact=True).fill(postcode)

    def buy_preloved(self):
        """A pre-loved piece: refused once for its postcode, then ordered. Returns the order's number."""
        page, base, need = self.page, self.base, self.need
        page.goto(base + "/marketplace?channel=exchange")
        page.wait_for_load_state()
        cards = page.locator("ul.cards li.card")
        if cards.count() == 0:
            need(False, f"{self.where('catalogue')}: no pre-loved piece on sale")
            return None
        first = cards.first
        title = first.locator(".title").inner_text()
        price = first.locator(".price").evaluate("e => e.firstChild.textContent.trim()")
        first.get_by_role("link").first.click()
        page.wait_for_load_state()
        listing_path = urlsplit(page.url).path
        form = page.get_by_role("form", name="Buy this piece")
        need(form.count() == 1, f"{self.where('listing')}: no form named 'Buy this piece'")
        need(form.get_by_label(re.compile(r"^How many")).count() == 0,
             f"{self.where('listing')}: a piece of one unit asks how many")
        button = form.get_by_role("button", name=f"Order for {price}")
        need(button.count() == 1, f"{self.where('listing')}: no button 'Order for {price}'")
        self.anti_forgery(form, "listing")

        # A postcode outside the UK: the sentence, the field marked, what was typed kept.
        self.fill_buyer(form, BAD_POSTCODE)
        self.visit.expected_status.add(400)
        self.submit(button)
        need(urlsplit(page.url).path == listing_path + "/checkout", f"the refused order landed on {page.url}")
        form = page.get_by_role("form", name="Buy this piece")
        # The summary stands above the item, first on the page, so a phone shows it at once.
        summary = page.get_by_role("alert").filter(has_text="Nothing was bought yet")
        need(summary.count() == 1 and POSTCODE_SENTENCE in summary.inner_text(),
             f"{self.where('checkout-errors')}: no error summary saying {POSTCODE_SENTENCE!r}")
        link = summary.get_by_role("link", name=POSTCODE_SENTENCE)
        target = (link.get_attribute("href") or "") if link.count() == 1 else ""
        postcode = form.get_by_label("Delivery postcode (UK)", exact=True)
        need(target == "#" + (postcode.get_attribute("id") or "-"),
             f"{self.where('checkout-errors')}: the summary's link {target!r} does not lead to the postcode field")
        need(postcode.get_attribute("aria-invalid") == "true", "the postcode field is not marked invalid")
        described = postcode.get_attribute("aria-describedby") or ""
        need(described != "" and page.locator(f"[id='{described}']").inner_text() == POSTCODE_SENTENCE,
             f"{self.where('checkout-errors')}: the postcode field is not described by its sentence")
        kept = {label: form.get_by_label(label, exact=True).input_value() for label in BUYER}
        kept_postcode = postcode.input_value()
        need(kept == BUYER and kept_postcode == BAD_POSTCODE,
             f"{self.where('checkout-errors')}: the form forgot what was typed: {kept}, {kept_postcode!r}")
        need(page.get_by_role("heading", level=1).inner_text() == title, "the refusal is not on the listing's page")
        self.anti_forgery(form, "checkout-errors")
        self.look("checkout-errors", status=400)
        # The summary's link moves to the field (a plain fragment link: no script needed).
        if link.count() == 1:
            link.click()
            need(urlsplit(page.url).fragment == target[1:], f"the summary's link led to {page.url}")
        self.visit.expected_status.discard(400)

        # Corrected: 303 to the order's page.
        postcode.fill(TYPED_POSTCODE)
        self.submit(form.get_by_role("button", name=f"Order for {price}"))
        need(re.fullmatch(r"/marketplace/orders/[A-Za-z0-9]{32}", urlsplit(page.url).path) is not None,
             f"the order landed on {page.url}")
        return self.order_page("order", title, price, listing_path, 1)

    def anti_forgery(self, form, name):
        """The form's hidden token is the cookie the page set, and the cookie is as strict as said."""
        token = form.locator("input[type=hidden][name=csrf]").get_attribute("value")
        cookies = [c for c in self.page.context.cookies(self.base + "/marketplace") if c["name"] == "rehome_checkout"]
        need, where = self.need, self.where(name)
        need(len(cookies) == 1, f"{where}: no rehome_checkout cookie")
        if cookies:
            cookie = cookies[0]
            need(cookie["value"] == token, f"{where}: the csrf field is not the rehome_checkout cookie")
            need(cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/marketplace",
                 f"{where}: the rehome_checkout cookie is {cookie}")

    def order_page(self, name, title, price, listing_path, quantity, each=None):
        """The order's page as the buyer lands on it; returns the order's number."""
        page, need, where = self.page, self.need, self.where(name)
        heading = page.get_by_role("heading", level=1).inner_text()
        number = re.fullmatch(r"Order #(\d+)", heading)
        need(number is not None, f"{where}: the heading is {heading!r}, not 'Order #N'")
        terms = page.locator(".order dt").all_inner_texts()
        values = dict(zip(terms, page.locator(".order dd").all_inner_texts()))
        wanted = ["Item", "Quantity", "Price", "Sold by", "Delivery window", "Leaves the warehouse", "Deliver to", "Ordered"]
        need(terms == wanted, f"{where}: the order says {terms}, not {wanted}")
        need(page.locator(".order .status").inner_text() == "Placed", f"{where}: the status is not 'Placed'")
        need(values.get("Item") == title, f"{where}: the item is {values.get('Item')!r}, not {title!r}")
        item = page.locator(".order dd a")
        need(item.count() == 1 and item.get_attribute("href") == listing_path, f"{where}: the item does not link back")
        need(values.get("Quantity") == str(quantity), f"{where}: the quantity is {values.get('Quantity')!r}")
        wanted_price = price if each is None else f"{price} ({each} each)"
        need(values.get("Price") == wanted_price, f"{where}: the price is {values.get('Price')!r}, not {wanted_price!r}")
        need(re.fullmatch(r"\d{1,2} [A-Z][a-z]{2}( \d{4})? to \d{1,2} [A-Z][a-z]{2} \d{4}",
                          values.get("Delivery window", "")) is not None,
             f"{where}: the delivery window is {values.get('Delivery window')!r}")
        need(values.get("Leaves the warehouse", "").startswith("Not booked yet"), f"{where}: the collection is "
                                                                         f"{values.get('Collection')!r}")
        need(values.get("Deliver to") == f"{BUYER['Your name']}, {POSTCODE}",
             f"{where}: deliver to {values.get('Deliver to')!r}")
        self.look(name, private=True)
        return int(number.group(1)) if number else None

    def buy_several(self, listing_id, units):
        """Two of a listing with several units: the quantity field, the total and the price of each."""
        page, need = self.page, self.need
        page.goto(f"{self.base}/marketplace/listings/{listing_id}")
        page.wait_for_load_state()
        title = page.get_by_role("heading", level=1).inner_text()
        price = page.locator(".buy .price").evaluate("e => e.firstChild.textContent.trim()")
        form = page.get_by_role("form", name="Buy this piece")
        how_many = form.get_by_label(f"How many (up to {units})", exact=True)
        need(how_many.count() == 1, f"{self.where('listing')}: no field 'How many (up to {units})'")
        button = form.get_by_role("button", name=f"Order for {price} each")
        need(button.count() == 1, f"{self.where('listing')}: no button 'Order for {price} each'")
        if how_many.count() != 1 or button.count() != 1:
            return
        self.fill_buyer(form, POSTCODE)
        how_many.fill("2")
        self.submit(button)
        pence = round(float(re.sub(r"[^0-9.]", "", price)) * 100) * 2
        total = f"£{pence // 100:,}.{pence % 100:02d}"
        self.order_page("order-several", title, total, f"/marketplace/listings/{listing_id}", 2, each=price)

    def payout(self, url):
        """The payout page: nothing chosen (a sentence), then store credit to a code, then 410."""
        page, need = self.page, self.need
        page.goto(url)
        page.wait_for_load_state()
        where = self.where("payout")
        heading = page.get_by_role("heading", level=1).inner_text()
        need(re.fullmatch(r"Choose how .+ pays you", heading) is not None, f"{where}: the heading is {heading!r}")
        choices = page.get_by_role("group", name="How would you like to be paid?")
        credit = choices.get_by_role("radio", name=re.compile(rf"^Store credit with .+: {MONEY}"))
        cash = choices.get_by_role("radio", name=re.compile(rf"^Cash: {MONEY}$"))
        need(credit.count() == 1 and cash.count() == 1, f"{where}: the choices are "
                                                         f"{choices.locator('label').all_inner_texts()}")
        need(not page.locator("input[name=customer_choice]:checked").count(), f"{where}: a choice is made already")
        self.look("payout", private=True)

        self.visit.expected_status.add(400)
        self.submit(page.get_by_role("button", name="Confirm my choice"))
        alert = page.get_by_role("alert")
        need(alert.count() == 1 and "Choose store credit or cash." in alert.inner_text(),
             f"{self.where('payout-errors')}: no sentence asking to choose")
        link = alert.get_by_role("link", name="Choose store credit or cash.")
        need(link.count() == 1 and page.locator(link.get_attribute("href") or "#-").count() == 1,
             f"{self.where('payout-errors')}: the sentence's link leads nowhere")
        self.look("payout-errors", status=400, private=True)
        self.visit.expected_status.discard(400)

        page.get_by_role("radio", name=re.compile(r"^Store credit with ")).check()
        page.get_by_role("radio", name=re.compile(r"^A credit code ")).check()
        self.submit(page.get_by_role("button", name="Confirm my choice"))
        where = self.where("payout-done")
        need(page.get_by_role("heading", level=1).inner_text() == "Your store credit is ready",
             f"{where}: the heading is {page.get_by_role('heading', level=1).inner_text()!r}")
        code = page.locator(".payout .code").inner_text().strip() if page.locator(".payout .code").count() else ""
        need(re.fullmatch(r"[A-Z0-9][A-Z0-9-]{5,}", code) is not None, f"{where}: no credit code shown ({code!r})")
        self.look("payout-done", private=True)

        # Once only: the answer reloaded, and the link opened again.
        self.visit.expected_status.add(410)
        page.reload()  # Chromium posts the form again
        page.wait_for_load_state()
        need(code not in page.locator("main").inner_text(), f"{self.where('payout-reloaded')}: the code shows again")
        need(page.get_by_role("heading", level=1).inner_text() == "This link no longer works",
             f"{self.where('payout-reloaded')}: the reloaded answer does not say the link has been used")
        self.look("payout-reloaded", status=410, private=True)
        page.goto(url)
        page.wait_for_load_state()
        need(page.get_by_role("heading", level=1).inner_text() == "This link no longer works",
             f"{self.where('payout-used')}: the used link does not say so")
        self.look("payout-used", status=410, private=True)
        self.visit.expected_status.discard(410)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "rehome"))
    parser.add_argument("--screenshots", help="a directory for every page's screenshots")
    parser.add_argument("--docs", action="store_true", help=f"also write the pages of {DOCS}")
    args = parser.parse_args()
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("no chromium found (apt-get install chromium, or set CHROMIUM)")
    shots = []
    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)
        shots.append((args.screenshots, None))
    if args.docs:
        os.makedirs(DOCS, exist_ok=True)
        shots.append((DOCS, DOC_PAGES))
    axe = axe_source()
    os.environ["REHOME_MARKETPLACE_RATE_LIMIT"] = "100000"
    os.environ["REHOME_OPS_TOKEN"] = OPS_TOKEN
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

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
                        several, units = several_units(base)
                        need(units > 2, f"{label}: the demo has no listing of several units on sale")
                        context = browser.new_context(java_script_enabled=js,
                                                      viewport={"width": width, "height": 900})
                        page = context.new_page()
                        visit = Visit(page, origin)
                        kept = [(d, names) for d, names in shots if js or names is None]
                        walk = Walk(page, visit, base, width, js, axe, kept, need)
                        order = walk.buy_preloved()
                        if units > 2:
                            walk.buy_several(several, units)
                        if order is not None:
                            status, answer = ops(base, f"/ops/v1/orders/{order}/complete")
                            need(status == 200, f"{label}: completing order {order} answered {status} {answer}")
                            status, answer = ops(base, f"/ops/v1/orders/{order}/payout-link")
                            need(status == 201 and urlsplit(answer.get("url", "")).netloc == urlsplit(base).netloc,
                                 f"{label}: the payout link answered {status} {answer}")
                            if status == 201:
                                walk.payout(answer["url"])
                        for url in visit.foreign():
                            need(False, f"{label}: a request to another origin: {url}")
                        for error in visit.errors:
                            need(False, f"{label}: {error}")
                        context.close()
                    finally:
                        server.terminate()
                        server.wait(timeout=10)
        browser.close()
    if problems:
        for problem in problems:
            print("FAIL:", problem)
        sys.exit(1)
    print("checkout: a refused and a placed order, an order of several, the order page, the payout page refused, "
          "chosen and used, with JavaScript on and off at 1280 and 390 px: no axe-core violation, no sideways "
          "scroll, no request to another origin, no console error")


if __name__ == "__main__":
    main()
