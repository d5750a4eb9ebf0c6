#!/usr/bin/env python3
"""Dashboard page speed in Chromium (issue 15): the listings page of a brand with 100
listings and the deliveries page of a brand with 1,000 webhook events, each loaded 20 times
after signing in; time to first byte and full load (Navigation Timing: responseStart and
loadEventEnd from the navigation's start), medians; and each page's weight (HTML + CSS +
JS bytes as transferred on a first load with an empty cache). The /healthz round trip is measured the same way as a baseline.

    python3 bench/dashboard_bench.py --no-build [--loads 20]

Needs playwright and Debian's chromium (as the browser tests).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "browser"))
from http_bench import build, target_dir  # noqa: E402
from harness import start_server  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

EMAIL = "ada@acme.example"
PASSWORD = "correct horse battery staple"


def cli(binary, workdir, *args, stdin=""):
    env = dict(os.environ, REHOME_DATABASE_URL="sqlite://rehome.db")
    env.pop("REHOME_DATA_KEY", None)
    done = subprocess.run([binary, *args], cwd=workdir, env=env, input=stdin, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def call(base, method, path, key, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")


def seed(base, key, listings, events):
    for i in range(listings):
        call(base, "POST", "/v1/listings", key, {"title": f"Grey velvet sofa {i}", "price_gbp": 450 + i,
             "condition": "excellent", "category": "3-Seater Sofas", "faults": ["None"], "channel": "clearance",
             "quantity": 3, "sku": f"SKU-{i}"})
    call(base, "PATCH", "/v1/partner/settings/integrations/webhook", key,
         {"url": "https://127.0.0.1:9/hooks", "enabled": True})
    for _ in range(events):
        call(base, "POST", "/v1/partner/settings/integrations/webhook/test", key)


TIMING = """() => { const n = performance.getEntriesByType('navigation')[0];
  const bytes = [n, ...performance.getEntriesByType('resource')].reduce((s, e) => s + (e.encodedBodySize || 0), 0);
  return {ttfb: n.responseStart - n.startTime, load: n.loadEventEnd - n.startTime, bytes}; }"""


def measure(browser, state, url, loads):
    """In a fresh context (signed in, empty cache): the first load's weight (everything the
    page fetches cold: HTML, CSS, JS), then `loads` more for the timings."""
    context = browser.new_context(storage_state=state)
    page = context.new_page()
    ttfb, load, weight = [], [], 0
    for n in range(loads + 1):
        page.goto(url, wait_until="load")
        t = page.evaluate(TIMING)
        ttfb.append(t["ttfb"])
        load.append(t["load"])
        if n == 0:
            weight = t["bytes"]
    context.close()
    # The first load fills the cache (stylesheet, htmx); the rest are what a user sees.
    return statistics.median(ttfb[1:]), statistics.median(load[1:]), weight


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--loads", type=int, default=20)
    args = parser.parse_args()
    binary = os.path.join(target_dir(), "release", "rehome") if args.no_build else build()
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium")
    os.environ["REHOME_ALLOW_PRIVATE_NETWORK"] = "true"
    os.environ["REHOME_RATE_LIMIT"] = "100000"
    # Deliveries to a closed port fail and wait to be retried: they stay in the log.
    os.environ["REHOME_WEBHOOK_RETRY_BASE_MS"] = "3600000"
    with tempfile.TemporaryDirectory() as workdir:
        cli(binary, workdir, "brands", "create", "acme", "--name", "Acme Sofas")
        user = cli(binary, workdir, "users", "create", "--brand", "acme", "--name", "Ada Admin", "--email", EMAIL)
        cli(binary, workdir, "users", "set-password", user, stdin=PASSWORD + "\n")
        key = cli(binary, workdir, "keys", "create", "--user", user, "--rate-limit", "100000")
        server, base = start_server(binary, workdir)
        try:
            seed(base, key, 100, 1000)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                signing_in = browser.new_context()
                page = signing_in.new_page()
                page.goto(base + "/dashboard/login")
                page.get_by_label("Email").fill(EMAIL)
                page.get_by_label("Password").fill(PASSWORD)
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_load_state()
                state = signing_in.storage_state()
                rows = [("GET /healthz (baseline)", base + "/healthz"),
                        ("Listings, 100 listings (per page 25)", base + "/dashboard/listings"),
                        ("Listings, 100 listings, page 4", base + "/dashboard/listings?page=4"),
                        ("Deliveries, 1,000 events (100 a page)", base + "/dashboard/deliveries"),
                        ("Deliveries, 1,000 events, page 10", base + "/dashboard/deliveries?status=any&page=10")]
                print("| page | TTFB median (ms) | full load median (ms) | cold weight (bytes) |")
                print("|---|---:|---:|---:|")
                for name, url in rows:
                    ttfb, load, weight = measure(browser, state, url, args.loads)
                    print(f"| {name} | {ttfb:.1f} | {load:.1f} | {weight:,} |")
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
