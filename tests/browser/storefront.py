#!/usr/bin/env python3
"""The storefront (decisions 14, issue 46) as a buyer walks it, in a real headless Chromium,
with JavaScript on and with JavaScript off, at 1280 px and at 390 px wide:

    /  →  the catalogue  →  a search from the header  →  filters through the form (type,
    price range, sort)  →  a filter removed by its chip, and back  →  the first result's
    listing page  →  its brand's page

then a sold listing (the demo's traded-in armchair: "Sold", no checkout form) and the 404
page of an unknown listing. On every page:

- axe-core (tests/browser/package.json, `npm ci` there) finds no violation. The page's CSP
  is kept (not bypassed): axe is evaluated through the DevTools protocol, which the CSP does
  not govern. With JavaScript off the page's timers never fire, so axe is given a
  `setTimeout` that queues a microtask instead;
- nothing scrolls sideways: `document.scrollingElement.scrollWidth <= innerWidth`;
- every request goes to the server's own origin (each URL is recorded; `data:` is inline);
- no console error (a CSP violation included), no broken image;
- the page says the same with JavaScript off as with it on.

The demo's listings are found through the pages and the sitemap; the sold one is the listing
missing from the sitemap whose page says "Sold". Full-page screenshots of each page at both
widths go to --screenshots DIR (`<page>-<width>.png`, and `<page>-nojs-<width>.png` without
JavaScript); --docs writes those of the catalogue, the filtered catalogue, a listing, the sold
listing and a brand page to docs/marketplace/.

Usage: python3 tests/browser/storefront.py [--binary target/debug/rehome] [--screenshots DIR] [--docs]
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urlsplit

from harness import ROOT, axe_source, codes_on_page, sideways, start_server
from playwright.sync_api import sync_playwright

WIDTHS = (1280, 390)
DOCS = os.path.join(ROOT, "docs", "marketplace")
# The pages whose screenshots docs/marketplace/ keeps.
DOC_PAGES = ("catalogue", "catalogue-filtered", "listing", "sold-listing", "brand")
# The filters the journey applies: a search from the header, then the form.
SEARCH = "sofa"
CHANNEL = ("clearance", "Clearance")
MIN_PRICE, MAX_PRICE = 500, 1500
SORT = "price_desc"

# axe-core waits on timers; with scripting off they never fire, so they become microtasks.
TIMERS_AS_MICROTASKS = """() => {
    window.setTimeout = (f, ms, ...args) => { Promise.resolve().then(() => f(...args)); return 0; };
    window.clearTimeout = () => {};
}"""


def get(url):
    """(status, headers, body) of a plain GET, 4xx and 5xx included."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def wait_for_thumbnails(base, seconds=30):
    """The demo's photos get their sizes in the background after start: waits until every
    photo of every listing in the sitemap has a "-medium" size in its srcset."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        srcsets = [s for i in sitemap_ids(base)
                   for s in re.findall(r'srcset="([^"]*)"', get(f"{base}/marketplace/listings/{i}")[2])]
        if srcsets and all("-medium" in s for s in srcsets):
            return
        time.sleep(0.25)
    sys.exit("the demo's photos got no thumbnails in time")


def sitemap_ids(base):
    status, _, xml = get(base + "/marketplace/sitemap.xml")
    if status != 200:
        sys.exit(f"/marketplace/sitemap.xml answered {status}")
    return [int(i) for i in re.findall(r"/marketplace/listings/(\d+)</loc>", xml)]


def find_sold(base):
    """The demo's sold listing: not in the sitemap (only what is for sale is), yet its page
    answers 200 marked sold."""
    listed = set(sitemap_ids(base))
    for i in range(1, max(listed) + 1):
        if i in listed:
            continue
        status, _, html = get(f"{base}/marketplace/listings/{i}")
        if status == 200 and 'class="sold"' in html:
            return i
    sys.exit("the demo has no sold listing (decisions 14.1: sold listings keep their page)")


class Visit:
    """One browser page's record: every request's URL, console errors, and the answer to the
    last document loaded in its main frame."""

    def __init__(self, page, origin):
        self.origin = origin
        self.requests = []
        self.errors = []
        self.expected_status = set()
        self.document = None
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("console", self.on_console)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on("response", self.on_response)
        self.page = page

    def on_console(self, message):
        if message.type != "error":
            return
        if any(f"status of {s}" in message.text for s in self.expected_status):
            return
        self.errors.append(f"console error: {message.text}")

    def on_response(self, response):
        if response.request.resource_type == "document" and response.frame == self.page.main_frame:
            self.document = response

    def foreign(self):
        """Requests that left the server's origin (a `data:` URL is inline, not a request out)."""
        return [u for u in self.requests if not (u.startswith(self.origin + "/") or u.startswith("data:"))]


def settle_images(page, js, seconds=10):
    """Every image loaded: with JavaScript on, the lazy ones are scrolled into view first."""
    if js:
        page.evaluate("""async () => {
            const step = Math.max(200, window.innerHeight - 100);
            for (let y = 0; y < document.scrollingElement.scrollHeight; y += step) {
                window.scrollTo(0, y);
                await new Promise(r => requestAnimationFrame(() => r()));
            }
            window.scrollTo(0, 0);
        }""")
    deadline = time.time() + seconds
    while time.time() < deadline:
        if page.evaluate("[...document.images].every(i => i.complete)"):
            break
        time.sleep(0.1)
    return page.evaluate("[...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")


def axe_violations(page, source, js):
    """axe-core on the page as it is (its CSP in force): injected through the DevTools
    protocol; violations as "rule (impact) at target: help". A run that checked nothing (axe
    not really running) is a violation too."""
    if not page.evaluate("typeof window.axe === 'object'"):
        if not js:
            page.evaluate(TIMERS_AS_MICROTASKS)
        page.evaluate(source)
    found = page.evaluate("""async () => {
        const result = await window.axe.run(document, {resultTypes: ['violations']});
        return {passes: result.passes.length, violations: result.violations.map(v => ({id: v.id, impact: v.impact,
            help: v.help, targets: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))};
    }""")
    if found["passes"] < 10:
        return [f"axe-core checked only {found['passes']} rules: did it run?"]
    return [f"{v['id']} ({v['impact']}) at {', '.join(v['targets'])}: {v['help']}" for v in found["violations"]]


def look_at(page, document, where, need, *, axe, js, shots, name, width, status=200, private=False, extra=None):
    """The checks every storefront page gets (its status; for a private page its headers;
    images loaded, no sideways scroll, no axe-core violation, no code shown; `extra(page)`
    for a walk's own), and its screenshot into each of `shots` (`(directory, names)`)."""
    need(document is not None and document.status == status,
         f"{where} answered {document.status if document else 'nothing'}, not {status}")
    if private and document is not None:
        headers = document.headers
        need(headers.get("cache-control") == "private, no-store",
             f"{where}: Cache-Control is {headers.get('cache-control')!r}, not 'private, no-store'")
        need("noindex" in headers.get("x-robots-tag", ""), f"{where} is not noindex")
        need(headers.get("referrer-policy") == "no-referrer", f"{where} may send its address as a referrer")
    broken = settle_images(page, js)
    need(not broken, f"{where}: images that did not load: {broken}")
    over = sideways(page)
    need(over <= 0, f"{where} scrolls sideways by {over} px")
    for violation in axe_violations(page, axe, js):
        need(False, f"{where}: axe: {violation}")
    codes = codes_on_page(page)
    need(not codes, f"{where} shows codes, not sentences: {codes}")
    if extra:
        extra(page)
    for directory, names in shots:
        if names is None or name in names:
            suffix = "" if js else "-nojs"
            page.screenshot(path=os.path.join(directory, f"{name}{suffix}-{width}.png"), full_page=True)


def click(page, locator):
    locator.click()
    page.wait_for_load_state()


def card_prices(page):
    """The cards' prices in pence (the price shown, not the crossed-out one)."""
    texts = page.locator("ul.cards li.card .price").evaluate_all(
        "els => els.map(e => e.firstChild ? e.firstChild.textContent : '')")
    return [round(float(re.sub(r"[^0-9.]", "", t)) * 100) for t in texts]


def json_ld(page):
    scripts = page.locator("script[type='application/ld+json']")
    if scripts.count() != 1:
        return None
    return json.loads(scripts.first.text_content())


class Journey:
    """The walk at one width, with JavaScript on or off."""

    def __init__(self, page, visit, base, width, js, axe, shots, need):
        self.page, self.visit, self.base, self.width, self.js = page, visit, base, width, js
        self.axe, self.shots, self.need = axe, shots, need
        self.texts = {}

    def where(self, name):
        return f"{name} at {self.width} px, JavaScript {'on' if self.js else 'off'} ({urlsplit(self.page.url).path})"

    def look(self, name, indexable=None):
        """The checks every page gets, and its screenshot."""
        page, need, where = self.page, self.need, self.where(name)
        broken = settle_images(page, self.js)
        need(not broken, f"{where}: images that did not load: {broken}")
        over = sideways(page)
        need(over <= 0, f"{where} scrolls sideways by {over} px")
        for violation in axe_violations(page, self.axe, self.js):
            need(False, f"{where}: axe: {violation}")
        if indexable is not None:
            robots_meta = page.locator("meta[name=robots][content*=noindex]").count() > 0
            robots_header = "noindex" in (self.visit.document.headers.get("x-robots-tag", "") if self.visit.document
                                          else "")
            if indexable:
                need(not robots_meta and not robots_header, f"{where} says noindex, yet it is a page to index")
            else:
                need(robots_meta or robots_header, f"{where} does not say noindex")
        self.texts[name] = page.locator("main").inner_text()
        for directory, names in self.shots:
            if names is None or name in names:
                suffix = "" if self.js else "-nojs"
                page.screenshot(path=os.path.join(directory, f"{name}{suffix}-{self.width}.png"), full_page=True)

    def walk(self, sold_id):
        page, base, need = self.page, self.base, self.need

        # The front door leads to the catalogue.
        page.goto(base + "/")
        page.wait_for_load_state()
        need(urlsplit(page.url).path == "/marketplace", f"/ leads to {page.url}, not /marketplace")
        need(page.get_by_role("heading", level=1).inner_text() == "Furniture", "the catalogue's heading is not 'Furniture'")
        everything = page.locator("ul.cards li.card").count()
        need(everything >= 5, f"the demo catalogue shows {everything} listings")
        self.look("catalogue", indexable=True)

        # A search from the header, then filters through the form.
        page.get_by_role("searchbox", name="Search furniture").fill(SEARCH)
        click(page, page.get_by_role("search").get_by_role("button", name="Search"))
        need(parse_qs(urlsplit(page.url).query).get("q") == [SEARCH], f"the search did not ask for q={SEARCH}: {page.url}")
        need(SEARCH in page.get_by_role("heading", level=1).inner_text(), "the results' heading does not name the search")
        form = page.get_by_role("form", name="Filter furniture")
        form.get_by_label("Type").select_option(CHANNEL[0])
        form.get_by_label("Lowest price in pounds").fill(str(MIN_PRICE))
        form.get_by_label("Highest price in pounds").fill(str(MAX_PRICE))
        form.get_by_label("Sort").select_option(SORT)
        click(page, form.get_by_role("button", name="Show results"))
        query = parse_qs(urlsplit(page.url).query)
        wanted = {"q": [SEARCH], "channel": [CHANNEL[0]], "min_price": [str(MIN_PRICE)],
                  "max_price": [str(MAX_PRICE)], "sort": [SORT]}
        need(all(query.get(k) == v for k, v in wanted.items()), f"the filter form asked for {page.url}")
        filtered_url = page.url
        cards = page.locator("ul.cards li.card")
        n = cards.count()
        need(1 < n < everything, f"the filters left {n} of {everything} listings (the demo has 2 clearance sofas "
                                 f"between £{MIN_PRICE} and £{MAX_PRICE})")
        prices = card_prices(page)
        need(all(MIN_PRICE * 100 <= p <= MAX_PRICE * 100 for p in prices), f"prices outside the range: {prices}")
        need(prices == sorted(prices, reverse=True), f"not sorted by price, high to low: {prices}")
        titles = cards.locator(".title").all_inner_texts()
        need(all(SEARCH in t.lower() for t in titles), f"results that do not match “{SEARCH}”: {titles}")
        tags = cards.locator(".tags").all_inner_texts()
        need(all(CHANNEL[1] in t for t in tags), f"results not in {CHANNEL[1]}: {tags}")
        chips = page.get_by_role("list", name="Filters in use")
        for chip in (f"“{SEARCH}”", CHANNEL[1], f"£{MIN_PRICE}.00 to £{MAX_PRICE:,}.00"):
            need(chips.get_by_role("link", name=f"Remove filter: {chip}").count() == 1, f"no chip to remove {chip}")
        kept = page.get_by_label("Lowest price in pounds").input_value()
        need(re.fullmatch(rf"{MIN_PRICE}(\.0+)?", kept) is not None, f"the form forgot the lowest price: {kept!r}")
        self.look("catalogue-filtered", indexable=False)

        # A chip removes its filter and keeps the others; back returns to the filtered page.
        click(page, chips.get_by_role("link", name=f"Remove filter: {CHANNEL[1]}"))
        query = parse_qs(urlsplit(page.url).query)
        need("channel" not in query and query.get("max_price") == [str(MAX_PRICE)] and query.get("q") == [SEARCH],
             f"removing the {CHANNEL[1]} chip led to {page.url}")
        need(page.locator("ul.cards li.card").count() >= n, "removing a filter showed fewer listings")
        self.look("catalogue-chip-removed", indexable=False)
        page.go_back()
        page.wait_for_load_state()
        need(page.url == filtered_url, f"back did not return to the filtered page: {page.url}")

        # The first result's page.
        first = page.locator("ul.cards li.card").first
        title = first.locator(".title").inner_text()
        price = first.locator(".price").evaluate("e => e.firstChild.textContent.trim()")
        click(page, first.get_by_role("link"))
        listing_url = page.url
        need(re.fullmatch(r".*/marketplace/listings/\d+", listing_url) is not None, f"the card led to {listing_url}")
        need(page.get_by_role("heading", level=1).inner_text() == title, f"the listing's heading is not {title!r}")
        need(page.locator(".buy .price").inner_text().startswith(price), f"the listing's price is not {price}")
        need(page.get_by_role("heading", name="Buy this piece").count() == 1, "a listing for sale has no checkout form")
        need(page.get_by_role("button", name=re.compile("^Order for ")).count() == 1, "no 'Order for' button")
        labels = page.locator("ul.labels li").all_inner_texts()
        need("Pet free" in labels and "Smoke free" in labels, f"the listing's labels are {labels}")
        images = page.locator(".gallery img")
        need(images.count() >= 1, "the listing shows no photo")
        for i in range(images.count()):
            image = images.nth(i)
            need("-medium" in (image.get_attribute("srcset") or ""), f"photo {i + 1} has no thumbnail in its srcset")
            need((image.get_attribute("alt") or "").strip() != "", f"photo {i + 1} has no alt text")
        data = json_ld(page)
        need(data is not None, "the listing has not exactly one JSON-LD script")
        if data:
            offer = data.get("offers", {})
            need(data.get("@type") == "Product" and offer.get("@type") == "Offer", f"JSON-LD is not a Product/Offer: {data}")
            need(offer.get("priceCurrency") == "GBP" and "£" + f"{float(offer.get('price', 0)):,.2f}" == price,
                 f"JSON-LD price {offer.get('price')} {offer.get('priceCurrency')} is not {price}")
            need(offer.get("availability") == "https://schema.org/InStock", "JSON-LD availability is not InStock")
        canonical = page.locator("link[rel=canonical]").get_attribute("href")
        need(canonical == listing_url, f"the canonical link {canonical} is not the page's URL {listing_url}")
        self.look("listing", indexable=True)

        # Its brand's page.
        brand = page.locator(".buy .by a").inner_text()
        click(page, page.locator(".buy .by").get_by_role("link", name=brand))
        need("/marketplace/brands/" in page.url, f"the brand link led to {page.url}")
        need(page.get_by_role("heading", level=1).inner_text() == brand, f"the brand page's heading is not {brand!r}")
        makers = page.locator("ul.cards li.card .by").all_inner_texts()
        need(makers and all(m == brand for m in makers), f"the brand page shows others' listings: {makers}")
        need(page.locator(f"ul.cards a[href='{urlsplit(listing_url).path}']").count() == 1,
             "the brand page does not show the listing we came from")
        head = page.locator(".brand-head")
        if "accented" in (head.get_attribute("class") or ""):
            background = head.evaluate("e => getComputedStyle(e).backgroundColor")
            need(background not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)"),
                 f"the brand's accent is not applied (its inline style blocked?): {background}")
        self.look("brand", indexable=True)

        # A sold listing: marked sold, no way to buy.
        page.goto(f"{base}/marketplace/listings/{sold_id}")
        page.wait_for_load_state()
        need(page.locator(".sold strong").inner_text() == "Sold", "the sold listing does not say Sold")
        need(page.get_by_text("Buy this piece").count() == 0, "the sold listing still offers to buy")
        data = json_ld(page)
        need(data is not None and data.get("offers", {}).get("availability") == "https://schema.org/SoldOut",
             "the sold listing's JSON-LD availability is not SoldOut")
        self.look("sold-listing")

        # An unknown listing: the storefront's 404 page, not indexed.
        self.visit.expected_status.add(404)
        response = page.goto(f"{base}/marketplace/listings/999999")
        page.wait_for_load_state()
        need(response.status == 404, f"an unknown listing answered {response.status}")
        need(page.get_by_role("heading", level=1).inner_text() == "Page not found", "the 404 page's heading")
        need(page.get_by_role("link", name="See all furniture").count() == 1, "the 404 page offers no way on")
        self.look("not-found", indexable=False)
        self.visit.expected_status.discard(404)


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
    # The checks load many pages a minute from one address.
    os.environ["REHOME_MARKETPLACE_RATE_LIMIT"] = "100000"
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

    with tempfile.TemporaryDirectory() as workdir:
        server, base = start_server(os.path.abspath(args.binary), workdir, "--demo")
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
        try:
            wait_for_thumbnails(base)
            sold_id = find_sold(base)
            texts = {}
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                for js in (True, False):
                    for width in WIDTHS:
                        # Every walk in a context of its own: nothing cached from the one before.
                        context = browser.new_context(java_script_enabled=js, viewport={"width": width, "height": 900})
                        page = context.new_page()
                        visit = Visit(page, origin)
                        # docs/marketplace/ keeps the pages as they are with JavaScript on.
                        kept = [(d, names) for d, names in shots if js or names is None]
                        journey = Journey(page, visit, base, width, js, axe, kept, need)
                        journey.walk(sold_id)
                        label = f"at {width} px, JavaScript {'on' if js else 'off'}"
                        for url in visit.foreign():
                            need(False, f"{label}: a request to another origin: {url}")
                        for error in visit.errors:
                            need(False, f"{label}: {error}")
                        need(len(visit.requests) > 0, f"{label}: no request recorded")
                        texts[(js, width)] = journey.texts
                        context.close()
                browser.close()
            for width in WIDTHS:
                on, off = texts.get((True, width), {}), texts.get((False, width), {})
                for name in on:
                    need(on[name] == off.get(name), f"{name} at {width} px says something else without JavaScript")
        finally:
            server.terminate()
            server.wait(timeout=10)
    if problems:
        for problem in problems:
            print("FAIL:", problem)
        sys.exit(1)
    print("storefront: catalogue, filters, listing, brand, sold and 404 pages with JavaScript on and off at "
          "1280 and 390 px: no axe-core violation, no sideways scroll, no request to another origin, no console error")


if __name__ == "__main__":
    main()
