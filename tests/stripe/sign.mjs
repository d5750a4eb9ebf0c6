#!/usr/bin/env node
// Webhook signatures made and checked by Stripe's official Node library (the `stripe` package
// pinned in tests/browser/package.json; `npm ci` there), so the Stripe checks sign exactly as
// Stripe does and not as we think it does. It is loaded from tests/browser/node_modules
// wherever this script is run from (ES modules ignore NODE_PATH).
//
//   node tests/stripe/sign.mjs [sign]   each line of stdin {"payload", "secret", "timestamp"}
//       (payload the exact body, as a string; timestamp in Unix seconds, default now) → one line:
//       the `Stripe-Signature` header, from stripe.webhooks.generateTestHeaderString. Each is
//       verified again with stripe.webhooks.constructEvent (a tolerance that covers its
//       timestamp) before it is printed; a failure ends the script with status 1.
//   node tests/stripe/sign.mjs verify   each line {"payload", "header", "secret", "tolerance"}
//       (tolerance in seconds, default 300 as in the library) → one line of JSON:
//       {"ok": true, "id": …, "type": …} or {"ok": false, "error": "…"}, from constructEvent.
//
// No request leaves the machine: the client is made with a dummy key and only its webhooks
// helpers are used.
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';

const require = createRequire(new URL('../browser/package.json', import.meta.url));
const Stripe = require('stripe');
const stripe = new Stripe('sk_test_signing_only', { maxNetworkRetries: 0 });

const mode = process.argv[2] || 'sign';
if (mode !== 'sign' && mode !== 'verify') {
  console.error(`usage: node sign.mjs [sign|verify] < lines of JSON (not ${mode})`);
  process.exit(2);
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  const item = JSON.parse(line);
  if (typeof item.payload !== 'string' || typeof item.secret !== 'string') {
    console.error(`each line needs "payload" and "secret" strings: ${line.slice(0, 200)}`);
    process.exit(2);
  }
  if (mode === 'sign') {
    const timestamp = item.timestamp ?? Math.floor(Date.now() / 1000);
    const header = stripe.webhooks.generateTestHeaderString({
      payload: item.payload,
      secret: item.secret,
      timestamp,
    });
    const age = Math.max(0, Math.floor(Date.now() / 1000) - timestamp);
    try {
      stripe.webhooks.constructEvent(item.payload, header, item.secret, age + 60);
    } catch (error) {
      console.error(`the library does not verify its own signature: ${error.message}`);
      process.exit(1);
    }
    console.log(header);
  } else {
    try {
      const event = stripe.webhooks.constructEvent(item.payload, item.header ?? '', item.secret, item.tolerance ?? 300);
      console.log(JSON.stringify({ ok: true, id: event.id, type: event.type }));
    } catch (error) {
      console.log(JSON.stringify({ ok: false, error: error.message }));
    }
  }
}
