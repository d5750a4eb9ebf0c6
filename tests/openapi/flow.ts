// The scripted flow with the TypeScript client (openapi-typescript types, made by
// generate.mjs, + openapi-fetch), compiled with `tsc --strict` by tests/openapi/run.sh. Every
// answer is recorded (method, path template, status, content type, body) for flow.py to
// validate against the document. Files go both ways as Blobs with no cast: the photo and the
// spreadsheet are uploaded in a FormData, the template, the error workbook and the PDF come
// back with `parseAs: "blob"`.
import { appendFileSync, readFileSync } from "node:fs";
import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "./schema.js";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const base = env("REHOME_BASE");
const record = env("REHOME_RECORD");

const recorder: Middleware = {
  async onResponse({ request, response, schemaPath }) {
    const contentType = response.headers.get("content-type") ?? "";
    const text = contentType.includes("json") || contentType.startsWith("text/") ? await response.clone().text() : null;
    const answer = { method: request.method, path: schemaPath, status: response.status, contentType, body: text };
    appendFileSync(record, JSON.stringify(answer) + "\n");
    return undefined;
  },
};

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

const api = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${env("REHOME_KEY")}` } });
api.use(recorder);

// A 1×1 PNG.
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
const xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/** A body whose `file` is a Blob, sent as `multipart/form-data` with a file name. */
function form(name: string) {
  return (body: { file: Blob } | object): FormData => {
    const data = new FormData();
    if ("file" in body && body.file instanceof Blob) data.append("file", body.file, name);
    return data;
  };
}

/** The first bytes of a downloaded file, as text. */
async function head(blob: Blob, length: number): Promise<string> {
  return new TextDecoder().decode((await blob.arrayBuffer()).slice(0, length));
}

async function main(): Promise<void> {
  const options = await api.GET("/v1/listings/options");
  check(options.data, `options: ${options.response.status}`);

  const photo = await api.POST("/v1/listings/upload-photo", {
    body: { file: new Blob([png], { type: "image/png" }) },
    bodySerializer: form("dot.png"),
  });
  check(photo.data, `upload: ${photo.response.status}`);

  const created = await api.POST("/v1/listings", {
    params: { header: { "Idempotency-Key": crypto.randomUUID() } },
    body: {
      title: "TypeScript sofa",
      price_gbp: 320,
      condition: "gently-used",
      category: options.data.categories[0],
      faults: ["None"],
      attachment_ids: [photo.data.attachment_id],
    },
  });
  check(created.data && created.response.status === 201, `create: ${created.response.status}`);
  const id = created.data.id;
  const etag = created.response.headers.get("etag");
  check(etag, "the 201 carries an ETag");

  const read = await api.GET("/v1/listings/{id}", { params: { path: { id } } });
  check(read.data && read.response.headers.get("etag") === etag, "GET answers the create's ETag");

  // One enum per concept: the condition read back is the type an edit sends.
  const patched = await api.PATCH("/v1/listings/{id}", {
    params: { path: { id }, header: { "If-Match": etag } },
    body: { title: "TypeScript sofa, renamed", condition: read.data.condition, channel: read.data.channel },
  });
  check(patched.data?.title === "TypeScript sofa, renamed", `patch: ${patched.response.status}`);
  const stale = await api.PATCH("/v1/listings/{id}", {
    params: { path: { id }, header: { "If-Match": etag } },
    body: { title: "Lost update" },
  });
  check(stale.response.status === 412 && stale.error?.code === "precondition_failed", "a stale If-Match is 412");

  const page = await api.GET("/v1/listings", { params: { query: { per_page: 10, status: "any" } } });
  check(page.data && page.data.data.some((listing) => listing.id === id), "the listing is listed");
  const numbered = page.data.meta;
  check(numbered.paging === "page" && numbered.total >= 1, "a numbered page says so");
  const walk = await api.GET("/v1/listings", { params: { query: { updated_since: read.data.created_at } } });
  check(walk.data && walk.data.data.some((listing) => listing.id === id), "the sync walk shows it");
  const meta = walk.data.meta;
  check(meta.paging === "cursor" && !meta.has_more && meta.next_cursor === null, "a sync page says so");

  const deleted = await api.DELETE("/v1/listings/{id}", { params: { path: { id } } });
  check(deleted.data?.deleted === true, `delete: ${deleted.response.status}`);

  // Bulk import with files: the template down, a workbook up for the JSON report and for the
  // annotated workbook.
  const template = await api.GET("/v1/listings/bulk-template", { parseAs: "blob" });
  check(template.data && (await head(template.data, 2)) === "PK", "the template is an .xlsx");
  const sheet = new Blob([readFileSync(env("REHOME_SHEET"))], { type: xlsx });
  const report = await api.POST("/v1/listings/bulk-validate", { body: { file: sheet }, bodySerializer: form("l.xlsx") });
  check(report.data?.row_count === 2 && report.data.error_count === 1, `bulk-validate: ${report.response.status}`);
  const detail = report.data.rows[1]?.error_details?.[0];
  check(detail?.code === "price_gbp_invalid" && detail.cell === "B3" && detail.message, "the bad cell, in words");
  const workbook = await api.POST("/v1/listings/bulk-validate/workbook", {
    body: { file: sheet },
    bodySerializer: form("l.xlsx"),
    parseAs: "blob",
  });
  check(workbook.data && (await head(workbook.data, 2)) === "PK", `error workbook: ${workbook.response.status}`);

  const webhook = await api.GET("/v1/partner/settings/integrations/webhook");
  check(webhook.data, `webhook settings: ${webhook.response.status}`);
  // Event types are enums (a plain `string` would not compile here: TS2322).
  type Listened = "redemption.created" | "collection.scheduled" | "collection.cancelled" | "listing.created" | "listing.updated" | "listing.deleted";
  const events: Listened[] = webhook.data.event_types;
  check(events.includes("redemption.created"), "the endpoint's event types");
  const deliveries = await api.GET("/v1/partner/webhooks/deliveries");
  check(deliveries.data, `delivery log: ${deliveries.response.status}`);
  const logged: (Listened | "ping")[] = deliveries.data.data.map((delivery) => delivery.type);
  check(Array.isArray(logged), "the delivery log's types");

  const wallet = await api.GET("/v1/wallet");
  check(wallet.data?.currency === "GBP", "wallet");
  const entries = await api.GET("/v1/wallet/entries", { params: { query: { limit: 10 } } });
  check(entries.data, "wallet entries");

  const operator = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${env("REHOME_OPS_TOKEN")}` } });
  operator.use(recorder);
  const run = await operator.POST("/ops/v1/remittances/run", { body: {} });
  check(run.data, `remittance run: ${run.response.status}`);
  const statements = await api.GET("/v1/remittances");
  const statement = statements.data?.data[0];
  check(statement, "a statement");
  const full = await api.GET("/v1/remittances/{id}", { params: { path: { id: statement.id } } });
  check(full.data?.lines, "the statement's lines");
  const csv = await api.GET("/v1/remittances/{id}/statement.csv", {
    params: { path: { id: statement.id } },
    parseAs: "text",
  });
  check(typeof csv.data === "string" && csv.data.includes("\n"), "the CSV statement");
  const pdf = await api.GET("/v1/remittances/{id}/statement.pdf", {
    params: { path: { id: statement.id } },
    parseAs: "blob",
  });
  check(pdf.data && (await head(pdf.data, 4)) === "%PDF", "the PDF statement");

  const team = await api.GET("/v1/partner/settings/team");
  check(team.data && team.data.members.length > 0, "team");
  const keys = await api.GET("/v1/partner/settings/integrations/keys");
  check(keys.data && keys.data.data.length > 0, "keys");
  console.log("typescript client flow: ok");
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
