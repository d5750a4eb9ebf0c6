#!/usr/bin/env python3
"""Team and keys in a real headless Chromium (issue 31 item 6), as an admin and a member:

- a key created with a scope and an expiry: its secret shown once in a read-only field,
  selected, with a working "Copy secret" button (our script, under the page's CSP); a reload
  makes no other key and no longer shows the secret;
- a key survives a click on "Revoke" whose confirmation is cancelled (and a dismissed
  browser dialog, if one ever appears); "Roll" with an overlap shows a new secret once;
- an invitation sent again (a new link; the old one stops working) and cancelled after a
  confirmation; a member made an admin and back;
- a member is refused the team page with a page that says it is for admins;
- Team and Integrations at 1280 and 390 px without sideways scroll (screenshots with
  --screenshots DIR).

Usage: python3 tests/browser/team_keys.py [--binary target/debug/rehome] [--screenshots DIR]
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from harness import ADMIN, MEMBER, PASSWORD, ROOT, Watch, ask, browser_args, cli, sign_in, start_server
from harness import seed_people as seed
from playwright.sync_api import sync_playwright


def api(base, path, token):
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


def status_with(base, path, token):
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


def click(page, locator):
    locator.click()
    page.wait_for_load_state()


def key_row(page, label):
    return page.get_by_role("row").filter(has_text=label)


def check_keys(page, base, key, need):
    page.goto(base + "/dashboard/integrations")
    click(page, page.get_by_role("button", name="Create key"))
    page.get_by_label("Label").fill("Stock sync")
    page.get_by_label("Write").uncheck()
    expiry = (datetime.date.today() + datetime.timedelta(days=30)).isoformat()
    page.get_by_label("Expires on").fill(expiry)
    click(page, page.get_by_role("button", name="Create", exact=True))
    field = page.locator("#new-key-secret")
    secret = field.input_value() if field.count() else ""
    need(secret.startswith("rhk_"), f"no secret shown after creating a key: {page.url}: {page.inner_text('main')[:600]}")
    if not secret:
        return
    need(field.get_attribute("readonly") is not None, "the secret's field is not read-only")
    need(page.evaluate("document.activeElement && document.activeElement.id") == "new-key-secret",
         "the secret's field is not focused")
    need(page.evaluate("window.getSelection().toString() || (document.activeElement.selectionEnd - "
                       "document.activeElement.selectionStart)") not in (0, ""), "the secret is not selected")
    copy = page.get_by_role("button", name="Copy secret")
    need(copy.count() == 1 and copy.is_visible(), "no visible Copy secret button (the script did not run?)")
    if copy.count():
        copy.click()
        page.wait_for_function("document.querySelector('[data-copy]').textContent === 'Copied'", timeout=3000)
        copied = page.evaluate("navigator.clipboard.readText()")
        need(copied == secret, f"the clipboard holds {copied!r}, not the secret")
    screenshot_state = page.url
    # A reload makes no other key and no longer shows the secret.
    page.reload()
    page.wait_for_load_state()
    need(page.locator("#new-key-secret").count() == 0, "the secret is shown again after a reload")
    made = [k for k in api(base, "/v1/partner/settings/integrations/keys", key)["data"] if k["label"] == "Stock sync"]
    need(len(made) == 1, f"{len(made)} keys named Stock sync after a reload")
    if made:
        need(made[0]["scopes"] == ["read"], f"the key's scopes are {made[0]['scopes']}")
        need((made[0]["expires_at"] or "").startswith(expiry), f"the key expires at {made[0]['expires_at']}")
    need(status_with(base, "/v1/listings/options", secret) == 200, "the new key does not work")

    # Revoke, then cancel the confirmation (and dismiss any dialog): the key survives.
    page.once("dialog", lambda dialog: dialog.dismiss())
    ask(page, key_row(page, "Stock sync").get_by_role("button", name="Revoke"))
    need(page.get_by_role("button", name="Revoke key").count() == 1, "Revoke did not ask first")
    click(page, page.get_by_role("link", name="No, keep the key"))
    need(page.url.endswith("/dashboard/integrations"), f"Cancel led to {page.url}")
    listed = [k for k in api(base, "/v1/partner/settings/integrations/keys", key)["data"] if k["label"] == "Stock sync"]
    need(bool(listed) and listed[0]["revoked_at"] is None, "the key was revoked by a cancelled confirmation")
    need(status_with(base, "/v1/listings/options", secret) == 200, "the key stopped working after a cancel")

    # Roll with a one-hour overlap: a new secret, once; the old key still works for now.
    click(page, key_row(page, "Stock sync").get_by_role("button", name="Roll"))
    page.get_by_label("Keep the old key working for (hours)").fill("1")
    click(page, page.get_by_role("button", name="Roll key"))
    rolled = page.locator("#new-key-secret").input_value() if page.locator("#new-key-secret").count() else ""
    need(rolled.startswith("rhk_") and rolled != secret, "no new secret after rolling")
    need(status_with(base, "/v1/listings/options", rolled) == 200, "the rolled key does not work")
    need(status_with(base, "/v1/listings/options", secret) == 200, "the old key stopped before its overlap")
    return screenshot_state


def check_team(page, base, key, need, watch):
    page.goto(base + "/dashboard/team")
    click(page, page.get_by_role("button", name="Invite"))
    page.get_by_label("Email").fill("sam@acme.example")
    page.get_by_label("Name").fill("Sam Stock")
    click(page, page.get_by_role("button", name="Send invite"))
    first = page.locator("#invitation-link").input_value() if page.locator("#invitation-link").count() else ""
    need("/dashboard/invite/" in first, "no invitation link shown")
    need(page.get_by_role("button", name="Copy link").is_visible(), "no Copy link button")
    page.reload()
    need(page.locator("#invitation-link").count() == 0, "the link is shown again after a reload")
    invited = [m for m in api(base, "/v1/partner/settings/team", key)["members"] if m["email"] == "sam@acme.example"]
    need(len(invited) == 1, f"{len(invited)} invitations after a reload")

    click(page, page.get_by_role("button", name="Resend invitation"))
    second = page.locator("#invitation-link").input_value() if page.locator("#invitation-link").count() else ""
    need("/dashboard/invite/" in second and second != first, "no new link after Resend invitation")
    other = page.context.new_page()
    watch_other = Watch(other, "{0.scheme}://{0.netloc}".format(urlsplit(base)))
    watch_other.allowed.add(410)
    answer = other.goto(first)
    need(answer.status == 410 and other.get_by_text("has been used or has expired").count() == 1,
         f"the old link still opens ({answer.status})")
    need(other.goto(second).status == 200, "the new link does not open")

    ask(page, page.get_by_role("button", name="Cancel invitation"))
    need(page.get_by_text("Cancel the invitation for Sam Stock?").count() == 1, "no confirmation step")
    click(page, page.get_by_role("button", name="Cancel invitation"))
    need(page.get_by_text("Invitation cancelled").count() == 1, "cancelling did not say so")
    need(page.get_by_role("cell", name="sam@acme.example").count() == 0, "Sam is still listed")
    need(other.goto(second).status == 410, "the cancelled link still opens")
    watch.problems += watch_other.problems
    other.close()

    # Make Mo an admin, then a member again (a confirmation step).
    click(page, page.get_by_role("button", name="Make admin Mo Member"))
    need(page.get_by_text("Role changed.").count() == 1, "making an admin did not say so")
    role = [m["role"] for m in api(base, "/v1/partner/settings/team", key)["members"] if m["email"] == MEMBER]
    need(role == ["admin"], f"Mo's role is {role}")
    ask(page, page.get_by_role("button", name="Make member Mo Member"))
    click(page, page.get_by_role("button", name="Make Mo Member a member"))
    role = [m["role"] for m in api(base, "/v1/partner/settings/team", key)["members"] if m["email"] == MEMBER]
    need(role == ["member"], f"Mo's role is {role} after making them a member")
    # Ada, the only admin, cannot make herself a member: the sentence, not a code.
    ask(page, page.get_by_role("button", name="Make me a member"))
    watch.allowed.add(409)
    click(page, page.get_by_role("button", name="Make me a member"))
    watch.allowed.discard(409)
    need(page.get_by_text("Your team would have no admin left").count() == 1, "the last admin was not kept")
    need(page.get_by_text("last_admin").count() == 0, "a code on the page")


def check_widths(page, base, shots, need, states):
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for name, path in states:
            page.goto(base + path)
            page.wait_for_load_state()
            wide = page.evaluate("document.scrollingElement.scrollWidth")
            need(wide <= page.evaluate("window.innerWidth"), f"{path} scrolls sideways at {width} px ({wide})")
            if shots:
                page.screenshot(path=os.path.join(shots, f"{name}-{width}.png"), full_page=True)


def main():
    args, chromium, binary = browser_args()
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

    with tempfile.TemporaryDirectory() as workdir:
        key = seed(binary, workdir)
        server, base = start_server(binary, workdir)
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                context = browser.new_context(viewport={"width": 1280, "height": 900},
                                              permissions=["clipboard-read", "clipboard-write"])
                page = context.new_page()
                watch = Watch(page, origin)
                sign_in(page, base, ADMIN)
                check_keys(page, base, key, need)
                check_team(page, base, key, need, watch)

                # A member: no Team link, and the page by its address says it is for admins.
                member_page = browser.new_page()
                member_watch = Watch(member_page, origin)
                member_watch.allowed.add(403)
                sign_in(member_page, base, MEMBER)
                answer = member_page.goto(base + "/dashboard/team")
                need(answer.status == 403 and member_page.get_by_text("for your brand's admins").count() == 1,
                     f"a member opening Team got {answer.status}")
                member_page.close()

                # The pages with a pending invitation and a new key, at both widths.
                page.goto(base + "/dashboard/team/invite")
                page.get_by_label("Email").fill("lee@acme.example")
                page.get_by_label("Name").fill("Lee Long-Name Logistics")
                click(page, page.get_by_role("button", name="Send invite"))
                check_widths(page, base, args.screenshots, need, [
                    ("team-pending-invitation", "/dashboard/team"), ("integrations-rolled-key", "/dashboard/integrations"),
                ])
                # A secret shown once, at both widths (each shot makes a key).
                for width in (1280, 390):
                    page.set_viewport_size({"width": width, "height": 900})
                    page.goto(base + "/dashboard/integrations/keys/new")
                    page.get_by_label("Label").fill(f"Shown at {width}")
                    click(page, page.get_by_role("button", name="Create", exact=True))
                    wide = page.evaluate("document.scrollingElement.scrollWidth")
                    need(wide <= width, f"the new key's page scrolls sideways at {width} px ({wide})")
                    if args.screenshots:
                        page.screenshot(path=os.path.join(args.screenshots, f"integrations-new-secret-{width}.png"),
                                        full_page=True)
                problems += watch.problems + member_watch.problems
                browser.close()
        finally:
            server.terminate()
            server.wait()
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("team and keys: ok")


if __name__ == "__main__":
    main()
