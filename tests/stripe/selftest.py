#!/usr/bin/env python3
"""The Stripe checks' own tools checked on their own, without the rehome binary: that the mock
(mock.py) accepts what Stripe accepts and refuses, in Stripe's error shape and as a recorded
violation, what Stripe refuses; that its answers fit Stripe's schemas; and that the webhook
signatures of Stripe's Node library (sign.mjs) are the ones Stripe's Python library accepts,
and the other way round.

- The data: openapi-subset.json has `info.version`, its source commit, the three operations,
  and every `$ref` it holds resolves inside it; fixtures-subset.json has the two fixtures;
  library-params.json names its library and API version.
- The mock, over HTTP: a valid create-session body (200, the answer echoing it, `cs_test_…`,
  `https://checkout.stripe.com/c/pay/<id>`, Σ unit_amount × quantity); GET and /expire, and
  /expire again (400); an unknown session (404 `resource_missing`); idempotent replay and
  reuse with other parameters (400 `idempotency_error`); no key and a wrong key (401); an
  unknown route (404); then one broken body for each rule — an unknown parameter at the top
  and deep down, a wrong enum, a missing `success_url`, `client_reference_id` over 200
  characters, `expires_at` under 30 minutes ahead (also the race of now + 30 min taken a
  second before sending) and over 24 hours, `GBP` in capitals, payment mode without line
  items, a line item without quantity, a unit amount that is not an integer, a metadata
  value or key too long, a total under £0.30, line items indexed from 1 — each a 400 whose
  `error.param` names the parameter, and each a violation; a malformed `Stripe-Version`
  and a JSON body are refused too; a parameter only the newer
  library lacks (`payment_method_types`) is a warning, not a violation; the answer validator
  itself finds a broken answer; the control endpoints complete and expire sessions and build
  events that fit the `event` schema.
- Signatures: each header sign.mjs prints verifies with `stripe.Webhook.construct_event`
  (Python); a changed body, another secret and a timestamp 10 minutes old do not; a header
  made here by hand (HMAC-SHA256 of "t.payload") verifies with sign.mjs's `verify`.

Usage: python3 tests/stripe/selftest.py    (needs jsonschema and stripe from
tests/requirements.txt, Node, and `npm ci` in tests/browser)
"""

import base64
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from mock import StripeMock, bracket, sign_headers, verify_headers  # noqa: E402

KEY = "sk_test_selftest_51Nxyz0123456789"
WEBHOOK_SECRET = "whsec_selftest_0123456789abcdef"


class Checks:
    def __init__(self):
        self.passed, self.failed = 0, []

    def need(self, condition, what):
        if condition:
            self.passed += 1
        else:
            self.failed.append(what)


def call(base, method, path, form=None, key=KEY, headers=None, body=None):
    """(status, JSON answer, headers) of a request to the mock."""
    data = body if body is not None else (urllib.parse.urlencode(form).encode() if form is not None else None)
    all_headers = {"Content-Type": "application/x-www-form-urlencoded"} if data is not None else {}
    if key:
        all_headers["Authorization"] = f"Bearer {key}"
    all_headers.update(headers or {})
    request = urllib.request.Request(base + path, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers


def valid_form(now, **changes):
    """A create-session body as the adapter should send it, with top-level `changes` (None removes)."""
    form = {
        "mode": "payment",
        "client_reference_id": "42",
        "customer_email": "sam.buyer@example.co.uk",
        "metadata[order_id]": "42",
        "line_items[0][price_data][currency]": "gbp",
        "line_items[0][price_data][unit_amount]": "45000",
        "line_items[0][price_data][product_data][name]": "Three-seat sofa in oatmeal linen",
        "line_items[0][quantity]": "2",
        "expires_at": str(int(now) + 31 * 60),
        "success_url": "http://127.0.0.1:8080/marketplace/orders/" + "a" * 32,
        "cancel_url": "http://127.0.0.1:8080/marketplace/orders/" + "a" * 32,
    }
    for name, value in changes.items():
        if value is None:
            form.pop(name, None)
        else:
            form[name] = value
    return form


def check_data(c, mock):
    subset = mock.docs.subset
    c.need(subset["info"].get("version"), "openapi-subset.json has no info.version")
    c.need(subset.get("x-source", "").startswith("stripe/openapi@"), "openapi-subset.json does not say its source")
    wanted = {("/v1/checkout/sessions", "post"), ("/v1/checkout/sessions/{session}", "get"),
              ("/v1/checkout/sessions/{session}/expire", "post")}
    have = {(p, m) for p, methods in subset["paths"].items() for m in methods}
    c.need(have == wanted, f"openapi-subset.json has the operations {sorted(have)}")
    schemas = subset["components"]["schemas"]
    dangling = set()

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "$ref" and v.rsplit("/", 1)[-1] not in schemas:
                    dangling.add(v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(subset)
    c.need(not dangling, f"openapi-subset.json has $refs that lead outside it: {sorted(dangling)[:5]}")
    c.need(set(mock.docs.fixtures) == {"checkout.session", "event"}, "fixtures-subset.json lacks a fixture")
    c.need(mock.docs.library.get("x-api-version"), "library-params.json has no API version")


def check_mock(c, mock, base):
    now = time.time()
    before = len(mock.problems())

    # A valid request: 200, the answer echoing it.
    status, session, headers = call(base, "POST", "/v1/checkout/sessions", valid_form(now),
                                    headers={"Idempotency-Key": "selftest-1", "Stripe-Version": "2025-08-27.basil"})
    c.need(status == 200, f"a valid create-session body answered {status}: {session}")
    sid = session.get("id", "")
    c.need(sid.startswith("cs_test_") and len(sid) <= 66, f"the session id is {sid!r}")
    c.need(session.get("url") == "https://checkout.stripe.com/c/pay/" + sid, f"the url is {session.get('url')}")
    expected = {"object": "checkout.session", "status": "open", "payment_status": "unpaid", "mode": "payment",
                "client_reference_id": "42", "customer_email": "sam.buyer@example.co.uk",
                "metadata": {"order_id": "42"}, "amount_total": 90000, "currency": "gbp",
                "expires_at": int(now) + 31 * 60}
    wrong = {k: session.get(k) for k, v in expected.items() if session.get(k) != v}
    c.need(not wrong, f"the answer differs from the request: {wrong}")
    c.need(headers.get("Stripe-Version") == "2025-08-27.basil", "the answer does not name the version asked for")
    c.need(len(mock.problems()) == before, f"a valid request made violations: {mock.problems()[before:]}")
    c.need(not mock.requests[-1]["violations"], "the valid request was recorded with violations")

    # Idempotency: replay, and reuse with other parameters.
    status, again, headers = call(base, "POST", "/v1/checkout/sessions", valid_form(now),
                                  headers={"Idempotency-Key": "selftest-1", "Stripe-Version": "2025-08-27.basil"})
    c.need(status == 200 and again.get("id") == sid and headers.get("Idempotent-Replayed") == "true",
           f"the same idempotency key and body did not replay the session ({status}, {again.get('id')})")
    status, answer, _ = call(base, "POST", "/v1/checkout/sessions", valid_form(now, client_reference_id="43"),
                             headers={"Idempotency-Key": "selftest-1"})
    c.need(status == 400 and answer.get("error", {}).get("type") == "idempotency_error",
           f"an idempotency key reused with other parameters answered {status} {answer}")
    c.need(len(mock.created()) == 1, f"{len(mock.created())} sessions were recorded as created, not 1")
    status, answer, _ = call(base, "POST", "/v1/checkout/sessions", valid_form(now, mode="purchase"),
                             headers={"Idempotency-Key": "selftest-2"})
    status, answer, _ = call(base, "POST", "/v1/checkout/sessions", valid_form(now),
                             headers={"Idempotency-Key": "selftest-2"})
    c.need(status == 200, f"a key first used with a refused body (not kept, as at Stripe) answered {status} {answer}")

    # GET, /expire, /expire again, an unknown session, an over-long id.
    status, got, _ = call(base, "GET", f"/v1/checkout/sessions/{sid}")
    c.need(status == 200 and got == session, f"GET the session answered {status}, or another session")
    status, got, _ = call(base, "GET", f"/v1/checkout/sessions/{sid}?expand[]=payment_intent")
    c.need(status == 200, f"GET with expand[]=payment_intent answered {status}: {got}")
    status, got, _ = call(base, "GET", f"/v1/checkout/sessions/{sid}?colour=red")
    c.need(status == 400 and got["error"].get("param") == "colour", f"an unknown query parameter answered {status}")
    status, got, _ = call(base, "GET", "/v1/checkout/sessions/cs_test_nothing")
    c.need(status == 404 and got["error"].get("code") == "resource_missing", f"an unknown session answered {status}")
    status, got, _ = call(base, "GET", "/v1/checkout/sessions/cs_test_" + "x" * 60)
    c.need(status == 400, f"a 68-character session id answered {status}")
    status, got, _ = call(base, "POST", f"/v1/checkout/sessions/{sid}/expire", {})
    c.need(status == 200 and got.get("status") == "expired", f"/expire answered {status} {got.get('status')}")
    status, got, _ = call(base, "POST", f"/v1/checkout/sessions/{sid}/expire", {})
    c.need(status == 400 and "error" in got, f"/expire of an expired session answered {status}")

    # The key, and the route.
    for key, what in ((None, "no key"), ("sk_test_wrong", "a wrong key")):
        count = len(mock.violations)
        status, got, _ = call(base, "POST", "/v1/checkout/sessions", valid_form(now), key=key)
        c.need(status == 401 and got.get("error", {}).get("type") == "invalid_request_error",
               f"{what} answered {status} {got}")
        c.need(len(mock.violations) == count + 1, f"{what} was not recorded as a violation")
    basic = base64.b64encode(f"{KEY}:".encode()).decode()
    status, got, _ = call(base, "POST", "/v1/checkout/sessions", valid_form(now), key=None,
                          headers={"Authorization": f"Basic {basic}"})
    c.need(status == 200, f"the key as HTTP Basic (Stripe takes it) answered {status} {got}")
    count = len(mock.violations)
    status, got, _ = call(base, "POST", "/v1/payment_intents", {"amount": "100"})
    c.need(status == 404 and "Unrecognized request URL" in got.get("error", {}).get("message", "")
           and len(mock.violations) == count + 1, f"an unknown route answered {status} {got}")

    # One broken body for each rule: 400, error.param naming it, a violation.
    long_text = "x" * 501
    broken = [
        ("an unknown parameter", valid_form(now, colour="red"), "colour"),
        ("an unknown nested parameter", dict(valid_form(now), **{"line_items[0][price_data][colour]": "red"}),
         "line_items[0][price_data][colour]"),
        ("a mode not in the enum", valid_form(now, mode="purchase"), "mode"),
        ("no success_url", valid_form(now, success_url=None), "success_url"),
        ("a 201-character client_reference_id", valid_form(now, client_reference_id="7" * 201), "client_reference_id"),
        ("expires_at 29 minutes ahead", valid_form(now, expires_at=str(int(now) + 29 * 60)), "expires_at"),
        ("expires_at = now + 30 min, now taken a second before sending",
         valid_form(now, expires_at=str(int(time.time()) - 1 + 30 * 60)), "expires_at"),
        ("expires_at 25 hours ahead", valid_form(now, expires_at=str(int(now) + 25 * 3600)), "expires_at"),
        ("currency in capitals", dict(valid_form(now), **{"line_items[0][price_data][currency]": "GBP"}),
         "line_items[0][price_data][currency]"),
        ("payment mode without line items",
         {k: v for k, v in valid_form(now).items() if not k.startswith("line_items")}, "line_items"),
        ("a line item without quantity",
         {k: v for k, v in valid_form(now).items() if k != "line_items[0][quantity]"}, "line_items[0][quantity]"),
        ("a unit amount that is not an integer",
         dict(valid_form(now), **{"line_items[0][price_data][unit_amount]": "450.00"}),
         "line_items[0][price_data][unit_amount]"),
        ("a metadata value of 501 characters", dict(valid_form(now), **{"metadata[note]": long_text}), "metadata[note]"),
        ("a metadata key of 41 characters", dict(valid_form(now), **{"metadata[" + "k" * 41 + "]": "v"}),
         "metadata[" + "k" * 41 + "]"),
        ("a total under £0.30", dict(valid_form(now), **{"line_items[0][price_data][unit_amount]": "14"}), "line_items"),
        ("line_items indexed from 1", {k.replace("line_items[0]", "line_items[1]"): v
                                       for k, v in valid_form(now).items()}, "line_items"),
    ]
    for what, form, param in broken:
        count = len(mock.violations)
        status, got, _ = call(base, "POST", "/v1/checkout/sessions", form)
        error = got.get("error", {})
        c.need(status == 400 and error.get("type") == "invalid_request_error" and error.get("param") == param,
               f"{what}: answered {status} {error}, not 400 naming {param}")
        c.need(len(mock.violations) > count, f"{what}: not recorded as a violation")
    count = len(mock.violations)
    status, got, _ = call(base, "POST", "/v1/checkout/sessions", valid_form(now), headers={"Stripe-Version": "basil"})
    c.need(status == 400 and len(mock.violations) == count + 1, f"Stripe-Version 'basil' answered {status}")
    status, got, _ = call(base, "POST", "/v1/checkout/sessions", body=json.dumps({"mode": "payment"}).encode(),
                          headers={"Content-Type": "application/json"})
    c.need(status == 400, f"a JSON body answered {status}")

    # Only the newer library lacks it: a warning, not a violation.
    count, warned = len(mock.violations), len(mock.warnings)
    status, got, _ = call(base, "POST", "/v1/checkout/sessions", dict(valid_form(now), **{"payment_method_types[0]": "card"}))
    c.need(status == 200 and len(mock.violations) == count and len(mock.warnings) > warned,
           f"payment_method_types[0]=card answered {status}, or made a violation, or no warning")

    # The answer validator finds a broken answer (the mock's own answers are checked with it).
    operation = next(op for m, _, t, op in mock.docs.operations if op["operationId"] == "PostCheckoutSessions")
    bad = dict(session, status="pending", amount_total="90000")
    del bad["created"]
    found = {bracket(list(e.absolute_path)) or e.validator for e in mock.docs.response_validator(operation).iter_errors(bad)}
    c.need({"status", "amount_total", "required"} <= found, f"the answer validator found only {found} in a broken answer")

    # The control endpoints.
    status, created, _ = call(base, "POST", "/v1/checkout/sessions", valid_form(time.time(), client_reference_id="44"))
    status, done, _ = call(base, "POST", f"/__mock/sessions/{created['id']}/complete", key=None)
    c.need(status == 200 and done.get("status") == "complete" and done.get("payment_status") == "paid"
           and done.get("payment_intent", "").startswith("pi_"), f"completing a session gave {status} {done}")
    status, event, _ = call(base, "GET", f"/__mock/events/checkout.session.completed/{created['id']}", key=None)
    c.need(status == 200 and event.get("object") == "event" and event["data"]["object"]["id"] == created["id"]
           and event.get("api_version") == "2025-08-27.basil", f"the event is {event}")
    status, record, _ = call(base, "GET", "/__mock/requests", key=None)
    c.need(status == 200 and len(record["requests"]) == len(mock.requests), "GET /__mock/requests does not list them")
    c.need(not mock.mock_errors, f"the mock's own answers break Stripe's schemas: {mock.mock_errors[:5]}")


def check_signatures(c):
    try:
        import stripe
    except ImportError:
        sys.exit("Stripe's Python library is missing: python3 -m pip install -r tests/requirements.txt")
    now = int(time.time())
    payloads = [json.dumps({"id": f"evt_selftest_{i}", "object": "event", "type": "checkout.session.completed",
                            "data": {"object": {"id": "cs_test_x", "amount_total": 45000 + i}}}) for i in range(3)]
    items = [{"payload": payloads[0], "secret": WEBHOOK_SECRET, "timestamp": now},
             {"payload": payloads[1], "secret": WEBHOOK_SECRET, "timestamp": now - 600},
             {"payload": payloads[2], "secret": WEBHOOK_SECRET}]
    headers = sign_headers(items)
    c.need(len(headers) == 3 and all(h.startswith("t=") and ",v1=" in h for h in headers),
           f"sign.mjs printed {headers}")

    def python_verifies(payload, header, secret, tolerance=300):
        try:
            stripe.Webhook.construct_event(payload, header, secret, tolerance)
            return True
        except (stripe.SignatureVerificationError, ValueError):
            return False

    c.need(python_verifies(payloads[0], headers[0], WEBHOOK_SECRET), "the Python library refuses sign.mjs's signature")
    c.need(python_verifies(payloads[2], headers[2], WEBHOOK_SECRET), "the Python library refuses a signature of now")
    c.need(not python_verifies(payloads[1], headers[1], WEBHOOK_SECRET),
           "the Python library takes a signature 10 minutes old")
    c.need(python_verifies(payloads[1], headers[1], WEBHOOK_SECRET, tolerance=900),
           "the Python library refuses a 10-minute-old signature even with a 15-minute tolerance")
    c.need(not python_verifies(payloads[0].replace("45000", "45001"), headers[0], WEBHOOK_SECRET),
           "the Python library takes a changed body")
    c.need(not python_verifies(payloads[0], headers[0], "whsec_another"), "the Python library takes another secret")
    # And the other way: a header made by hand, checked by sign.mjs.
    mac = hmac.new(WEBHOOK_SECRET.encode(), f"{now}.{payloads[0]}".encode(), hashlib.sha256).hexdigest()
    by_hand = f"t={now},v1={mac}"
    c.need(by_hand == headers[0], "the HMAC made here differs from the library's")
    verdicts = verify_headers([{"payload": payloads[0], "header": by_hand, "secret": WEBHOOK_SECRET},
                               {"payload": payloads[0] + " ", "header": by_hand, "secret": WEBHOOK_SECRET},
                               {"payload": payloads[1], "header": headers[1], "secret": WEBHOOK_SECRET},
                               {"payload": payloads[0], "header": "", "secret": WEBHOOK_SECRET}])
    c.need(verdicts[0].get("ok") is True and verdicts[0].get("id") == "evt_selftest_0",
           f"sign.mjs verify refuses a good header: {verdicts[0]}")
    c.need([v.get("ok") for v in verdicts[1:]] == [False, False, False],
           f"sign.mjs verify takes a changed body, an old timestamp or no header: {verdicts[1:]}")


def main():
    c = Checks()
    mock = StripeMock(KEY)
    base = mock.start()
    try:
        check_data(c, mock)
        check_mock(c, mock, base)
    finally:
        mock.stop()
    check_signatures(c)
    for failure in c.failed:
        print("FAIL:", failure)
    print(f"stripe selftest (OpenAPI {mock.docs.version}, {mock.docs.library['x-source']}): "
          f"{c.passed} passed, {len(c.failed)} failed")
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
