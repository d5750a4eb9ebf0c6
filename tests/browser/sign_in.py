#!/usr/bin/env python3
"""Signing in to the dashboard in a real headless Chromium: the form's accessible names
(labels "Email" and "Password", button "Sign in"), a wrong password staying on the page and
saying so, the signed-in page ("Signed in as …", "Sign out"), and signing out. The page must
load nothing from another origin and log no console error (a CSP violation included).

Starts the built binary on a free port with a temporary SQLite database, after creating a
brand, a user and their password with the CLI (`brands create`, `users create`,
`users set-password`). Usage:

    python3 tests/browser/sign_in.py [--binary target/debug/rehome]

Needs `playwright` (pip) and a Chromium (`/usr/bin/chromium`, or CHROMIUM=path); browsers are
never downloaded.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from urllib.parse import urlsplit

from harness import start_server
from playwright.sync_api import expect, sync_playwright

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EMAIL = "ada@acme.example"
PASSWORD = "correct horse battery staple"


def cli(binary: str, workdir: str, *args: str, stdin: str = "") -> str:
    env = dict(os.environ, REHOME_DATABASE_URL="sqlite://rehome.db")
    env.pop("REHOME_DATA_KEY", None)
    done = subprocess.run([binary, *args], cwd=workdir, env=env, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"rehome {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def seed(binary: str, workdir: str) -> None:
    cli(binary, workdir, "brands", "create", "acme", "--name", "Acme Sofas")
    out = cli(binary, workdir, "users", "create", "--brand", "acme", "--name", "Ada Admin", "--email", EMAIL)
    user_id = out.strip().splitlines()[-1]
    cli(binary, workdir, "users", "set-password", user_id, stdin=PASSWORD + "\n")


def check(base: str, chromium: str) -> list:
    problems = []
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        # A failed sign-in answers 401, which Chromium logs as a failed load: expected there only.
        expected_401 = [False]

        def on_console(message):
            if message.type != "error":
                return
            if expected_401[0] and "status of 401" in message.text:
                return
            problems.append(f"console error: {message.text}")

        page.on("console", on_console)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

        def on_request(request):
            if not request.url.startswith(origin + "/") and not request.url.startswith("data:"):
                problems.append(f"request to another origin: {request.url}")

        page.on("request", on_request)

        # Without a session the dashboard leads to the sign-in page.
        response = page.goto(base + "/dashboard")
        if not page.url.endswith("/dashboard/login"):
            problems.append(f"/dashboard without a session went to {page.url}")
        csp = response.headers.get("content-security-policy", "")
        if "unsafe-inline" in csp or "frame-ancestors 'none'" not in csp:
            problems.append(f"weak CSP on the sign-in page: {csp!r}")

        # A wrong password stays on the page and says so.
        page.get_by_label("Email").fill(EMAIL)
        page.get_by_label("Password").fill("not the password at all")
        expected_401[0] = True
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state()
        expected_401[0] = False
        if not page.url.endswith("/dashboard/login"):
            problems.append(f"a failed sign-in left the page for {page.url}")
        if not re.search(r"email or password is incorrect", page.content(), re.I):
            problems.append("a failed sign-in does not say the email or password is incorrect")

        # The right one signs in.
        page.get_by_label("Email").fill(EMAIL)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state()
        try:
            expect(page.get_by_text("Signed in as Ada Admin")).to_be_visible(timeout=5000)
        except AssertionError:
            problems.append(f"not signed in: {page.url}")
        # The stylesheet applied (served by this origin, allowed by the CSP).
        colour = page.eval_on_selector("header.top", "e => getComputedStyle(e).backgroundColor")
        if colour != "rgb(255, 255, 255)":
            problems.append(f"the dashboard stylesheet did not apply (header background {colour})")
        # The name in the header leads to the account page (decisions 9.7), with the password form.
        page.get_by_role("link", name="Ada Admin").click()
        page.wait_for_load_state()
        if not page.url.endswith("/dashboard/account"):
            problems.append(f"the name in the header led to {page.url}")
        for label in ("Current password", "New password", "Confirm new password"):
            if page.get_by_label(label, exact=True).count() != 1:
                problems.append(f"no field labelled {label!r} on the account page")

        # Sign out: back on the sign-in page, and the dashboard is closed again.
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_load_state()
        if not page.url.endswith("/dashboard/login"):
            problems.append(f"signing out went to {page.url}")
        if page.get_by_text("You are signed out.").count() != 1:
            problems.append("signing out did not say so")
        page.goto(base + "/dashboard")
        if not page.url.endswith("/dashboard/login"):
            problems.append("the dashboard is still open after signing out")
        browser.close()
    return problems


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "rehome"))
    args = parser.parse_args()
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("no chromium found (apt-get install chromium, or set CHROMIUM)")
    binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory() as workdir:
        seed(binary, workdir)
        server, base = start_server(binary, workdir)
        try:
            problems = check(base, chromium)
        finally:
            server.terminate()
            server.wait(timeout=10)
    if problems:
        sys.exit("dashboard sign-in check failed:\n  " + "\n  ".join(problems))
    print("dashboard sign-in ok")


if __name__ == "__main__":
    main()
