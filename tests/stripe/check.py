#!/usr/bin/env python3
"""Paying through Stripe Checkout, end to end and as a black box: the built binary's payments
adapter against a stand-in for Stripe (mock.py) that holds every request to Stripe's own
published OpenAPI description, its Python library's parameters and its documented rules, and
webhooks signed by Stripe's own Node library (sign.mjs). Nothing reaches Stripe.

`serve --demo` runs with REHOME_PAYMENTS=stripe, a test secret key, a webhook secret and
REHOME_STRIPE_API_URL pointing at the mock. Then, over plain HTTP as a browser would:

    the listing with the most units (a clearance piece of the demo's): its page sets the
    `rehome_checkout` cookie and the form's `csrf`  →  "Buy" for two (one if it has fewer
    than three)  →  303 to the Stripe
    session's `url`; the stock drops at once; the one create-session request the mock saw is
    valid (no violation) and says: `mode=payment`; a `client_reference_id` of its own that
    the metadata repeats (`metadata[order_id]`=7 with "7", or `metadata[hold_id]`=7 with
    "hold_7" while the stock is only held); one line item in `gbp` of the listing's price in
    pence × the quantity bought; `expires_at` 30 to 31 minutes after the request arrived; an
    `Idempotency-Key`; `success_url` = `cancel_url` = a `/marketplace/orders/<token>` page on
    the server's own origin  →  that page says "Awaiting payment"  →
    `checkout.session.completed`, signed: 200, and the page says "Placed" (and is the order
    of `metadata[order_id]`, if the session named one)  →  the same event again (signed anew,
    and replayed as it was): 200, nothing changes

then another listing bought, and its `checkout.session.completed` sent with a wrong secret,
a timestamp 10 minutes old, a body changed after signing, and no signature: each 400 with a
JSON body, and the order still awaits payment  →  `checkout.session.expired`: 200, the stock
is back and the order's page no longer awaits payment nor says "Placed"  →  a
`payment_intent.created` event, signed: 200, and nothing changes.

Exits non-zero naming each failure; prints the mock's warnings (what only Stripe's newer
library would refuse) either way.

Usage: python3 tests/stripe/check.py [--binary target/debug/rehome] [--requests FILE]

--requests writes every request the mock saw, with its parameters and answer, as JSON. Needs
jsonschema (tests/requirements.txt), Node, and `npm ci` in tests/browser.
"""

import argparse
import html
import json
import os
import re
import secrets
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from urllib.parse import urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "browser"))
from harness import ROOT, start_server  # noqa: E402
from mock import StripeMock, node_ready, sign_headers  # noqa: E402

BUYER = {"name": "Sam Buyer", "email": "sam.buyer@example.co.uk", "phone": "07700 900123", "postcode": "SW1A 1AA"}
ORDER_PATH = re.compile(r"^/marketplace/orders/[A-Za-z0-9_-]{16,}$")
# Stripe's lower bound is 30 minutes after it receives the request; the adapter's is "about 30–31".
EXPIRES_AHEAD = (30 * 60, 31 * 60 + 10)


class Stop(Exception):
    """A failure after which the walk cannot go on."""


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def http(method, url, data=None, headers=None):
    """(status, headers, text) of a request, redirects not followed, 4xx and 5xx included."""
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with OPENER.open(request, timeout=20) as response:
            return response.status, response.headers, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode("utf-8", "replace")


def text_of(page):
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page))).strip()


class Listing:
    """What a listing's page says: title, price in pence, units on sale, the form's token."""

    def __init__(self, base, listing_id):
        self.id = listing_id
        self.url = f"{base}/marketplace/listings/{listing_id}"
        status, headers, page = http("GET", self.url)
        self.status, self.page = status, page
        title = re.search(r"<h1>(.*?)</h1>", page, re.S)
        self.title = html.unescape(title.group(1).strip()) if title else None
        price = re.search(r'<p class="price">\s*£([\d,]+)\.(\d\d)', page)
        self.pence = int(price.group(1).replace(",", "")) * 100 + int(price.group(2)) if price else None
        stock = re.search(r'class="stock">(One|\d+) available<', page)
        self.stock = (1 if stock.group(1) == "One" else int(stock.group(1))) if stock else 0
        csrf = re.search(r'<input type="hidden" name="csrf" value="([^"]*)"', page)
        self.csrf = html.unescape(csrf.group(1)) if csrf else None
        self.cookie = None
        for header in headers.get_all("Set-Cookie") or []:
            found = re.match(r"\s*rehome_checkout=([^;]*)", header)
            if found:
                self.cookie = found.group(1)


def sitemap_ids(base):
    status, _, xml = http("GET", base + "/marketplace/sitemap.xml")
    if status != 200:
        raise Stop(f"/marketplace/sitemap.xml answered {status}")
    return [int(i) for i in re.findall(r"/marketplace/listings/(\d+)</loc>", xml)]


class Order:
    """An order's page: its number and status."""

    def __init__(self, url):
        self.url = url
        self.status_code, _, page = http("GET", url)
        heading = re.search(r"<h1>\s*Order\s*#?\s*([^<]*?)\s*</h1>", page)
        self.number = heading.group(1) if heading else None
        status = re.search(r'<span class="status">(.*?)</span>', page, re.S)
        self.status = text_of(status.group(1)) if status else None
        self.text = text_of(page)

    @property
    def awaiting(self):
        return "awaiting payment" in self.text.lower()

    @property
    def placed(self):
        # An order paid through Stripe says "Paid" until its collection is booked.
        return self.status in ("Placed", "Paid")

    def __repr__(self):
        return f"status {self.status!r} ({self.status_code})"


class Walk:
    def __init__(self, base, mock, webhook_secret):
        self.base, self.mock, self.secret = base, mock, webhook_secret
        self.problems = []
        self.notes = []
        self.references = set()

    def need(self, condition, what):
        if not condition:
            self.problems.append(what)
        return condition

    def must(self, condition, what):
        if not condition:
            raise Stop(what)

    # -- buying --
    def buy(self, listing_id, quantity):
        """Buys through the form; returns (listing before, create request record, session, Location)."""
        before = Listing(self.base, listing_id)
        self.must(before.status == 200 and before.csrf and before.cookie,
                  f"listing {listing_id}: answered {before.status}, csrf {before.csrf!r}, cookie {before.cookie!r}")
        made = len(self.mock.created())
        seen = len(self.mock.requests)
        form = dict(BUYER, quantity=str(quantity), csrf=before.csrf)
        status, headers, page = http("POST", before.url + "/checkout", urllib.parse.urlencode(form).encode(), {
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"rehome_checkout={before.cookie}",
            "Sec-Fetch-Site": "same-origin",
            "Origin": self.base,
        })
        location = headers.get("Location", "")
        where = f"buying {quantity} of listing {listing_id}"
        for record in self.mock.requests[seen:]:
            for violation in record["violations"]:
                self.need(False, f"{where}: Stripe would refuse {record['method']} {record['path']}: {violation}")
        created = self.mock.created()[made:]
        if status == 303 and location.startswith(self.base + "/marketplace/orders/") and not created:
            raise Stop(f"{where}: 303 straight to the order page ({location}) and no request to Stripe: is the "
                       "Stripe adapter off (REHOME_PAYMENTS=stripe, REHOME_STRIPE_API_URL)?")
        self.must(len(created) == 1, f"{where}: the mock saw {len(created)} accepted create-session requests, not 1 "
                                     f"(answered {status}; {text_of(page)[:300]})")
        record = created[0]
        session = record["response"]
        self.must(status == 303, f"{where}: answered {status}, not 303 ({text_of(page)[:300]})")
        self.need(location == session["url"], f"{where}: 303 to {location!r}, not the session's url {session['url']!r}")
        return before, record, session

    def check_request(self, where, record, listing, quantity):
        """The create-session request: what it must say beyond being valid."""
        params, headers = record["params"], record["headers"]
        self.need(params.get("mode") == "payment", f"{where}: mode is {params.get('mode')!r}, not 'payment'")
        # The session names the purchase: client_reference_id, and the same id in the metadata
        # (`order_id`, or `hold_id` while the stock is only held: "hold_7" for hold_id 7).
        reference = params.get("client_reference_id")
        metadata = params.get("metadata") or {}
        ids = {k: v for k, v in metadata.items() if k in ("order_id", "hold_id")}
        self.need(bool(reference) and any(reference in (v, f"{k[:-3]}_{v}") for k, v in ids.items()),
                  f"{where}: client_reference_id {reference!r} is not the metadata's order_id or hold_id ({metadata})")
        self.need(reference not in self.references, f"{where}: client_reference_id {reference!r} was used before")
        self.references.add(reference)
        items = params.get("line_items") or []
        self.need(len(items) == 1, f"{where}: {len(items)} line items, not 1")
        if items:
            item = items[0]
            data = item.get("price_data") or {}
            self.need(data.get("currency") == "gbp", f"{where}: the currency is {data.get('currency')!r}, not 'gbp'")
            self.need(data.get("unit_amount") == listing.pence,
                      f"{where}: unit_amount {data.get('unit_amount')!r}, not the listing's price {listing.pence} pence")
            self.need(item.get("quantity") == quantity, f"{where}: quantity {item.get('quantity')!r}, not {quantity}")
            name = (data.get("product_data") or {}).get("name")
            if name != listing.title:
                self.notes.append(f"{where}: the product's name is {name!r}; the listing's title is {listing.title!r}")
        expires = params.get("expires_at")
        ahead = expires - record["time"] if isinstance(expires, int) else None
        self.need(ahead is not None and EXPIRES_AHEAD[0] <= ahead <= EXPIRES_AHEAD[1],
                  f"{where}: expires_at is {ahead if ahead is None else round(ahead, 1)} s after the request "
                  f"arrived, not {EXPIRES_AHEAD[0]}–{EXPIRES_AHEAD[1]}")
        self.need(bool(headers.get("idempotency-key", "").strip()), f"{where}: no Idempotency-Key header")
        origin = urlsplit(self.base)
        for name in ("success_url", "cancel_url"):
            url = urlsplit(params.get(name) or "")
            self.need((url.scheme, url.netloc) == (origin.scheme, origin.netloc) and ORDER_PATH.match(url.path),
                      f"{where}: {name} is {params.get(name)!r}, not an order page on {self.base}")
        self.need(urlsplit(params.get("success_url") or "").path == urlsplit(params.get("cancel_url") or "").path,
                  f"{where}: success_url and cancel_url are different pages")
        return self.base + urlsplit(params.get("success_url") or "").path, metadata.get("order_id")

    # -- webhooks --
    def post_event(self, payload, header):
        headers = {"Content-Type": "application/json; charset=utf-8",
                   "User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)"}
        if header is not None:
            headers["Stripe-Signature"] = header
        return http("POST", self.base + "/payments/stripe/webhook", payload.encode(), headers)

    def deliver(self, event, what):
        """Sends `event` signed with the right secret; expects 200."""
        payload = json.dumps(event, indent=2)  # Stripe sends it pretty-printed: verified as bytes, not re-encoded
        header = sign_headers([{"payload": payload, "secret": self.secret, "timestamp": int(time.time())}])[0]
        status, _, body = self.post_event(payload, header)
        self.need(status == 200, f"{what}: the webhook answered {status}, not 200 ({body[:300]})")
        return payload, header

    def refused(self, payload, header, what):
        status, headers, body = self.post_event(payload, header)
        try:
            json.loads(body)
            is_json = "json" in headers.get("Content-Type", "")
        except ValueError:
            is_json = False
        self.need(status == 400 and is_json, f"{what}: the webhook answered {status} "
                                             f"{headers.get('Content-Type')!r} {body[:200]!r}, not 400 with JSON")


def run(binary, requests_file=None):
    missing = node_ready()
    if missing:
        sys.exit(f"check.py signs webhooks with Stripe's Node library: {missing}")
    secret_key = "sk_test_rehome" + secrets.token_hex(12)
    webhook_secret = "whsec_" + secrets.token_urlsafe(24)
    mock = StripeMock(secret_key)
    mock_url = mock.start()
    os.environ.update({
        "REHOME_PAYMENTS": "stripe",
        "REHOME_STRIPE_SECRET_KEY": secret_key,
        "REHOME_STRIPE_WEBHOOK_SECRET": webhook_secret,
        "REHOME_STRIPE_API_URL": mock_url,
        "REHOME_MARKETPLACE_RATE_LIMIT": "100000",
    })
    walk = None
    try:
        with tempfile.TemporaryDirectory() as workdir:
            server, base = start_server(binary, workdir, "--demo")
            walk = Walk(base, mock, webhook_secret)
            try:
                steps(walk)
            except Stop as stop:
                walk.problems.append(str(stop))
            finally:
                server.terminate()
                server.wait(timeout=10)
    finally:
        mock.stop()
    if requests_file:
        with open(requests_file, "w", encoding="utf-8") as f:
            json.dump({"requests": mock.requests, "violations": mock.violations, "warnings": mock.warnings,
                       "mock_errors": mock.mock_errors}, f, indent=1)
    for problem in mock.problems():
        if not any(problem in p for p in walk.problems):
            walk.problems.append(f"the Stripe mock: {problem}")
    for warning in sorted(set(mock.warnings)):
        print("warning:", warning)
    for note in walk.notes:
        print("note:", note)
    if walk.problems:
        for problem in walk.problems:
            print("FAIL:", problem)
        sys.exit(1)
    versions = ", ".join(sorted(mock.stripe_versions)) or "none sent"
    print(f"stripe: {len(mock.requests)} requests to the Stripe mock, each valid against Stripe's OpenAPI document "
          f"({mock.docs.version}) and rules (Stripe-Version: {versions}); a purchase held the stock, redirected to "
          "the session and was placed by a signed checkout.session.completed (idempotent on replay); another was "
          "released by checkout.session.expired after four badly signed events were refused with 400; an "
          "unrelated event was ignored")


def steps(walk):
    base, mock = walk.base, walk.mock
    listings = [Listing(base, i) for i in sitemap_ids(base)]
    on_sale = sorted((l for l in listings if l.stock > 0 and l.pence), key=lambda l: -l.stock)
    walk.must(len(on_sale) >= 2, f"the demo has {len(on_sale)} listings on sale, not at least 2")
    first, second = on_sale[0], on_sale[1]
    quantity = 2 if first.stock >= 3 else 1

    # A purchase: 303 to Stripe, the stock held, the request as it must be, the order awaiting payment.
    before, record, session = walk.buy(first.id, quantity)
    where = f"the purchase of listing {first.id}"
    order_url, order_id = walk.check_request(where, record, before, quantity)
    held = Listing(base, first.id)
    walk.need(held.stock == before.stock - quantity,
              f"{where}: the stock went from {before.stock} to {held.stock}, not to {before.stock - quantity}")
    order = Order(order_url)
    walk.must(order.status_code == 200, f"{where}: the order page {order_url} answered {order.status_code}")
    walk.need(order.awaiting and not order.placed, f"{where}: before payment the order page says {order} "
                                                   f"and not 'Awaiting payment'")

    # Paid: the signed completed event places the order; again, nothing changes.
    paid = mock.complete(session["id"])
    completed = mock.event("checkout.session.completed", paid)
    payload, header = walk.deliver(completed, f"{where}: checkout.session.completed")
    order = Order(order_url)
    walk.need(order.placed and not order.awaiting, f"{where}: after checkout.session.completed the order page says "
                                                   f"{order}, not 'Paid'")
    walk.need(order_id is None or order.number == str(order_id),
              f"{where}: the order page is order {order.number!r}, the session's metadata[order_id] {order_id!r}")
    walk.deliver(completed, f"{where}: the same checkout.session.completed again")
    status, _, body = walk.post_event(payload, header)
    walk.need(status == 200, f"{where}: the very same delivery replayed answered {status} ({body[:200]})")
    again, stock = Order(order_url), Listing(base, first.id).stock
    walk.need(again.text == order.text, f"{where}: the repeated event changed the order page ({order} → {again})")
    walk.need(stock == held.stock, f"{where}: the repeated event changed the stock ({held.stock} → {stock})")

    # Another purchase, its completed event badly signed four ways: 400 each, nothing placed.
    before2, record2, session2 = walk.buy(second.id, 1)
    where2 = f"the purchase of listing {second.id}"
    order_url2, _ = walk.check_request(where2, record2, before2, 1)
    forged = dict(mock.session(session2["id"]), status="complete", payment_status="paid")
    event = mock.event("checkout.session.completed", forged)
    payload = json.dumps(event, indent=2)
    now = int(time.time())
    wrong, old, good = sign_headers([{"payload": payload, "secret": "whsec_" + secrets.token_urlsafe(24), "timestamp": now},
                                     {"payload": payload, "secret": walk.secret, "timestamp": now - 600},
                                     {"payload": payload, "secret": walk.secret, "timestamp": now}])
    walk.refused(payload, wrong, f"{where2}: signed with another secret")
    walk.refused(payload, old, f"{where2}: signed 10 minutes ago")
    changed = payload.replace('"payment_status": "paid"', '"payment_status":  "paid"')  # one space more
    walk.must(changed != payload, "the event has no payment_status to change")
    walk.refused(changed, good, f"{where2}: the body changed after signing")
    walk.refused(payload, None, f"{where2}: no Stripe-Signature header")
    order2 = Order(order_url2)
    walk.need(order2.awaiting and not order2.placed, f"{where2}: after four badly signed events the order page says "
                                                     f"{order2}, not 'Awaiting payment'")
    held2 = Listing(base, second.id).stock
    walk.need(held2 == before2.stock - 1, f"{where2}: the stock went from {before2.stock} to {held2}")

    # Expired: the stock comes back and the order no longer awaits payment.
    expired = mock.expire(session2["id"])
    walk.deliver(mock.event("checkout.session.expired", expired), f"{where2}: checkout.session.expired")
    back = Listing(base, second.id)
    walk.need(back.stock == before2.stock, f"{where2}: after checkout.session.expired the stock is {back.stock}, "
                                           f"not back to {before2.stock}")
    walk.need(second.id in sitemap_ids(base), f"{where2}: after checkout.session.expired the sitemap lacks the listing")
    order2 = Order(order_url2)
    walk.need(not order2.awaiting and not order2.placed,
              f"{where2}: after checkout.session.expired the order page says {order2}")
    walk.notes.append(f"the expired order's page says {order2.status!r}")

    # An event of another type: 200, ignored.
    pages = [Order(order_url).text, Order(order_url2).text]
    stocks = [Listing(base, first.id).stock, Listing(base, second.id).stock]
    intent = {"id": "pi_" + secrets.token_hex(12), "object": "payment_intent", "amount": before.pence,
              "currency": "gbp", "status": "requires_payment_method", "metadata": {}}
    walk.deliver(mock.event("payment_intent.created", intent), "payment_intent.created")
    walk.need([Order(order_url).text, Order(order_url2).text] == pages, "payment_intent.created changed an order's page")
    walk.need([Listing(base, first.id).stock, Listing(base, second.id).stock] == stocks,
              "payment_intent.created changed the stock")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "rehome"))
    parser.add_argument("--requests", metavar="FILE", help="also write every request the Stripe mock saw, as JSON")
    args = parser.parse_args()
    run(os.path.abspath(args.binary), args.requests)


if __name__ == "__main__":
    main()
