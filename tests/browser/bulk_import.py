#!/usr/bin/env python3
"""Bulk import in one pass in a real headless Chromium (issue 31 item 4): the example of the
issue. A file with two good rows and a bad one is uploaded once and reviewed (each row's
outcome, the bad cell's sentence); only the explicit "Import the 2 valid rows, skip 1
refused" imports, once (a reload imports nothing); the fixed file uploaded again in the
default mode flags both saved SKUs and imports only the third row. A member sees the
template only and cannot open a draft. The upload and review pages are checked at 1280 and
390 px (no sideways scroll) and, when asked, saved as screenshots. Usage:

    python3 tests/browser/bulk_import.py [--binary target/debug/rehome] [--screenshots DIR]
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import urllib.request
from urllib.parse import urlsplit

from harness import ADMIN, MEMBER, ROOT, Watch, browser_args, seed_people, sign_in, start_server
from playwright.sync_api import sync_playwright

FIRST = ("title,price_gbp,condition,category,faults,sku\n"
         "Grey sofa,120,fair,3-Seater Sofas,None,SOFA-1\n"
         "Blue sofa,140,fair,3-Seater Sofas,None,SOFA-2\n"
         "Red sofa,-5,fair,3-Seater Sofas,None,SOFA-3\n")
FIXED = FIRST.replace("Red sofa,-5", "Red sofa,95")
# A reason code on the page (`price_gbp_invalid`); column headers such as `price_gbp` are
# the file's own and may appear.
CODE = re.compile(r"\b[a-z]+(?:_[a-z]+)*_(?:invalid|required|exists|unknown|ambiguous|in_file|not_found)\b")


def listings_total(base, key):
    request = urllib.request.Request(base + "/v1/listings?status=any", headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())["meta"]["total"]


def check(browser, base, key, workdir, shots):
    problems = []
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))

    def need(condition, what):
        if not condition:
            problems.append(what)

    def widths(page, name):
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            wide = page.evaluate("document.scrollingElement.scrollWidth")
            inner = page.evaluate("window.innerWidth")
            need(wide <= inner, f"{name} scrolls sideways at {width} px ({wide} > {inner})")
            if shots:
                page.screenshot(path=os.path.join(shots, f"{name}-{width}.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})

    def no_codes(page, where):
        text = page.locator("main").inner_text()
        found = CODE.findall(text)
        need(not found, f"{where} shows codes instead of sentences: {found}")

    def upload(page, name, text):
        path = os.path.join(workdir, name)
        with open(path, "w") as f:
            f.write(text)
        page.goto(base + "/dashboard/bulk-import")
        page.get_by_label("File").set_input_files(path)
        page.get_by_role("button", name="Upload and review").click()
        page.wait_for_load_state()
        need("/dashboard/bulk-import/drafts/" in page.url, f"the upload of {name} did not lead to its review: {page.url}")
        return page.url

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    watch = Watch(page, origin)
    sign_in(page, base, ADMIN)
    page.goto(base + "/dashboard/bulk-import")
    need(page.get_by_role("link", name="Download the template").count() == 1, "no template link")
    widths(page, "bulk-flow-upload")

    # Upload once; the review says what each row would do.
    first = upload(page, "stock.csv", FIRST)
    need(page.get_by_role("heading", name="3 rows: 2 would be created, 1 refused.").count() == 1,
         "the review does not sum the rows up")
    need(page.get_by_role("cell", name="would be created").count() == 2, "the good rows are not 'would be created'")
    need(page.get_by_text(re.compile(r"B4 price_gbp \(“-5”\): Price \(GBP\) must be an amount in pounds")).count() == 1,
         "the bad cell's sentence is not shown by cell")
    no_codes(page, "the review")
    need(page.get_by_role("button", name=re.compile(r"^Import \d+ rows?$")).count() == 0,
         "a file with a refused row offers a plain import")
    skip = page.get_by_role("button", name="Import the 2 valid rows, skip 1 refused")
    need(skip.count() == 1, "no explicit choice to import the valid rows only")
    widths(page, "bulk-flow-review")
    need(listings_total(base, key) == 0, "reviewing imported something")

    # The explicit choice imports the two; a reload imports nothing more.
    skip.click()
    page.wait_for_load_state()
    need(page.url == first, f"the import did not come back to its draft: {page.url}")
    need(page.get_by_role("status").filter(has_text="Imported").count() == 1, "no notice after the import")
    need(page.get_by_role("link", name="Grey sofa").count() == 1, "the imported row does not link its listing")
    need(listings_total(base, key) == 2, f"imported {listings_total(base, key)} rows, not 2")
    page.reload()
    page.wait_for_load_state()
    need(page.get_by_role("status").count() == 0, "the notice is shown again after a reload")
    need(page.get_by_role("button", name=re.compile("^Import")).count() == 0, "an imported draft offers an import")
    need(listings_total(base, key) == 2, "a reload imported again")
    if shots:
        page.screenshot(path=os.path.join(shots, "bulk-imported-1280.png"), full_page=True)

    # The fixed file, default mode: both saved SKUs are flagged, only the third row imports.
    second = upload(page, "stock-fixed.csv", FIXED)
    need(page.get_by_role("heading", name="3 rows: 1 would be created, 2 refused.").count() == 1,
         "the saved SKUs are not flagged")
    need(page.get_by_text("A listing with this SKU already exists").count() == 2, "the SKU sentence is missing")
    need(page.get_by_role("cell", name="would be created").count() == 1, "a saved SKU says 'would be created'")
    no_codes(page, "the second review")
    page.get_by_role("button", name="Import the 1 valid row, skip 2 refused").click()
    page.wait_for_load_state()
    need(page.url == second, f"the second import did not come back to its draft: {page.url}")
    need(listings_total(base, key) == 3, f"{listings_total(base, key)} listings after the second import, not 3")
    problems += watch.problems
    page.close()

    # A member: the template only; a draft's page is for admins.
    member = browser.new_page(viewport={"width": 1280, "height": 900})
    member_watch = Watch(member, origin)
    member_watch.allowed_status.add(403)
    sign_in(member, base, MEMBER)
    member.goto(base + "/dashboard/bulk-import")
    need(member.get_by_role("link", name="Download the template").count() == 1, "a member has no template link")
    need(member.get_by_label("File").count() == 0, "a member is offered the upload")
    answer = member.goto(first)
    need(answer is not None and answer.status == 403, "a member opened a draft")
    problems += member_watch.problems
    member.close()
    return problems


def main():
    args, chromium, binary = browser_args()
    with tempfile.TemporaryDirectory() as workdir:
        key = seed_people(binary, workdir)
        server, base = start_server(binary, workdir)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                problems = check(browser, base, key, workdir, args.screenshots)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    if problems:
        for problem in problems:
            print("FAIL:", problem)
        sys.exit(1)
    print("bulk import: upload once, review, import once, re-upload flags the saved SKUs, in Chromium")


if __name__ == "__main__":
    main()
