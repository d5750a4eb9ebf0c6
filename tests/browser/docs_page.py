#!/usr/bin/env python3
"""The /docs page in a real headless Chromium: it renders the partner API first (Redoc's
sidebar), with request bodies and curl samples, loads nothing from another origin, and logs
no console error (a Content-Security-Policy violation included).

Starts `rehome serve --demo` from the built binary in a temporary directory. Usage:

    python3 tests/browser/docs_page.py [--binary target/debug/rehome] [--screenshot docs/api-reference.png]

Needs `playwright` (pip) and a Chromium (`/usr/bin/chromium`, or CHROMIUM=path); browsers are
never downloaded.
"""

import argparse
import os
import shutil
import sys
import tempfile
from urllib.parse import urlsplit

from harness import start_server
from playwright.sync_api import sync_playwright

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def check(base: str, screenshot: str, chromium: str) -> list:
    problems = []
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

        def on_request(request):
            url = request.url
            if not (url.startswith(origin + "/") or url.startswith("blob:") or url.startswith("data:")):
                problems.append(f"request to another origin: {url}")

        page.on("request", on_request)
        response = page.goto(base + "/docs", wait_until="networkidle")
        csp = response.headers.get("content-security-policy", "")
        if "default-src 'none'" not in csp:
            problems.append(f"no strict CSP on the page: {csp!r}")

        # Redoc's sidebar: the partner API's group and tags first, the operator API last.
        page.wait_for_selector(".menu-content li", timeout=20000)
        sidebar = page.locator(".menu-content").inner_text().upper()
        order = [sidebar.find(word) for word in ("PARTNER API", "LISTINGS", "SETTINGS", "OPERATOR API", "OPERATOR\n")]
        if -1 in order[:4] or order[:4] != sorted(order[:4]):
            problems.append(f"the sidebar does not list the partner API first: {sidebar[:300]!r}")

        # The search box (its index runs in a `blob:` worker, which the CSP must allow).
        page.fill("input[placeholder='Search...']", "warehouse")
        try:
            page.wait_for_selector("[data-role='search:results'] li, .search-results li", timeout=5000)
        except Exception:
            problems.append("the search found nothing (is its worker blocked?)")

        # The create-listing operation: its body's fields, rendered Markdown, a curl sample.
        page.goto(base + "/docs#tag/Listings/operation/create_listing", wait_until="networkidle")
        operation = page.locator("[data-section-id='tag/Listings/operation/create_listing']")
        operation.wait_for(timeout=20000)
        text = operation.inner_text()
        # inner_text follows CSS text-transform: compare without case.
        for expected in ("request body schema", "title", "price", "curl"):
            if expected not in text.lower():
                problems.append(f"the create-listing section lacks {expected!r}")
        if operation.locator("code").count() == 0:
            problems.append("no rendered Markdown (code spans) in the create-listing section")
        page.screenshot(path=screenshot)
        browser.close()
    return problems


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "rehome"))
    parser.add_argument("--screenshot", default=os.path.join(ROOT, "docs", "api-reference.png"))
    args = parser.parse_args()
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("no chromium found (apt-get install chromium, or set CHROMIUM)")
    with tempfile.TemporaryDirectory() as workdir:
        server, base = start_server(os.path.abspath(args.binary), workdir, "--demo")
        try:
            problems = check(base, args.screenshot, chromium)
        finally:
            server.terminate()
            server.wait(timeout=10)
    if problems:
        sys.exit("docs page check failed:\n  " + "\n  ".join(problems))
    print(f"docs page ok; screenshot: {args.screenshot}")


if __name__ == "__main__":
    main()
