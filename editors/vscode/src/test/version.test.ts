import assert from "node:assert/strict";
import { test } from "node:test";
import { checkServerInfo, compareVersions, parseVersion, MIN_SERVER_VERSION } from "../version";

test("parseVersion", () => {
  assert.deepEqual(parseVersion("0.1.0"), [0, 1, 0]);
  assert.deepEqual(parseVersion("v1.12.3"), [1, 12, 3]);
  assert.deepEqual(parseVersion("2.3"), [2, 3, 0]);
  assert.deepEqual(parseVersion("0.2.0rc1"), [0, 2, 0]);
  assert.equal(parseVersion("dev"), undefined);
  assert.equal(parseVersion(undefined), undefined);
});

test("compareVersions orders numerically, not as text", () => {
  assert.ok(compareVersions([0, 10, 0], [0, 9, 9]) > 0);
  assert.ok(compareVersions([1, 0, 0], [0, 99, 99]) > 0);
  assert.ok(compareVersions([0, 1, 0], [0, 1, 1]) < 0);
  assert.equal(compareVersions([0, 1, 0], [0, 1, 0]), 0);
});

test("a current server passes", () => {
  const v = checkServerInfo({ name: "ave-lsp", version: MIN_SERVER_VERSION }, "python3 -m pip install -e /path/to/ave");
  assert.deepEqual(v, { ok: true, shown: MIN_SERVER_VERSION });
  assert.equal(checkServerInfo({ name: "ave-lsp", version: "0.10.0" }, "x", "0.9.0").ok, true);
});

test("an old server gets a warning with the upgrade command", () => {
  const v = checkServerInfo({ name: "ave-lsp", version: "0.1.9" }, "/venv/bin/python -m pip install -e /src/ave", "0.2.0");
  assert.equal(v.ok, false);
  assert.equal(v.shown, "0.1.9");
  assert.match(v.message ?? "", /0\.1\.9 is older than this extension needs \(>= 0\.2\.0\)/);
  assert.match(v.message ?? "", /Update your checkout of Ave and reinstall it with `\/venv\/bin\/python -m pip install -e \/src\/ave`/);
});

test("a foreign or silent server is reported", () => {
  assert.match(checkServerInfo({ name: "pyright", version: "1.1" }, "x").message ?? "", /calls itself "pyright"/);
  assert.equal(checkServerInfo(undefined, "x").ok, false);
  const noVersion = checkServerInfo({ name: "ave-lsp" }, "x");
  assert.equal(noVersion.ok, false);
  assert.equal(noVersion.shown, "unknown");
});
