#!/usr/bin/env python3
"""Deliveries, an event's page, Collections and Redemptions in a real headless Chromium
(issue 31 items 2 and 7):

- Replay with htmx swaps its row in place (no page load) and says it was queued; a reload
  afterwards sends nothing again. Without JavaScript, Replay is post/redirect/get: the
  list with a notice once, and a reload replays nothing.
- An event's page shows the payload and what the endpoint answered, as text (an answer
  holding a <script> runs nothing), and at 390 px nothing scrolls the page sideways.
- Screenshots of the four pages at 1280 and 390 px when asked.

Usage: python3 tests/browser/operations.py [--binary target/debug/rehome] [--screenshots DIR]
"""

import argparse
import datetime
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from harness import ADMIN, PASSWORD, ROOT, browser_args, cli, shoot_pages, start_server
from playwright.sync_api import sync_playwright

OPS = "ops-token-for-the-operations-test-01"
# What the endpoint answers: markup that must stay text, and a line far wider than a phone.
ANSWER = ("<html><script>window.__answered = 1</script><p>received</p>" + "x" * 600 + "</html>").encode()


class Endpoint(http.server.BaseHTTPRequestHandler):
    """A webhook receiver: counts what arrives, answers 200 with `ANSWER`."""
    hits = 0
    lock = threading.Lock()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with Endpoint.lock:
            Endpoint.hits += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args):
        pass


def hits():
    with Endpoint.lock:
        return Endpoint.hits




def call(base, method, path, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path} answered {e.code}: {e.read().decode(errors='replace')}")


def wait_for(what, check, seconds=15):
    """Polls `check` (the server's queue runs on its own clock) until it holds."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    sys.exit(f"timed out waiting for {what}")


def seed(base, key, hook):
    call(base, "PATCH", "/v1/partner/settings/integrations/webhook", key, {"url": hook, "enabled": True})
    event = call(base, "POST", "/v1/partner/settings/integrations/webhook/test", key, {})["event_id"]
    call(base, "POST", "/v1/partner/settings/warehouses", key, {"label": "Leeds DC", "city": "Leeds"})
    listing = call(base, "POST", "/v1/listings", key, {
        "title": "Oak frame three-seater sofa in sage green velvet", "price_gbp": 450, "condition": "excellent",
        "category": "3-Seater Sofas", "faults": ["None"], "channel": "clearance", "quantity": 3})["id"]
    start = (datetime.date.today() + datetime.timedelta(days=3)).isoformat()
    call(base, "POST", "/ops/v1/orders", OPS, {"listing_id": listing, "buyer_window_start": start})
    later = (datetime.date.today() + datetime.timedelta(days=5)).isoformat()
    scheduled = call(base, "POST", "/ops/v1/orders", OPS, {"listing_id": listing, "buyer_window_start": later})["id"]
    call(base, "POST", "/v1/partner/collections", key, {"order_id": scheduled, "scheduled_for": later})
    exchange = call(base, "POST", "/v1/listings", key, {
        "title": "Trade-in armchair", "price_gbp": 120, "condition": "excellent", "category": "Armchairs",
        "faults": ["None"], "channel": "exchange", "quantity": 1})["id"]
    traded = call(base, "POST", "/ops/v1/orders", OPS, {"listing_id": exchange})["id"]
    call(base, "POST", f"/ops/v1/orders/{traded}/complete", OPS, {})
    call(base, "POST", f"/ops/v1/orders/{traded}/payout-choice", OPS,
         {"customer_id": "cus_1", "customer_choice": "credit", "credit_destination": "code"})
    wait_for("the test event delivered", lambda: call(
        base, "GET", f"/v1/partner/webhooks/deliveries/{event}", key)["status"] == "delivered")
    return event


def sign_in(page, base):
    page.goto(base + "/dashboard/login")
    page.get_by_label("Email").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()


def replay_posts(page):
    """Records every Replay POST the page sends."""
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and r.url.endswith("/replay") else None)
    return posts


def check(browser, base, key, event, shots):
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

    origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.on("console", lambda m: problems.append(f"console error: {m.text}") if m.type == "error" else None)
    page.on("request", lambda r: None if r.url.startswith(origin + "/") or r.url.startswith("data:")
            else problems.append(f"request to another origin: {r.url}"))
    sign_in(page, base)
    posts = replay_posts(page)

    # Replay with htmx: the row changes in place, the page is not loaded again.
    page.goto(base + "/dashboard/deliveries")
    page.evaluate("window.__sameDocument = true")
    before = hits()
    row = page.locator(f"#event-{event}")
    row.get_by_role("button", name="Replay").click()
    row.get_by_text("Queued: sending again now.").wait_for(timeout=5000)
    need(page.evaluate("window.__sameDocument === true"), "Replay loaded the page again")
    need(page.url == base + "/dashboard/deliveries", f"Replay moved the page to {page.url}")
    wait_for("the replayed event at the endpoint", lambda: hits() == before + 1)
    # A reload shows the list and sends nothing again.
    page.reload()
    page.wait_for_load_state()
    need(len(posts) == 1, f"the reload posted Replay again: {posts}")
    need(page.get_by_text("Queued: sending again now.").count() == 0, "the row's note survived a reload")

    # The event's page: the payload, and the answer as text (its script never runs).
    page.goto(base + f"/dashboard/deliveries/{event}")
    payload = page.locator("pre.payload")
    need(payload.count() == 1 and f'"id": "{event}"' in payload.inner_text(), "the payload is not shown")
    excerpts = page.locator("pre.excerpt")
    need(excerpts.count() >= 2, f"expected an answer per attempt, got {excerpts.count()}")
    need("<script>window.__answered = 1</script>" in excerpts.first.inner_text(), "the answer is not shown as text")
    need(page.evaluate("window.__answered === undefined"), "the endpoint's answer ran as a script")
    page.set_viewport_size({"width": 390, "height": 900})
    wide, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    need(wide <= inner, f"the event's page scrolls sideways at 390 px ({wide} > {inner})")
    box = excerpts.first.bounding_box()
    need(box is not None and box["x"] + box["width"] <= inner, "the answer's box is wider than the phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    context.close()

    # Without JavaScript: post/redirect/get, the notice once, a reload replays nothing.
    context = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    sign_in(page, base)
    posts = replay_posts(page)
    page.goto(base + "/dashboard/deliveries")
    before = hits()
    page.locator(f"#event-{event}").get_by_role("button", name="Replay").click()
    page.wait_for_load_state()
    need(page.url == base + "/dashboard/deliveries", f"Replay without JavaScript ended on {page.url}")
    need(page.get_by_text("Event queued: it is being sent to your endpoint again.").count() == 1,
         "no notice after Replay without JavaScript")
    page.reload()
    page.wait_for_load_state()
    need(len(posts) == 1, f"the reload posted Replay again: {posts}")
    need(page.get_by_text("Event queued").count() == 0, "the notice shows again on reload")
    wait_for("the replay at the endpoint", lambda: hits() == before + 1)
    context.close()

    # The four pages at both widths: no sideways scroll; screenshots when asked.
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    sign_in(page, base)
    pages = [("deliveries", "/dashboard/deliveries"), ("delivery", f"/dashboard/deliveries/{event}"),
             ("collections", "/dashboard/collections"), ("redemptions", "/dashboard/redemptions")]
    shoot_pages(page, base, pages, shots, need)
    context.close()
    return problems


def main():
    args, chromium, binary = browser_args()
    os.environ["REHOME_OPS_TOKEN"] = OPS
    os.environ["REHOME_ALLOW_PRIVATE_NETWORK"] = "true"
    os.environ["REHOME_WEBHOOK_ALLOW_HTTP"] = "true"
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    with tempfile.TemporaryDirectory() as workdir:
        cli(binary, workdir, "brands", "create", "acme", "--name", "Acme Sofas")
        admin = cli(binary, workdir, "users", "create", "--brand", "acme", "--name", "Ada Admin", "--email", ADMIN)
        cli(binary, workdir, "users", "set-password", admin, stdin=PASSWORD + "\n")
        key = cli(binary, workdir, "keys", "create", "--user", admin, "--rate-limit", "10000")
        server, base = start_server(binary, workdir)
        try:
            event = seed(base, key, hook)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                problems = check(browser, base, key, event, args.screenshots)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
            receiver.shutdown()
    if problems:
        for problem in problems:
            print("FAIL:", problem)
        sys.exit(1)
    print("operations: replay in place and after a reload, an event's page at 390 px passed in Chromium")


if __name__ == "__main__":
    main()
