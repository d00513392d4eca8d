// tests/deploy/validate.mjs — checks Kubernetes objects against the API's schemas, offline.
//
//   node validate.mjs OBJECTS.json     (a JSON array of objects; prints {"errors": [...]})
//
// Two passes, both from pinned npm packages (package.json, package-lock.json):
//  1. the JSON schema of each object's kind — Kubernetes's own OpenAPI definitions and KEDA's
//     CRD types, compiled by ajv into kubernetes-models and @kubernetes-models/keda — with
//     types, enums, formats and required fields;
//  2. the TypeScript interfaces the same packages generate from those schemas, through tsc's
//     excess-property check, which catches what the schemas let through: a field the API does
//     not have (a typo is silently dropped by the API server, so the setting never applies).
import fs from "node:fs";
import path from "node:path";
import url from "node:url";
import ts from "typescript";

const here = path.dirname(url.fileURLToPath(import.meta.url));

function modulePath(apiVersion, kind) {
  if (apiVersion.startsWith("keda.sh/")) return `@kubernetes-models/keda/${apiVersion}/${kind}`;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

function describe(o) {
  return `${o.kind}/${o.metadata?.name ?? "?"}`;
}

async function schemaPass(objs, errors) {
  for (const o of objs) {
    let mod;
    try {
      mod = await import(modulePath(o.apiVersion, o.kind));
    } catch (e) {
      errors.push({ object: describe(o), message: `no schema for ${o.apiVersion} ${o.kind}` });
      continue;
    }
    try {
      new mod[o.kind](o).validate();
    } catch (e) {
      errors.push({ object: describe(o), message: `schema: ${e.message}` });
    }
  }
}

function typePass(objs, errors) {
  const file = path.join(here, `.check-${process.pid}.ts`);
  const lines = objs.map((o, i) =>
    `import type { I${o.kind} as T${i} } from "${modulePath(o.apiVersion, o.kind)}";`);
  const first = lines.length;
  objs.forEach((o, i) => lines.push(`export const o${i}: T${i} = ${JSON.stringify(o)};`));
  fs.writeFileSync(file, lines.join("\n") + "\n");
  try {
    const program = ts.createProgram([file], {
      strict: true, noEmit: true, skipLibCheck: true, types: [],
      target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
    });
    for (const d of ts.getPreEmitDiagnostics(program)) {
      const line = d.file ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
      const o = line >= first ? objs[line - first] : null;
      errors.push({ object: o ? describe(o) : "(imports)",
                    message: `fields: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}` });
    }
  } finally {
    fs.unlinkSync(file);
  }
}

const objs = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const errors = [];
await schemaPass(objs, errors);
typePass(objs, errors);
process.stdout.write(JSON.stringify({ checked: objs.length, errors }) + "\n");
process.exit(errors.length ? 1 : 0);
