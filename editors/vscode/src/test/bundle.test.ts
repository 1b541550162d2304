/**
 * The bundle (dist/extension.js, built by `npm run bundle` before `npm test`) loads with
 * only `vscode` external, and the manifest agrees with the code: main, commands.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import Module from "node:module";
import * as path from "node:path";
import { test } from "node:test";

const ROOT = path.resolve(__dirname, "..", "..", "..");
const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf-8")) as {
  main: string;
  contributes: { commands: { command: string }[] };
  activationEvents: string[];
  extensionKind: string[];
};

/** A stand-in for the `vscode` module: every member is a callable, constructible stub. */
function stub(): unknown {
  const f = function () {
    return undefined;
  };
  return new Proxy(f, {
    get: (_t, p) => (p === "prototype" ? {} : stub()),
    construct: () => ({}),
    apply: () => undefined,
  });
}

test("the bundle loads with nothing but `vscode` external and exports activate/deactivate", () => {
  const bundle = path.join(ROOT, manifest.main);
  assert.ok(existsSync(bundle), `${bundle} is missing: run \`npm run bundle\` first`);
  const mod = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = mod._load;
  const requested: string[] = [];
  mod._load = function (request: string, ...rest: unknown[]) {
    requested.push(request);
    return request === "vscode" ? stub() : load.call(this, request, ...rest);
  };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const ext = require(bundle) as Record<string, unknown>;
    assert.equal(typeof ext.activate, "function");
    assert.equal(typeof ext.deactivate, "function");
  } finally {
    mod._load = load;
  }
  // only Node built-ins and vscode are loaded at run time (the rest is bundled)
  const builtin = new Set(Module.builtinModules);
  const foreign = requested.filter((r) => r !== "vscode" && r !== bundle && !builtin.has(r.replace(/^node:/, "")));
  assert.deepEqual(foreign, []);
});

test("every contributed command is registered by the extension, and only those", () => {
  const source = readFileSync(path.join(ROOT, "src", "extension.ts"), "utf-8");
  const registered = [...source.matchAll(/registerCommand\("([^"]+)"/g)].map((m) => m[1]).sort();
  assert.deepEqual(manifest.contributes.commands.map((c) => c.command).sort(), registered);
});

test("the manifest: Python files activate it; it runs where the files are (Remote-SSH)", () => {
  assert.deepEqual(manifest.activationEvents, ["onLanguage:python"]);
  assert.deepEqual(manifest.extensionKind, ["workspace"]);
});
