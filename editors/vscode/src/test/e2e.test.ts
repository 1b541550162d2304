/**
 * End to end without VS Code: the bundled extension (dist/extension.js), with
 * vscode-languageclient inside it, activated against a stand-in `vscode` module
 * (fakeVscode.ts), starts the real `ave-lsp` and shows its diagnostics for a broken
 * example. Needs the Python that has Ave installed: AVE_TEST_PYTHON (ci.sh sets it);
 * skipped, saying so, without it.
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import Module from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { createFakeVscode, EventEmitter, textDocument, type Diagnostic, type FakeState } from "./fakeVscode";

const EXT_ROOT = path.resolve(__dirname, "..", "..", "..");
const REPO = path.resolve(EXT_ROOT, "..", "..");
const BROKEN = path.join(REPO, "examples", "broken", "gemm_swizzle_mismatch.py");
const PYTHON = process.env.AVE_TEST_PYTHON;
const SKIP = PYTHON ? false : "AVE_TEST_PYTHON is not set (the Python with Ave installed; editors/vscode/ci.sh sets it)";

interface Manifest {
  main: string;
  contributes: { configuration: { properties: Record<string, { default?: unknown }> }[] };
}
const manifest = JSON.parse(readFileSync(path.join(EXT_ROOT, "package.json"), "utf-8")) as Manifest;

function defaults(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const section of manifest.contributes.configuration) {
    for (const [k, p] of Object.entries(section.properties)) {
      out[k] = p.default;
    }
  }
  return out;
}

/** The line (1-based) of the bug in the broken example, from examples/broken/manifest.toml. */
function manifestLine(): number {
  const toml = readFileSync(path.join(REPO, "examples", "broken", "manifest.toml"), "utf-8");
  const block = toml.split("[[case]]").find((b) => b.includes('file = "gemm_swizzle_mismatch.py"'));
  const m = /^line\s*=\s*(\d+)/m.exec(block ?? "");
  assert.ok(m, "no line for gemm_swizzle_mismatch.py in manifest.toml");
  return Number(m[1]);
}

interface Extension {
  activate(ctx: { subscriptions: { dispose(): unknown }[] }): Promise<void>;
  deactivate(): Promise<void>;
}

/** Load a fresh copy of the bundle with `vscode` resolved to the fake. */
function loadExtension(state: FakeState): Extension {
  const bundle = path.join(EXT_ROOT, manifest.main);
  const fake = createFakeVscode(state);
  const mod = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = mod._load;
  mod._load = function (request: string, ...rest: unknown[]) {
    return request === "vscode" ? fake : load.call(this, request, ...rest);
  };
  try {
    delete require.cache[require.resolve(bundle)];
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(bundle) as Extension;
  } finally {
    mod._load = load;
  }
}

function newState(settings: Record<string, unknown>): { state: FakeState; file: string; dir: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "ave-vscode-e2e-"));
  const file = path.join(dir, path.basename(BROKEN));
  copyFileSync(BROKEN, file);
  const state: FakeState = {
    settings,
    defaults: defaults(),
    folder: dir,
    documents: [textDocument(file, readFileSync(file, "utf-8"))],
    diagnostics: new Map(),
    messages: [],
    output: [],
    status: {},
    configurationEvents: new EventEmitter(),
  };
  return { state, file, dir };
}

async function until<T>(what: string, get: () => T | undefined, state: FakeState, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = get();
    if (v !== undefined) {
      return v;
    }
    if (Date.now() > deadline) {
      assert.fail(`${what}: nothing within ${ms / 1000} s\noutput:\n${state.output.join("\n").slice(-4000)}\nmessages: ${JSON.stringify(state.messages)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function diagnosticsOf(state: FakeState, file: string): Diagnostic[] | undefined {
  const key = textDocument(file, "").uri.toString();
  const d = state.diagnostics.get(key);
  return d && d.length > 0 ? d : undefined;
}

test("the extension starts ave-lsp and shows its diagnostics (codes, links, witness steps)", { skip: SKIP, timeout: 180_000 }, async () => {
  const { state, file, dir } = newState({ "ave.interpreter": [PYTHON] });
  const ext = loadExtension(state);
  const ctx = { subscriptions: [] as { dispose(): unknown }[] };
  try {
    await ext.activate(ctx);
    assert.equal(state.status.text, "Ave 0.1.0", JSON.stringify(state.status) + "\n" + state.output.join("\n"));
    assert.deepEqual(state.messages, []);
    const diags = await until("AVE201 diagnostics", () => diagnosticsOf(state, file), state);
    const line = manifestLine();
    const hit = diags.find((d) => (d.code as { value?: string })?.value === "AVE201" && d.range.start.line === line - 1);
    assert.ok(hit, JSON.stringify(diags, null, 1).slice(0, 3000));
    assert.equal(hit.source, "ave");
    assert.equal(hit.severity, 0); // DiagnosticSeverity.Error
    assert.match(hit.message, /^assert_conform violated: thread 8 \(warp 0, lane 8\)/);
    const src = readFileSync(BROKEN, "utf-8").split("\n")[line - 1];
    assert.equal(hit.range.start.character, src.indexOf("ave.assert_conform"));
    // the witness's data flow as related information, and the code's page as its link
    assert.ok((hit.relatedInformation ?? []).some((r) => /tag introduced/.test(r.message)), JSON.stringify(hit.relatedInformation));
    assert.match(String((hit.code as { target?: unknown }).target), /docs\/codes\/AVE201\.md$/);
    assert.ok(state.output.some((l) => l.includes("-m ave_lsp") && l.includes("ave.interpreter")), state.output.join("\n"));
  } finally {
    await ext.deactivate();
    ctx.subscriptions.forEach((d) => d.dispose());
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a setting the user set reaches the server through the ave section", { skip: SKIP, timeout: 180_000 }, async () => {
  const { state, file, dir } = newState({ "ave.interpreter": [PYTHON], "ave.maxFileLines": 5 });
  const lines = readFileSync(BROKEN, "utf-8").split("\n").length - 1;
  const ext = loadExtension(state);
  const ctx = { subscriptions: [] as { dispose(): unknown }[] };
  try {
    await ext.activate(ctx);
    const diags = await until("the not-checked info", () => diagnosticsOf(state, file), state);
    assert.equal(diags.length, 1, JSON.stringify(diags));
    assert.equal(diags[0].severity, 2); // Information
    assert.match(diags[0].message, new RegExp(`not checked: the file has ${lines} lines, more than maxFileLines = 5`));
  } finally {
    await ext.deactivate();
    ctx.subscriptions.forEach((d) => d.dispose());
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a missing server: an error naming what was tried, with the install command", { timeout: 60_000 }, async () => {
  const { state, dir } = newState({ "ave.serverPath": "/nonexistent/bin/ave-lsp" });
  const ext = loadExtension(state);
  const ctx = { subscriptions: [] as { dispose(): unknown }[] };
  try {
    await ext.activate(ctx);
    assert.equal(state.status.text, "Ave: server not found");
    assert.equal(state.messages.length, 1, JSON.stringify(state.messages));
    const m = state.messages[0];
    assert.equal(m.kind, "error");
    assert.match(m.text, /ave\.serverPath: \/nonexistent\/bin\/ave-lsp does not exist/);
    assert.match(m.text, /Install it from a checkout of Ave \(\/path\/to\/ave\) with `python3 -m pip install -e \/path\/to\/ave`/);
    assert.deepEqual(m.items, ["Install in Terminal", "Copy Install Command", "Open Settings"]);
  } finally {
    await ext.deactivate();
    ctx.subscriptions.forEach((d) => d.dispose());
    rmSync(dir, { recursive: true, force: true });
  }
});
