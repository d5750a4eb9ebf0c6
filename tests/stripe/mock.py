#!/usr/bin/env python3
"""A stand-in for Stripe's API that holds every request to Stripe's own published description
of it: the three Checkout Session operations of `openapi-subset.json` (cut from Stripe's
OpenAPI document by extract.py), the parameters Stripe's Python library declares
(`library-params.json`), and the rules Stripe's documentation states beyond both. Whatever
Stripe would refuse, the mock refuses the same way (a 4xx in Stripe's error shape,
`{"error": {"type": "invalid_request_error", "code": …, "param": …, "message": …}}`) AND
records as a violation, so a check that asks afterwards fails loudly even when the caller
swallowed the refusal.

For each request:

- `Authorization` must carry the secret key the mock was started with, as Stripe takes it:
  `Bearer sk_…`, or HTTP Basic with the key as the user name (else 401). `Stripe-Version`, if
  sent, must look like an API version (`2025-08-27.basil`, `2023-08-16`) and is recorded;
  `Idempotency-Key` is optional, at most 255 characters, and works as at Stripe: the same key
  with the same parameters replays the first answer (`Idempotent-Replayed: true`), with other
  parameters it is refused (400 `idempotency_error`); a request refused by validation leaves
  its key unused.
- The operation is found by method and path template (else 404 "Unrecognized request URL",
  and a violation: the adapter should call nothing else).
- The body must be `application/x-www-form-urlencoded`, in Stripe's bracket notation
  (`line_items[0][price_data][currency]=gbp`, `metadata[order_id]=7`, `expand[]=x`). It is
  decoded into nested JSON guided by the schema (numeric indices make an array where the
  schema has one), each string turned into the integer, number or boolean the schema asks
  for (form encoding sends everything as text), and validated with `jsonschema` against the
  operation's `application/x-www-form-urlencoded` schema: unknown parameters, enums,
  required fields, maxLength. Stripe refuses an unknown parameter at any depth
  ("Received unknown parameter: line_items[0][foo]") though its document writes
  `additionalProperties: false` on the top level only, so every object of a request schema
  that lists properties and says nothing of others is closed the same way. An enum marked
  `x-stripeBypassValidation` is left open (Stripe lets new values of those through).
- The OpenAPI document is older than today's API (see extract.py): a parameter it does not
  know but Stripe's Python library (newer) does is a warning, not a violation. Whatever the
  library's schema finds is a warning too (it describes the newest API version, which the
  adapter may not pin): e.g. `payment_method_types` is gone from 2026-10-28.endive.
- Stripe's rules that no schema says (https://docs.stripe.com/api/checkout/sessions/create,
  /api/metadata, /currencies#minimum-and-maximum-charge-amounts, /api/idempotent_requests),
  each a violation:
  * `expires_at` between 30 minutes and 24 hours after the session's creation, i.e. after
    the moment the mock received the request: an adapter that sends exactly now + 30 min
    loses that race (Stripe's clock is later than its own), so it must leave a margin;
  * `mode=payment` (and `subscription`) needs `line_items`; each line item gives one of
    `price` or `price_data`, and a `quantity` of at least 1; `price_data` gives one of
    `product` or `product_data`, and one of `unit_amount` or `unit_amount_decimal`; all in
    one currency;
  * `success_url` is required in hosted mode (no `ui_mode`, or `hosted`/`hosted_page`) and
    not allowed in embedded mode; both URLs absolute http(s) (http is test mode only);
  * currencies are three lower-case letters; the total is at least the currency's minimum
    charge (£0.30 for gbp) and at most 99,999,999 of its minor unit;
  * metadata: at most 50 keys, each at most 40 characters and without square brackets,
    each value at most 500 characters;
  * `customer_email` looks like an address, and is not given with `customer`.
- The answer is built from the `checkout.session` fixture of the same commit as the
  document (`fixtures-subset.json`), with the request's values echoed (`mode`,
  `client_reference_id`, `customer_email`, `metadata`, `expires_at`, `success_url`,
  `cancel_url`, `currency`, `amount_total` = Σ unit_amount × quantity), a fresh id
  `cs_test_…` and `url` `https://checkout.stripe.com/c/pay/<id>`; it is itself validated
  against the operation's 200 schema (`nullable` read as OpenAPI 3.0 means it), and so is
  every error answer against `error`: a mismatch is a mock error, which fails the check too.
  GET answers the stored session; `/expire` expires an open session (else 400, as Stripe).

Control endpoints (no key needed): `GET /__mock/requests` (every request recorded, with the
violations, warnings and mock errors), `GET /__mock/sessions/{id}`, `POST
/__mock/sessions/{id}/complete` (paid: `complete`/`paid`, a payment intent, the customer's
details), `POST /__mock/sessions/{id}/expire` (as Stripe expires one on its own), and
`GET /__mock/events/{type}/{id}` (the event Stripe would send about that session, validated
against `event`).

Importable (`StripeMock(key).start()` returns the base URL; `event()` builds an event and
`sign_headers()` signs payloads with Stripe's Node library through sign.mjs), or standalone:

    python3 tests/stripe/mock.py [--key sk_test_…] [--port 12111]

Needs `jsonschema` (tests/requirements.txt); signing needs Node and `npm ci` in tests/browser.
"""

import argparse
import base64
import copy
import decimal
import hashlib
import json
import os
import re
import secrets
import string
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUBSET = os.path.join(HERE, "openapi-subset.json")
FIXTURES = os.path.join(HERE, "fixtures-subset.json")
LIBRARY = os.path.join(HERE, "library-params.json")
SIGN_JS = os.path.join(HERE, "sign.mjs")
NODE_STRIPE = os.path.join(ROOT, "tests", "browser", "node_modules", "stripe")

CHECKOUT_URL = "https://checkout.stripe.com/c/pay/"
VERSION_FORMAT = re.compile(r"^\d{4}-\d{2}-\d{2}(\.[a-z]+)?$")
KEY_FORMAT = re.compile(r"^[^\[\]]+(\[[^\[\]]*\])*$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
CURRENCY = re.compile(r"^[a-z]{3}$")
# https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts (minor units)
MINIMUM_CHARGE = {"gbp": 30, "eur": 50, "usd": 50}
MAXIMUM_CHARGE = 99_999_999
HALF_HOUR, DAY = 30 * 60, 24 * 60 * 60
DOCS = "https://docs.stripe.com/error-codes/"


def random_id(prefix, length):
    alphabet = string.ascii_letters + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


def bracket(path):
    """['line_items', 0, 'price_data'] → 'line_items[0][price_data]', as Stripe names a param."""
    path = [str(p) for p in path]
    return path[0] + "".join(f"[{p}]" for p in path[1:]) if path else ""


# ---- the documents ----

def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def openapi_to_json_schema(node, request=False):
    """An OpenAPI 3.0 schema as JSON Schema 2020-12: `nullable: true` becomes "or null". For a
    request (`request=True`), objects that list properties and are silent on others are closed,
    and enums Stripe marks `x-stripeBypassValidation` are left open."""
    if isinstance(node, list):
        return [openapi_to_json_schema(n, request) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "nullable" and isinstance(value, bool):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: openapi_to_json_schema(s, request) for name, s in value.items()}
        else:
            out[key] = openapi_to_json_schema(value, request)
    if request:
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        if out.get("x-stripeBypassValidation") and "enum" in out:
            out["x-known"] = out.pop("enum")
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


class Documents:
    """The subset, the fixtures and the library's parameters, with validators ready."""

    def __init__(self, subset=SUBSET, fixtures=FIXTURES, library=LIBRARY):
        self.subset = load(subset)
        self.fixtures = load(fixtures)["resources"]
        self.library = load(library)
        self.version = self.subset["info"]["version"]
        components = openapi_to_json_schema(self.subset["components"])
        self.operations = []  # (method, regex, template, operation)
        for template, methods in self.subset["paths"].items():
            pattern = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$"
            for method, operation in methods.items():
                self.operations.append((method.upper(), re.compile(pattern), template, operation))
        self._components = components
        self._validators = {}
        self.library_validator = jsonschema.Draft202012Validator(self.library)

    def validator(self, schema):
        key = json.dumps(schema, sort_keys=True)
        if key not in self._validators:
            root = dict(schema, components=self._components)
            self._validators[key] = jsonschema.Draft202012Validator(root)
        return self._validators[key]

    def response_validator(self, operation, status="200"):
        responses = operation["responses"]
        answer = responses.get(status) or responses["default"]
        schema = answer["content"]["application/json"]["schema"]
        return self.validator(openapi_to_json_schema(schema))

    def schema_validator(self, name):
        return self.validator({"$ref": f"#/components/schemas/{name}"})

    def request_schema(self, operation):
        """The operation's form body and query parameters as one closed JSON Schema."""
        schema = {"type": "object", "properties": {}, "additionalProperties": False}
        body = operation.get("requestBody", {}).get("content", {}).get("application/x-www-form-urlencoded")
        if body:
            schema = openapi_to_json_schema(body["schema"], request=True)
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query":
                schema.setdefault("properties", {})[parameter["name"]] = openapi_to_json_schema(
                    parameter["schema"], request=True)
                if parameter.get("required"):
                    schema.setdefault("required", []).append(parameter["name"])
        return schema

    def path_schemas(self, operation):
        return {p["name"]: p["schema"] for p in operation.get("parameters", []) if p["in"] == "path"}


# ---- Stripe's form encoding ----

class FormError(Exception):
    """A body Stripe cannot read as parameters; `param` names the one at fault, if any."""

    def __init__(self, message, param=None):
        super().__init__(message)
        self.param = param


def decode_form(text):
    """Stripe's bracket notation into nested dicts: `a[b][0][c]=v` → {"a": {"b": {"0": {"c": "v"}}}};
    `a[]=v` appends (kept as a list). Arrays are made later, where the schema has one."""
    root = {}
    for key, value in parse_qsl(text, keep_blank_values=True, strict_parsing=False):
        if not KEY_FORMAT.match(key):
            raise FormError(f"Invalid parameter name: {key}")
        parts = [key.split("[", 1)[0]] + re.findall(r"\[([^\[\]]*)\]", key)
        node = root
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                raise FormError(f"Invalid array: {key}")
            if part == "":
                raise FormError(f"Invalid parameter name: {key} (empty brackets are only for the last part)")
            if last:
                if part in node and not (isinstance(node[part], list) and parts[-1] == ""):
                    raise FormError(f"Received the parameter {key} twice")
                node[part] = value
            elif i == len(parts) - 2 and parts[-1] == "":
                node.setdefault(part, [])
                if not isinstance(node[part], list):
                    raise FormError(f"Invalid array: {key}")
                node[part].append(value)
                break
            else:
                node = node.setdefault(part, {})
                if not isinstance(node, (dict, list)):
                    raise FormError(f"Received {key} where a scalar was given already")
    return root


def resolve(schema, root):
    while isinstance(schema, dict) and "$ref" in schema and len(schema) == 1:
        pointer = schema["$ref"]
        if not pointer.startswith("#/"):
            return {}
        node = root
        for part in pointer[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        schema = node
    return schema


def kinds(schema, root):
    """The alternatives of a schema (its anyOf/oneOf, resolved), or itself."""
    schema = resolve(schema, root)
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if not alternatives:
        return [schema]
    return [k for a in alternatives for k in kinds(a, root)]


def type_of(schema):
    kind = schema.get("type")
    if kind is None and ("properties" in schema or "additionalProperties" in schema):
        return "object"
    return kind


def shape(value, schema, root, path=()):
    """The decoded form value turned into what `schema` asks for: digit-keyed objects into
    arrays (indices 0, 1, 2, …, else FormError), strings into integers, numbers and booleans.
    A value that fits nothing is left as it is, for the validator to name."""
    options = kinds(schema, root)
    if isinstance(value, dict):
        digits = value and all(k.isdigit() for k in value)
        arrays = [o for o in options if type_of(o) == "array"]
        if digits and arrays:
            indices = sorted(int(k) for k in value)
            if indices != list(range(len(indices))) or any(k != str(int(k)) for k in value):
                raise FormError(f"Invalid array: {bracket(path)} must be indexed 0, 1, 2, … "
                                f"(it was indexed {', '.join(sorted(value, key=int))})", bracket(path))
            items = arrays[0].get("items", {})
            return [shape(value[str(i)], items, root, (*path, i)) for i in indices]
        objects = [o for o in options if type_of(o) == "object"]
        if not objects:
            return value
        best = max(objects, key=lambda o: len(set(value) & set(o.get("properties", {}))))
        properties = best.get("properties", {})
        others = best.get("additionalProperties")
        return {k: shape(v, properties.get(k, others if isinstance(others, dict) else {}), root, (*path, k))
                for k, v in value.items()}
    if isinstance(value, list):
        arrays = [o for o in options if type_of(o) == "array"]
        items = arrays[0].get("items", {}) if arrays else {}
        return [shape(v, items, root, (*path, i)) for i, v in enumerate(value)]
    # a string: an enum naming it (or "" for an emptyable field) keeps it; else the scalar asked for
    if any("enum" in option and value in option["enum"] for option in options):
        return value
    for option in options:
        kind = type_of(option)
        if kind == "integer" and re.fullmatch(r"-?\d+", value):
            return int(value)
        if kind == "number" and re.fullmatch(r"-?\d+(\.\d+)?", value):
            return float(value) if "." in value else int(value)
        if kind == "boolean" and value in ("true", "false"):
            return value == "true"
    return value


def findings(validator, instance):
    """(param, code, message) for each way `instance` breaks the validator's schema."""
    found = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        path = list(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            schema = error.schema
            known = set(schema.get("properties", {}))
            for name in sorted(set(error.instance) - known):
                param = bracket(path + [name])
                found.append((param, "parameter_unknown", f"Received unknown parameter: {param}"))
        elif error.validator == "required" and isinstance(error.instance, dict):
            for name in error.validator_value:
                if name not in error.instance:
                    param = bracket(path + [name])
                    found.append((param, "parameter_missing", f"Missing required param: {param}."))
        elif error.validator == "type" and error.validator_value == "integer":
            found.append((bracket(path), "parameter_invalid_integer", f"Invalid integer: {error.instance}"))
        elif error.validator == "maxLength":
            found.append((bracket(path), "parameter_invalid",
                          f"Invalid string: {str(error.instance)[:40]}...; must be at most "
                          f"{error.validator_value} characters"))
        elif error.validator == "enum":
            allowed = ", ".join(map(str, error.validator_value))
            found.append((bracket(path), "parameter_invalid",
                          f"Invalid {bracket(path)}: must be one of {allowed}"))
        elif error.validator in ("anyOf", "oneOf") and error.context:
            deepest = jsonschema.exceptions.best_match(error.context)
            found.append((bracket(path), "parameter_invalid",
                          f"Invalid {bracket(path)}: {deepest.message}"))
        else:
            found.append((bracket(path), "parameter_invalid", f"Invalid {bracket(path) or 'request'}: {error.message}"))
    return found


# ---- Stripe's rules beyond the schema ----

def checkout_rules(params, received):
    """(param, message) for each rule of Stripe's documentation a create-session request breaks."""
    broken = []
    expires_at = params.get("expires_at")
    if isinstance(expires_at, int):
        ahead = expires_at - received
        if ahead < HALF_HOUR:
            broken.append(("expires_at", "The `expires_at` timestamp must be at least 30 minutes from Checkout "
                                         f"Session creation (it was {ahead:.1f} s after the request arrived)."))
        if ahead > DAY:
            broken.append(("expires_at", "The `expires_at` timestamp must be less than 24 hours from Checkout "
                                         f"Session creation (it was {ahead:.0f} s after the request arrived)."))
    mode = params.get("mode", "payment")
    items = params.get("line_items")
    if mode in ("payment", "subscription") and not items:
        broken.append(("line_items", f"`line_items` is required in `{mode}` mode."))
    ui_mode = params.get("ui_mode", "hosted")
    if ui_mode in ("hosted", "hosted_page") and not params.get("success_url"):
        broken.append(("success_url", "Missing required param: success_url (hosted Checkout needs it)."))
    if ui_mode not in ("hosted", "hosted_page") and ("success_url" in params or "cancel_url" in params):
        broken.append(("success_url", f"`success_url` and `cancel_url` are not allowed with ui_mode={ui_mode}."))
    for name in ("success_url", "cancel_url", "return_url"):
        url = params.get(name)
        if isinstance(url, str) and url != "":
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                broken.append((name, f"Not a valid URL: {name} {url!r}"))
    currencies = {}  # currency → the param that gave it
    total, totalled = 0, True
    if "currency" in params:
        currencies[params["currency"]] = "currency"
    if isinstance(items, list):
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            where = f"line_items[{i}]"
            if ("price" in item) == ("price_data" in item):
                broken.append((where, f"{where}: give exactly one of `price` and `price_data`."))
            quantity = item.get("quantity")
            if quantity is None:
                broken.append((f"{where}[quantity]", f"Quantity is required. Add `quantity` to `{where}`."))
            elif isinstance(quantity, int) and quantity < 1:
                broken.append((f"{where}[quantity]", f"{where}[quantity] must be at least 1."))
            data = item.get("price_data")
            if isinstance(data, dict):
                if ("product" in data) == ("product_data" in data):
                    broken.append((f"{where}[price_data]", f"{where}[price_data]: give exactly one of `product` "
                                                           "and `product_data`."))
                if ("unit_amount" in data) == ("unit_amount_decimal" in data):
                    broken.append((f"{where}[price_data]", f"{where}[price_data]: give exactly one of `unit_amount` "
                                                           "and `unit_amount_decimal`."))
                if "currency" in data:
                    currencies.setdefault(data["currency"], f"{where}[price_data][currency]")
                amount = unit_amount(data)
                if amount is not None and amount < 0:
                    broken.append((f"{where}[price_data][unit_amount]", "unit_amount must be at least 0."))
                if amount is not None and isinstance(quantity, int):
                    total += amount * quantity
                else:
                    totalled = False
            else:
                totalled = False
                metadata = (data.get("product_data") or {}).get("metadata") if isinstance(
                    data.get("product_data"), dict) else None
                broken += metadata_rules(metadata, f"{where}[price_data][product_data][metadata]")
    for currency, param in currencies.items():
        if isinstance(currency, str) and not CURRENCY.match(currency):
            broken.append((param, f"Invalid currency: {currency}. Stripe's currencies are three lower-case "
                                  "letters (ISO 4217), e.g. gbp."))
    if len(currencies) > 1:
        broken.append(("line_items", f"All line items must use the same currency, not {sorted(map(str, currencies))}."))
    if mode == "payment" and isinstance(items, list) and items and totalled and len(currencies) == 1:
        currency = next(iter(currencies))
        least = MINIMUM_CHARGE.get(currency)
        if least is not None and total < least:
            broken.append(("line_items", f"The Checkout Session's total amount due must add up to at least "
                                         f"{least} {currency} minor units (it is {total})."))
        if total > MAXIMUM_CHARGE:
            broken.append(("line_items", f"The total {total} is over the largest amount Stripe charges, "
                                         f"{MAXIMUM_CHARGE}."))
    broken += metadata_rules(params.get("metadata"), "metadata")
    broken += metadata_rules((params.get("payment_intent_data") or {}).get("metadata")
                             if isinstance(params.get("payment_intent_data"), dict) else None,
                             "payment_intent_data[metadata]")
    email = params.get("customer_email")
    if email is not None and (not isinstance(email, str) or not EMAIL.match(email)):
        broken.append(("customer_email", f"Invalid email address: {email}"))
    if email is not None and "customer" in params:
        broken.append(("customer_email", "You may only specify one of these parameters: customer, customer_email."))
    return broken


def metadata_rules(metadata, where):
    """https://docs.stripe.com/api/metadata: 50 keys, keys up to 40 characters without square
    brackets, values up to 500 characters."""
    if not isinstance(metadata, dict):
        return []
    broken = []
    if len(metadata) > 50:
        broken.append((where, f"{where}: at most 50 keys (there are {len(metadata)})."))
    for key, value in metadata.items():
        if len(key) > 40 or "[" in key or "]" in key:
            broken.append((f"{where}[{key}]", f"Invalid metadata key {key!r}: at most 40 characters, no square brackets."))
        if isinstance(value, str) and len(value) > 500:
            broken.append((f"{where}[{key}]", f"Metadata values can have up to 500 characters ({where}[{key}] has "
                                              f"{len(value)})."))
    return broken


def unit_amount(data):
    if isinstance(data.get("unit_amount"), int):
        return data["unit_amount"]
    try:
        return int(decimal.Decimal(str(data["unit_amount_decimal"])).to_integral_value(decimal.ROUND_HALF_EVEN))
    except (KeyError, decimal.InvalidOperation):
        return None


# ---- the mock ----

class StripeMock:
    """The mock's state: sessions, recorded requests, violations. `start()` serves it on a free
    port of 127.0.0.1 in a thread and returns its base URL; `stop()` ends it."""

    def __init__(self, secret_key, documents=None, clock=time.time):
        self.secret_key = secret_key
        self.docs = documents or Documents()
        self.clock = clock
        self.lock = threading.Lock()
        self.sessions = {}
        self.requests = []
        self.violations = []   # what Stripe would refuse, or what the adapter must not do
        self.warnings = []     # what only the newer library finds, or a parameter the older document lacks
        self.mock_errors = []  # answers of the mock that break Stripe's own schema (a bug here)
        self.idempotency = {}
        self.server = None
        self.thread = None
        self.stripe_versions = set()

    # -- life --
    def start(self, host="127.0.0.1", port=0):
        mock = self

        class Handler(RequestHandler):
            pass

        Handler.mock = mock
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="stripe-mock", daemon=True)
        self.thread.start()
        return self.base_url

    @property
    def base_url(self):
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self):
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def problems(self):
        """Everything that should fail a check: violations and mock errors."""
        with self.lock:
            return list(self.violations) + [f"mock error: {e}" for e in self.mock_errors]

    def created(self):
        """The recorded create-session requests that Stripe would have accepted, oldest first."""
        with self.lock:
            return [r for r in self.requests if r["operation"] == "PostCheckoutSessions" and r["status"] == 200
                    and not r.get("replayed")]

    # -- sessions --
    def new_session(self, params, now):
        session = copy.deepcopy(self.docs.fixtures["checkout.session"])
        sid = random_id("cs_test_a1", 56)
        items = params.get("line_items") or []
        currencies = {i.get("price_data", {}).get("currency") for i in items if isinstance(i, dict)} - {None}
        total = sum((unit_amount(i.get("price_data", {})) or 0) * (i.get("quantity") or 0)
                    for i in items if isinstance(i, dict))
        metadata = {k: v for k, v in (params.get("metadata") or {}).items() if v != ""}
        session.update({
            "id": sid,
            "object": "checkout.session",
            "created": int(now),
            "expires_at": params.get("expires_at", int(now) + DAY),
            "livemode": False,
            "mode": params.get("mode", "payment"),
            "client_reference_id": params.get("client_reference_id"),
            "customer_email": params.get("customer_email"),
            "customer": params.get("customer"),
            "customer_details": None,
            "metadata": metadata,
            "success_url": params.get("success_url"),
            "cancel_url": params.get("cancel_url"),
            "url": CHECKOUT_URL + sid,
            "status": "open",
            "payment_status": "unpaid",
            "payment_intent": None,
            "currency": params.get("currency") or (next(iter(currencies)) if len(currencies) == 1 else None),
            "amount_subtotal": total,
            "amount_total": total,
            "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0},
            "payment_method_types": params.get("payment_method_types") or ["card"],
            "locale": params.get("locale"),
            "submit_type": params.get("submit_type"),
            "billing_address_collection": params.get("billing_address_collection"),
            "allow_promotion_codes": params.get("allow_promotion_codes"),
        })
        return session

    def complete(self, sid):
        """The buyer paid: what Stripe's session then says."""
        with self.lock:
            session = self.sessions.get(sid)
            if session is None:
                return None
            session.update({
                "status": "complete",
                "payment_status": "paid",
                "payment_intent": random_id("pi_", 24),
                "url": None,
                "customer_details": {"address": None, "email": session.get("customer_email") or "buyer@example.com",
                                     "name": None, "phone": None, "tax_exempt": "none", "tax_ids": []},
            })
            return copy.deepcopy(session)

    def expire(self, sid):
        """Stripe expired the session (its `expires_at` passed, or /expire was called)."""
        with self.lock:
            session = self.sessions.get(sid)
            if session is None:
                return None
            session.update({"status": "expired", "url": None})
            return copy.deepcopy(session)

    def session(self, sid):
        with self.lock:
            found = self.sessions.get(sid)
            return copy.deepcopy(found) if found else None

    def event(self, kind, obj, api_version=None):
        """The event Stripe sends about `obj`, shaped as the `event` fixture, checked against the
        `event` schema. Its `api_version` is the version the adapter sent, else the document's."""
        event = copy.deepcopy(self.docs.fixtures["event"])
        with self.lock:
            versions = sorted(self.stripe_versions)
        event.update({
            "id": random_id("evt_", 24),
            "object": "event",
            "api_version": api_version or (versions[-1] if versions else self.docs.version),
            "created": int(self.clock()),
            "data": {"object": obj},
            "livemode": False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            "type": kind,
        })
        for error in self.docs.schema_validator("event").iter_errors(event):
            self.mock_error(f"the {kind} event breaks the event schema at {bracket(list(error.absolute_path))}: "
                            f"{error.message}")
        return event

    def mock_error(self, text):
        with self.lock:
            self.mock_errors.append(text)

    # -- one API request --
    def handle(self, method, target, headers, body):
        """(status, headers, JSON answer) of an API request; records it."""
        received = self.clock()
        headers = {k.lower(): v for k, v in headers.items()}  # HTTP names are case-blind (reqwest sends lower case)
        parts = urlsplit(target)
        path = unquote(parts.path)
        record = {"time": received, "method": method, "path": path, "query": parts.query,
                  "headers": {k: v for k, v in headers.items()
                              if k in ("idempotency-key", "stripe-version", "content-type", "user-agent",
                                       "stripe-account")},
                  "body": body.decode("utf-8", "replace"), "operation": None, "params": None,
                  "violations": [], "warnings": []}
        status, answer, extra = self.answer(method, path, parts.query, headers, body, received, record)
        record["status"], record["response"] = status, answer
        with self.lock:
            self.requests.append(record)
            where = f"{method} {path}"
            self.violations += [f"{where}: {v}" for v in record["violations"]]
            self.warnings += [f"{where}: {w}" for w in record["warnings"]]
        if status >= 400:
            for error in self.docs.schema_validator("error").iter_errors(answer):
                self.mock_error(f"the error answer breaks the error schema: {error.message}")
        response_headers = {"Request-Id": random_id("req_", 14),
                            "Stripe-Version": headers.get("stripe-version") or self.docs.version, **extra}
        return status, response_headers, answer

    def answer(self, method, path, query, headers, body, received, record):
        violations = record["violations"]

        def refuse(status, message, code=None, param=None, kind="invalid_request_error", violation=True):
            error = {"type": kind, "message": message}
            if code:
                error["code"], error["doc_url"] = code, DOCS + code.replace("_", "-")
            if param:
                error["param"] = param
            if violation:
                violations.append(f"{status} {message}")
            return status, {"error": error}, {}

        # The key, as Stripe takes it: Bearer, or Basic with the key as the user name.
        auth = headers.get("authorization", "")
        given = None
        if auth.startswith("Bearer "):
            given = auth[len("Bearer "):].strip()
        elif auth.startswith("Basic "):
            try:
                given = base64.b64decode(auth[len("Basic "):]).decode().split(":", 1)[0]
            except (ValueError, UnicodeDecodeError):
                given = None
        if not given:
            return refuse(401, "You did not provide an API key. You need to provide your API key in the "
                               "Authorization header, using Bearer auth (e.g. 'Authorization: Bearer "
                               "YOUR_SECRET_KEY').")
        if given != self.secret_key:
            return refuse(401, f"Invalid API Key provided: {given[:8]}{'*' * max(0, len(given) - 12)}{given[-4:]}")
        version = headers.get("stripe-version")
        if version is not None:
            record["stripe_version"] = version
            if not VERSION_FORMAT.match(version):
                return refuse(400, f"Invalid Stripe API version: {version}", code="invalid_stripe_api_version")
            with self.lock:
                self.stripe_versions.add(version)
        key = headers.get("idempotency-key")
        if key is not None and (len(key) > 255 or not key.strip()):
            return refuse(400, "Idempotency keys must be 1 to 255 characters long.", kind="idempotency_error")

        for op_method, pattern, template, operation in self.docs.operations:
            found = pattern.match(path)
            if op_method == method and found:
                break
        else:
            return refuse(404, f"Unrecognized request URL ({method}: {path}). Please see https://stripe.com/docs "
                               "or we can help at https://support.stripe.com/.")
        record["operation"] = operation["operationId"]

        # Idempotency: the same key and parameters replay the first answer; others are refused.
        fingerprint = hashlib.sha256(method.encode() + b" " + path.encode() + b"?" + query.encode() + b"\n"
                                     + body).hexdigest()
        if method == "POST" and key is not None:
            with self.lock:
                earlier = self.idempotency.get(key)
            if earlier is not None:
                if earlier[0] != fingerprint:
                    return refuse(400, "Keys for idempotent requests can only be used with the same parameters "
                                       "they were first used with. Try using a key other than "
                                       f"'{key}' if you meant to execute a different request.",
                                  kind="idempotency_error")
                record["replayed"] = True
                return earlier[1], copy.deepcopy(earlier[2]), {"Idempotent-Replayed": "true", "Idempotency-Key": key}

        status, answer, extra = self.operation(operation, found.groupdict(), method, query, headers, body,
                                               received, record, refuse)
        # Stripe keeps the result once the endpoint ran; a request refused by validation is not kept.
        if method == "POST" and key is not None and not record["violations"]:
            with self.lock:
                self.idempotency[key] = (fingerprint, status, copy.deepcopy(answer))
            extra = dict(extra, **{"Idempotency-Key": key})
        return status, answer, extra

    def operation(self, operation, path_params, method, query, headers, body, received, record, refuse):
        name = operation["operationId"]
        for param, schema in self.docs.path_schemas(operation).items():
            value = path_params.get(param, "")
            if len(value) > schema.get("maxLength", 10 ** 9):
                return refuse(400, f"Invalid {param}: must be at most {schema['maxLength']} characters", param=param,
                              code="parameter_invalid")
        # The parameters: the form body (POST) or the query (GET), decoded and checked.
        if method == "POST":
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if body and kind != "application/x-www-form-urlencoded":
                return refuse(400, f"Stripe's API takes application/x-www-form-urlencoded bodies, not {kind or 'none'}.")
            text = body.decode("utf-8", "replace")
            if query:
                record["violations"].append(f"parameters in the query string of a POST: {query}")
        else:
            text = query
            if body:
                record["violations"].append("a GET with a body")
        schema = self.docs.request_schema(operation)
        validator = self.docs.validator(schema)
        try:
            decoded = decode_form(text)
            params = shape(decoded, schema, validator.schema)
        except FormError as error:
            return refuse(400, str(error), code="parameter_invalid", param=error.param)
        record["params"] = params
        library = []
        if name == "PostCheckoutSessions":
            try:
                library = findings(self.docs.library_validator, shape(decoded, self.docs.library, self.docs.library))
            except FormError:
                library = []
        library_unknown = {param for param, code, _ in library if code == "parameter_unknown"}
        refusal = None
        for param, code, message in findings(validator, params):
            if code == "parameter_unknown" and name == "PostCheckoutSessions" and param not in library_unknown:
                record["warnings"].append(f"{param} is not in the OpenAPI document ({self.docs.version}) but "
                                          f"Stripe's newer library knows it: checked against the library only")
                continue
            record["violations"].append(f"{message} (code {code})")
            refusal = refusal or (param, code, message)
        # What only the newer library finds (the adapter may pin an older version): a warning.
        refused = {r.split(" (code")[0] for r in record["violations"]}
        for param, code, message in library:
            if message not in refused:
                record["warnings"].append(f"{self.docs.library['x-source']} (API "
                                          f"{self.docs.library['x-api-version']}): {message}")
        if refusal:
            param, code, message = refusal
            return refuse(400, message, code=code, param=param, violation=False)
        if name == "PostCheckoutSessions":
            broken = checkout_rules(params, received)
            if broken:
                for param, message in broken:
                    record["violations"].append(message)
                return refuse(400, broken[0][1], code="parameter_invalid", param=broken[0][0], violation=False)
            session = self.new_session(params, received)
            with self.lock:
                self.sessions[session["id"]] = session
            status, answer = 200, copy.deepcopy(session)
        else:
            sid = path_params["session"]
            with self.lock:
                session = self.sessions.get(sid)
            if session is None:
                # Not a violation by itself (the caller may look up what it was sent), but recorded.
                return refuse(404, f"No such checkout.session: '{sid}'", code="resource_missing", param="session",
                              violation=False)
            if name == "PostCheckoutSessionsSessionExpire":
                if session["status"] != "open":
                    return refuse(400, f"Only Checkout Sessions with a status in [\"open\"] can be expired; "
                                       f"{sid} is {session['status']}.", violation=False)
                self.expire(sid)
            status, answer = 200, self.session(sid)
        for error in self.docs.response_validator(operation).iter_errors(answer):
            self.mock_error(f"{name}'s answer breaks its 200 schema at {bracket(list(error.absolute_path))}: "
                            f"{error.message[:300]}")
        return status, answer, {}

    # -- control endpoints --
    def control(self, method, path):
        parts = path.strip("/").split("/")[1:]  # after "__mock"
        if method == "GET" and parts == ["requests"]:
            with self.lock:
                return 200, {"requests": self.requests, "violations": self.violations, "warnings": self.warnings,
                             "mock_errors": self.mock_errors, "stripe_versions": sorted(self.stripe_versions)}
        if len(parts) >= 2 and parts[0] == "sessions":
            sid = parts[1]
            action = parts[2] if len(parts) > 2 else None
            if method == "GET" and action is None:
                found = self.session(sid)
            elif method == "POST" and action == "complete":
                found = self.complete(sid)
            elif method == "POST" and action == "expire":
                found = self.expire(sid)
            else:
                return 404, {"error": {"type": "invalid_request_error", "message": f"no control {method} {path}"}}
            if found is None:
                return 404, {"error": {"type": "invalid_request_error", "message": f"No such checkout.session: '{sid}'"}}
            return 200, found
        if method == "GET" and len(parts) == 3 and parts[0] == "events":
            found = self.session(parts[2])
            if found is None:
                return 404, {"error": {"type": "invalid_request_error", "message": f"No such checkout.session: "
                                                                                   f"'{parts[2]}'"}}
            return 200, self.event(parts[1], found)
        return 404, {"error": {"type": "invalid_request_error", "message": f"no control {method} {path}"}}


class RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mock = None

    def log_message(self, *args):
        pass

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def serve(self, method):
        body = self.read_body()
        if urlsplit(self.path).path.startswith("/__mock/"):
            status, answer = self.mock.control(method, urlsplit(self.path).path)
            headers = {}
        else:
            status, headers, answer = self.mock.handle(method, self.path, dict(self.headers.items()), body)
        data = json.dumps(answer, indent=2).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.serve("GET")

    def do_POST(self):
        self.serve("POST")

    def do_DELETE(self):
        self.serve("DELETE")


# ---- webhook signatures, by Stripe's Node library (sign.mjs) ----

def node_ready():
    """None when sign.mjs can run, else why not."""
    import shutil
    if not shutil.which("node"):
        return "node is not installed (apt-get install nodejs npm)"
    if not os.path.isdir(NODE_STRIPE):
        return f"{NODE_STRIPE} is missing: run `npm ci` in tests/browser"
    return None


def run_sign(mode, lines):
    missing = node_ready()
    if missing:
        sys.exit(f"signing webhooks with Stripe's library: {missing}")
    text = "".join(json.dumps(line) + "\n" for line in lines)
    done = subprocess.run(["node", SIGN_JS, mode], input=text, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        sys.exit(f"sign.mjs {mode} failed: {done.stderr.strip()}")
    return done.stdout.splitlines()


def sign_headers(items):
    """`Stripe-Signature` values, one for each {payload, secret, timestamp}, made by
    `stripe.webhooks.generateTestHeaderString` (and each checked with `constructEvent`)."""
    return run_sign("sign", items)


def verify_headers(items):
    """For each {payload, header, secret[, tolerance]}: {"ok": true, "id", "type"} or
    {"ok": false, "error"}, by `stripe.webhooks.constructEvent`."""
    return [json.loads(line) for line in run_sign("verify", items)]


def main():
    parser = argparse.ArgumentParser(description="A mock of Stripe's Checkout Session API that checks every "
                                                 "request against Stripe's published description.")
    parser.add_argument("--key", default="sk_test_mock_0123456789abcdef", help="the secret key callers must send")
    parser.add_argument("--port", type=int, default=12111)
    args = parser.parse_args()
    mock = StripeMock(args.key)
    base = mock.start(port=args.port)
    print(f"Stripe mock (API {mock.docs.version}) at {base}, key {args.key}; GET {base}/__mock/requests for what it "
          "saw. Ctrl-C ends it.", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        mock.stop()
        for problem in mock.problems():
            print("VIOLATION:", problem)
        for warning in mock.warnings:
            print("warning:", warning)


if __name__ == "__main__":
    main()
