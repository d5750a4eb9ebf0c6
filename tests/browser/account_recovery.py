#!/usr/bin/env python3
"""Account recovery in headless Chromium: recovery codes, and a new password by a link.

Recovery codes:
the admin turns two-step sign-in on with a code computed from the page's secret and lands,
by post/redirect/get, on the codes' page: ten codes, a Copy button that puts them on the
clipboard, a download of them as a text file; axe finds nothing, and neither width scrolls
sideways. A reload shows them no more (it leads to the account page, which still says ten
are unused). Then a sign-in with one of them lands on the account page saying nine are
left. Screenshots of the codes' page and of that notice at 1280 and 390 px.

A new password: the sign-in page links to "Forgot your password?", which (this server has no
mail) says whom to ask; the admin sends the member a reset link from Team, shown once; the
member opens it, is refused a confirmation that differs beside the field, chooses one and is told on
the sign-in page, then signs in with it. axe and no sideways scroll on each page at both
widths; screenshots of the forgot page, Team with the link, and the reset page with its
refusal.

    tests/browser/account_recovery.py --binary target/debug/rehome [--screenshots DIR]
"""

import base64
import hashlib
import hmac
import os
import re
import struct
import sys
import tempfile
import time
from urllib.parse import urlsplit

from playwright.sync_api import sync_playwright

from harness import ADMIN, MEMBER, PASSWORD, axe_source, axe_violations, browser_args, seed_people, sideways, sign_in, \
    start_server


def totp(secret, at=None):
    """The RFC 6238 code (SHA-1, 30 s, 6 digits) of a base32 secret."""
    key = base64.b32decode(secret.replace(" ", "").upper() + "=" * (-len(secret.replace(" ", "")) % 8))
    counter = int((at or time.time()) // 30)
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000)


def main():
    args, chromium, binary = browser_args()
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

    axe = axe_source()
    with tempfile.TemporaryDirectory() as workdir:
        seed_people(binary, workdir)
        server, base = start_server(binary, workdir)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
                context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True,
                                              accept_downloads=True)
                context.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin)
                page = context.new_page()
                sign_in(page, base, ADMIN)
                page.goto(base + "/dashboard/account/two-step")
                secret = page.locator("#totp-secret").inner_text().strip()
                page.get_by_label("Code", exact=True).fill(totp(secret))
                page.get_by_role("button", name="Verify").first.click()
                page.wait_for_load_state()
                need(urlsplit(page.url).path == "/dashboard/account/recovery-codes",
                     f"turning two-step on leads to {page.url}, not the codes' page")
                codes = [c.strip() for c in page.locator("#recovery-codes code").all_inner_texts()]
                need(len(codes) == 10, f"{len(codes)} codes shown")
                for width in (1280, 390):
                    page.set_viewport_size({"width": width, "height": 900})
                    need(sideways(page) <= 0, f"the codes' page scrolls sideways at {width} px")
                    need(not axe_violations(page, axe), f"axe at {width} px: {axe_violations(page, axe)}")
                    if args.screenshots:
                        page.screenshot(path=os.path.join(args.screenshots, f"recovery-codes-{width}.png"),
                                        full_page=True)
                page.set_viewport_size({"width": 1280, "height": 900})
                copy = page.get_by_role("button", name="Copy codes")
                need(copy.is_visible(), "no Copy button")
                copy.click()
                pasted = page.evaluate("navigator.clipboard.readText()")
                need(all(c in pasted for c in codes), f"the clipboard holds {pasted!r}")
                with page.expect_download() as info:
                    page.get_by_role("link", name="Download as a text file").click()
                download = info.value
                need(download.suggested_filename == "rehome-recovery-codes.txt", download.suggested_filename)
                saved = open(download.path(), encoding="utf-8").read()
                need(all(c in saved for c in codes), f"the download holds {saved!r}")
                page.reload()
                page.wait_for_load_state()
                need(urlsplit(page.url).path == "/dashboard/account", f"a reload leads to {page.url}")
                need(not any(c in page.content() for c in codes), "a reload shows the codes again")
                need("You have 10 unused recovery codes of 10." in page.inner_text("main"), "ten unused, still")

                # Signing in with one of them: the account page says how many are left.
                other = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
                sign_in(other, base, ADMIN)
                other.get_by_label("Code", exact=True).fill(codes[0])
                other.get_by_role("button", name="Verify").first.click()
                other.wait_for_load_state()
                need(urlsplit(other.url).path == "/dashboard/account", f"a recovery code leads to {other.url}")
                text = other.inner_text("main")
                need("You have 9 unused recovery codes left." in text, f"no count left in {text[:300]!r}")
                for width in (1280, 390):
                    other.set_viewport_size({"width": width, "height": 900})
                    if args.screenshots:
                        other.screenshot(path=os.path.join(args.screenshots, f"recovery-code-used-{width}.png"),
                                         full_page=True)

                # A new password by a link, handed over by an admin (no mail here).
                def look(p, name):
                    for width in (1280, 390):
                        p.set_viewport_size({"width": width, "height": 900})
                        need(sideways(p) <= 0, f"{name} scrolls sideways at {width} px")
                        found = axe_violations(p, axe)
                        need(not found, f"axe on {name} at {width} px: {found}")
                        if args.screenshots:
                            p.screenshot(path=os.path.join(args.screenshots, f"{name}-{width}.png"), full_page=True)
                    p.set_viewport_size({"width": 1280, "height": 900})

                guest = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True).new_page()
                guest.goto(base + "/dashboard/login")
                guest.get_by_role("link", name="Forgot your password?").click()
                guest.wait_for_load_state()
                need("This server cannot send email" in guest.inner_text("main"), "the forgot page without mail")
                look(guest, "forgot-password")
                page.goto(base + "/dashboard/team")
                page.get_by_role("button", name="Send password reset link to Mo Member").click()
                page.wait_for_load_state()
                field = page.locator("#invitation-link")
                need(field.count() == 1 and "/dashboard/reset/" in field.input_value(), "no reset link on Team")
                need("Password reset link for " + MEMBER in page.inner_text("main"), "the link is not named")
                link = field.input_value()
                look(page, "team-reset-link")
                guest.goto(link)
                guest.get_by_label("New password", exact=True).fill("a brand new passphrase")
                guest.get_by_label("Confirm new password", exact=True).fill("a different passphrase")
                guest.get_by_role("button", name="Change password").click()
                guest.wait_for_load_state()
                need(guest.locator(".field-error").count() == 1, "a mismatch is not refused beside its field")
                look(guest, "reset-password-refused")
                new = "a brand new passphrase"
                guest.get_by_label("New password", exact=True).fill(new)
                guest.get_by_label("Confirm new password", exact=True).fill(new)
                guest.get_by_role("button", name="Change password").click()
                guest.wait_for_load_state()
                need(urlsplit(guest.url).path == "/dashboard/login", f"after the change: {guest.url}")
                need("Your password was changed" in guest.inner_text("main"), "the sign-in page does not say so")
                look(guest, "login-password-reset")
                guest.get_by_label("Email").fill(MEMBER)
                guest.get_by_label("Password").fill(new)
                guest.get_by_role("button", name="Sign in").click()
                guest.wait_for_load_state()
                need(urlsplit(guest.url).path == "/dashboard", f"the new password does not sign in: {guest.url}")
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    if problems:
        for problem in problems:
            print("FAIL:", problem)
        sys.exit(1)
    print("account recovery: recovery codes shown once, copied, downloaded, counted after use; a reset link "
          "handed over, refused and used")


if __name__ == "__main__":
    main()
