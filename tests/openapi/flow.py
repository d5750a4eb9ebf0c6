#!/usr/bin/env python3
"""The scripted flow with the Python client openapi-python-client generated from the served
document (tests/openapi/run.sh): every JSON answer validated against the document, every
webhook delivery against its `webhooks` entry and verified with the `standardwebhooks`
library. Also checks the TypeScript flow's record of answers (`--check-record`).

    flow.py --base URL --key KEY --ops-token TOKEN --doc openapi.json --client DIR --sheet listings.xlsx
    flow.py --doc openapi.json --check-record answers.jsonl
    flow.py --make-sheet listings.xlsx

Files go both ways as files, with no cast and no generator configuration: the photo and the
spreadsheet are uploaded as `multipart/form-data`, and the template, the error workbook and
the PDF statement come back as the generated `File`.
"""

import argparse
import base64
import http.server
import io
import json
import queue
import sys
import threading
import uuid

from check import Document, formats_are_checked

# A 1×1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class Receiver:
    """A webhook endpoint on a free local port that records every delivery."""

    def __init__(self):
        deliveries = self.deliveries = queue.Queue()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                deliveries.put((dict(self.headers.items()), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/{uuid.uuid4().hex}"

    def next(self, timeout=15.0):
        return self.deliveries.get(timeout=timeout)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--doc")
    parser.add_argument("--base")
    parser.add_argument("--key")
    parser.add_argument("--ops-token")
    parser.add_argument("--client", help="the directory holding the generated package rehome_client")
    parser.add_argument("--check-record", help="a JSON-lines record of answers to validate instead")
    parser.add_argument("--sheet", help="the workbook both flows validate (made by --make-sheet)")
    parser.add_argument("--make-sheet", help="write the workbook both flows validate to this path, and stop")
    args = parser.parse_args()
    if args.make_sheet:
        make_sheet(args.make_sheet)
        return 0
    if not args.doc:
        parser.error("--doc is required")
    formats_are_checked()
    with open(args.doc) as f:
        document = Document(json.load(f))
    if args.check_record:
        return check_record(document, args.check_record)
    sys.path.insert(0, args.client)
    flow(document, args)
    print("python client flow: ok")
    return 0


def make_sheet(path: str) -> None:
    """A workbook of two listings, the second with a price that is not a number."""
    from openpyxl import Workbook
    book = Workbook()
    sheet = book.active
    sheet.title = "Listings"
    sheet.append(["title", "price_gbp", "condition", "category", "faults"])
    sheet.append(["Walnut footstool", 250, "excellent", "Footstools", "None"])
    sheet.append(["Teak chair", "twelve", "fair", "Armchairs", "None"])
    book.save(path)


def check_record(document: Document, path: str) -> int:
    count = 0
    with open(path) as f:
        for line in f:
            answer = json.loads(line)
            body = answer["body"].encode() if answer["body"] is not None else b""
            document.check_answer(answer["method"], answer["path"], answer["status"], answer["contentType"], body)
            count += 1
    assert count >= 10, f"only {count} answers recorded"
    print(f"typescript client flow: {count} answers match the document")
    return 0


def flow(document: Document, args) -> None:
    from rehome_client import AuthenticatedClient
    from rehome_client.api.listings import (
        bulk_template, bulk_validate, bulk_validate_workbook, create_listing, delete_listing, get_listing,
        list_listings, options, update_listing, upload_photo)
    from rehome_client.api.operator import run_remittances
    from rehome_client.api.team_and_keys import list_keys, list_team
    from rehome_client.api.wallet import (
        get_remittance, get_wallet, list_entries, list_remittances, statement_csv, statement_pdf)
    from rehome_client.api.webhooks import get_webhook, list_deliveries, patch_webhook, send_test_event
    from rehome_client.models import (
        BulkForm, Condition, CursorPaging, EventType, ListingBody, ListingPatch, PageMeta, PhotoForm,
        RemittanceRunInput, SubscribableEventType, SyncMeta, WebhookInput)
    from rehome_client.types import File

    client = AuthenticatedClient(base_url=args.base, token=args.key, raise_on_unexpected_status=True)
    operator = AuthenticatedClient(base_url=args.base, token=args.ops_token, raise_on_unexpected_status=True)

    def answer(response, method, template, status):
        assert response.status_code == status, f"{method} {template}: {response.status_code} {response.content[:300]!r}"
        document.check_answer(method, template, response.status_code, response.headers.get("content-type"),
                              response.content)
        return response

    taxonomy = answer(options.sync_detailed(client=client), "GET", "/v1/listings/options", 200).parsed
    photo = answer(upload_photo.sync_detailed(client=client, body=PhotoForm(
        file=File(payload=io.BytesIO(PNG), file_name="dot.png", mime_type="image/png"))),
        "POST", "/v1/listings/upload-photo", 201).parsed
    assert photo.attachment_id > 0
    body = ListingBody.from_dict({
        "title": "Generated-client sofa", "price_gbp": 450, "condition": "excellent",
        "category": taxonomy.categories[0], "faults": ["None"], "channel": "clearance", "quantity": 2,
        "attachment_ids": [photo.attachment_id],
    })
    created = answer(create_listing.sync_detailed(client=client, body=body, idempotency_key=str(uuid.uuid4())),
                     "POST", "/v1/listings", 201)
    listing_id, etag = created.parsed.id, created.headers["etag"]
    read = answer(get_listing.sync_detailed(listing_id, client=client), "GET", "/v1/listings/{id}", 200)
    assert read.headers["etag"] == etag, "the create's ETag is the one a GET gives"
    # One enum per concept: the condition read back is the type an edit sends.
    assert read.parsed.condition is Condition.EXCELLENT
    patched = answer(update_listing.sync_detailed(listing_id, client=client, if_match=etag,
                                                  body=ListingPatch(sale_price_gbp=399, condition=read.parsed.condition)),
                     "PATCH", "/v1/listings/{id}", 200)
    assert patched.parsed.sale_price == 399 and patched.headers["etag"] != etag
    stale = answer(update_listing.sync_detailed(listing_id, client=client, if_match=etag,
                                                body=ListingPatch.from_dict({"title": "Lost update"})),
                   "PATCH", "/v1/listings/{id}", 412)
    assert stale.parsed.code == "precondition_failed"
    page = answer(list_listings.sync_detailed(client=client, per_page=5), "GET", "/v1/listings", 200).parsed
    assert any(item.id == listing_id for item in page.data)
    assert isinstance(page.meta, PageMeta) and page.meta.total >= 1
    sync = answer(list_listings.sync_detailed(client=client, updated_since=read.parsed.created_at),
                  "GET", "/v1/listings", 200).parsed
    assert any(item.id == listing_id for item in sync.data)
    assert isinstance(sync.meta, SyncMeta) and sync.meta.paging is CursorPaging.CURSOR, sync.meta
    answer(delete_listing.sync_detailed(listing_id, client=client), "DELETE", "/v1/listings/{id}", 200)
    answer(get_listing.sync_detailed(listing_id, client=client), "GET", "/v1/listings/{id}", 404)

    # Bulk import with files: the template down, a workbook up (multipart) for the JSON report
    # and for the annotated workbook.
    template = answer(bulk_template.sync_detailed(client=client), "GET", "/v1/listings/bulk-template", 200).parsed
    assert isinstance(template, File) and template.payload.read().startswith(b"PK"), "the template is an .xlsx"
    with open(args.sheet, "rb") as f:
        sheet = f.read()
    xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

    def sheet_form():
        return BulkForm(file=File(payload=io.BytesIO(sheet), file_name="listings.xlsx", mime_type=xlsx))

    report = answer(bulk_validate.sync_detailed(client=client, body=sheet_form()),
                    "POST", "/v1/listings/bulk-validate", 200).parsed
    assert (report.row_count, report.error_count) == (2, 1), report.to_dict()
    detail = report.rows[1].error_details[0]
    assert (detail.code, detail.cell) == ("price_gbp_invalid", "B3") and detail.message, detail.to_dict()
    workbook = answer(bulk_validate_workbook.sync_detailed(client=client, body=sheet_form()),
                      "POST", "/v1/listings/bulk-validate/workbook", 200).parsed
    assert isinstance(workbook, File) and workbook.payload.read().startswith(b"PK"), "the error workbook"

    receiver = Receiver()
    configured = answer(patch_webhook.sync_detailed(client=client, body=WebhookInput(
        url=receiver.url, enabled=True, event_types=[SubscribableEventType.REDEMPTION_CREATED,
                                                     SubscribableEventType.COLLECTION_SCHEDULED])),
        "PATCH", "/v1/partner/settings/integrations/webhook", 200).parsed
    secret = configured.signing_secret
    assert isinstance(secret, str) and secret.startswith("whsec_"), "a first configuration returns the secret"
    answer(get_webhook.sync_detailed(client=client), "GET", "/v1/partner/settings/integrations/webhook", 200)
    sent = answer(send_test_event.sync_detailed(client=client), "POST",
                  "/v1/partner/settings/integrations/webhook/test", 200).parsed
    # Events the demo emitted before an endpoint was set arrive too: every delivery is
    # checked against its type's `webhooks` entry and verified, until the ping.
    from standardwebhooks import Webhook
    seen = set()
    while sent.event_id not in seen:
        headers, raw = receiver.next()
        event_type = {k.lower(): v for k, v in headers.items()}["x-service-event"]
        verified = Webhook(secret).verify(raw, {k.lower(): v for k, v in headers.items()})
        payload = document.check_webhook(event_type, headers, raw)
        assert payload["id"] == verified["id"] and payload["type"] == event_type
        seen.add(payload["id"])
        print(f"webhook {event_type} delivery: valid and verified")
    log = answer(list_deliveries.sync_detailed(client=client), "GET", "/v1/partner/webhooks/deliveries", 200).parsed
    assert any(d.type_ is EventType.PING for d in log.data), "the delivery log's type is the event type enum"

    answer(get_wallet.sync_detailed(client=client), "GET", "/v1/wallet", 200)
    answer(list_entries.sync_detailed(client=client), "GET", "/v1/wallet/entries", 200)
    answer(run_remittances.sync_detailed(client=operator, body=RemittanceRunInput.from_dict({})),
           "POST", "/ops/v1/remittances/run", 200)
    statements = answer(list_remittances.sync_detailed(client=client), "GET", "/v1/remittances", 200).parsed
    assert statements.data, "the demo's wallet entry is on a statement"
    statement_id = statements.data[0].id
    answer(get_remittance.sync_detailed(statement_id, client=client), "GET", "/v1/remittances/{id}", 200)
    csv = answer(statement_csv.sync_detailed(statement_id, client=client),
                 "GET", "/v1/remittances/{id}/statement.csv", 200)
    assert csv.headers["content-type"].startswith("text/csv") and csv.content.count(b"\n") >= 2
    pdf = answer(statement_pdf.sync_detailed(statement_id, client=client),
                 "GET", "/v1/remittances/{id}/statement.pdf", 200)
    assert isinstance(pdf.parsed, File) and pdf.parsed.payload.read().startswith(b"%PDF"), "the PDF is a File"

    team = answer(list_team.sync_detailed(client=client), "GET", "/v1/partner/settings/team", 200).parsed
    assert team.members
    keys = answer(list_keys.sync_detailed(client=client), "GET", "/v1/partner/settings/integrations/keys", 200).parsed
    assert keys.data


if __name__ == "__main__":
    sys.exit(main())
