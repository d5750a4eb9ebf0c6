// The scripted flow with the TypeScript client (openapi-typescript types + openapi-fetch),
// compiled with `tsc --strict` by tests/openapi/run.sh. Every answer is recorded (method,
// path template, status, content type, body) for flow.py to validate against the document.
import { appendFileSync } from "node:fs";
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
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

async function main(): Promise<void> {
  const options = await api.GET("/v1/listings/options");
  check(options.data, `options: ${options.response.status}`);

  const photo = await api.POST("/v1/listings/upload-photo", { body: { image_base64: png, filename: "dot.png" } });
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

  const patched = await api.PATCH("/v1/listings/{id}", {
    params: { path: { id }, header: { "If-Match": etag } },
    body: { title: "TypeScript sofa, renamed" },
  });
  check(patched.data?.title === "TypeScript sofa, renamed", `patch: ${patched.response.status}`);
  const stale = await api.PATCH("/v1/listings/{id}", {
    params: { path: { id }, header: { "If-Match": etag } },
    body: { title: "Lost update" },
  });
  check(stale.response.status === 412 && stale.error?.code === "precondition_failed", "a stale If-Match is 412");

  const page = await api.GET("/v1/listings", { params: { query: { per_page: 10, status: "any" } } });
  check(page.data?.data.some((listing) => listing.id === id), "the listing is listed");
  const walk = await api.GET("/v1/listings", { params: { query: { updated_since: read.data.created_at } } });
  check(walk.data?.data.some((listing) => listing.id === id), "the sync walk shows it");

  const deleted = await api.DELETE("/v1/listings/{id}", { params: { path: { id } } });
  check(deleted.data?.deleted === true, `delete: ${deleted.response.status}`);

  const webhook = await api.GET("/v1/partner/settings/integrations/webhook");
  check(webhook.data, `webhook settings: ${webhook.response.status}`);

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
    parseAs: "arrayBuffer",
  });
  check(pdf.data && new TextDecoder().decode(pdf.data.slice(0, 4)) === "%PDF", "the PDF statement");

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
