// Generates the TypeScript types of the document the way openapi-typescript documents for
// files (https://openapi-ts.dev/node, "Blob"): its Node API, with a `transform` that types
// every `format: binary` string as a `Blob`, so a photo or a spreadsheet is uploaded as a
// Blob in a form and no cast is needed.
//
//   node generate.mjs openapi.json schema.d.ts
import { readFileSync, writeFileSync } from "node:fs";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";

const [input, output] = process.argv.slice(2);
if (!input || !output) throw new Error("usage: node generate.mjs openapi.json schema.d.ts");
const BLOB = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier("Blob"));
const NULL = ts.factory.createLiteralTypeNode(ts.factory.createNull());
const ast = await openapiTS(JSON.parse(readFileSync(input, "utf8")), {
  transform(schemaObject) {
    if (schemaObject.format === "binary") {
      return schemaObject.nullable ? ts.factory.createUnionTypeNode([BLOB, NULL]) : BLOB;
    }
    return undefined;
  },
});
writeFileSync(output, astToString(ast));
