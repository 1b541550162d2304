import assert from "node:assert/strict";
import { test } from "node:test";
import manifest from "../../package.json";
import {
  explicitValue,
  serverEnv,
  serverSection,
  serverSettingKeys,
  RESTART_SETTINGS,
  type Inspected,
} from "../settings";

test("server keys come from the ave.checker section, without the prefix, in order", () => {
  const m = {
    contributes: {
      configuration: [
        { id: "ave.server", properties: { "ave.serverPath": {} } },
        { id: "ave.checker", properties: { "ave.b": {}, "ave.a": {} } },
      ],
    },
  };
  assert.deepEqual(serverSettingKeys(m), ["b", "a"]);
});

test("a manifest without the checker section, or with a foreign key in it, is rejected", () => {
  assert.throws(() => serverSettingKeys({ contributes: { configuration: { id: "other", properties: {} } } }), /ave\.checker/);
  assert.throws(() => serverSettingKeys({}), /ave\.checker/);
  assert.throws(
    () => serverSettingKeys({ contributes: { configuration: [{ id: "ave.checker", properties: { "x.y": {} } }] } }),
    /does not start with "ave\."/,
  );
});

test("the shipped package.json: server keys exclude the extension's own settings", () => {
  const keys = serverSettingKeys(manifest);
  assert.deepEqual([...keys].sort(), ["baseline", "checkOnChange", "inlayHints", "jobs", "maxFileLines", "solverTimeoutMs", "tripCountBound"]);
  for (const s of RESTART_SETTINGS) {
    assert.ok(!keys.includes(s.slice(4)), s);
  }
});

test("the most specific scope wins; a default alone is not a value", () => {
  assert.equal(explicitValue(undefined), undefined);
  assert.equal(explicitValue({ defaultValue: 2000 }), undefined);
  assert.equal(explicitValue({ defaultValue: 2000, globalValue: 10 }), 10);
  assert.equal(explicitValue({ globalValue: 10, workspaceValue: 20 }), 20);
  assert.equal(explicitValue({ globalValue: 10, workspaceValue: 20, workspaceFolderValue: 30 }), 30);
  assert.equal(explicitValue({ workspaceValue: 20, globalLanguageValue: 5 }), 20);
  assert.equal(explicitValue({ workspaceFolderValue: 30, workspaceFolderLanguageValue: 40 }), 40);
  // an explicit false/0/"" is a value (only undefined is "not set")
  assert.equal(explicitValue({ defaultValue: true, globalValue: false }), false);
  assert.equal(explicitValue({ globalValue: null }), null);
});

test("the section sent to the server: user values, null (= pyproject/default) elsewhere", () => {
  const scopes: Record<string, Inspected> = {
    checkOnChange: { defaultValue: false, globalValue: true },
    solverTimeoutMs: { defaultValue: 2000 }, // only the default: pyproject.toml must win
    tripCountBound: { defaultValue: null, workspaceValue: 6 },
    baseline: { defaultValue: null, workspaceFolderValue: "ave-baseline.json" },
  };
  const section = serverSection(["checkOnChange", "solverTimeoutMs", "tripCountBound", "maxFileLines", "baseline"], (k) => scopes[k]);
  assert.deepEqual(section, {
    checkOnChange: true,
    solverTimeoutMs: null,
    tripCountBound: 6,
    maxFileLines: null,
    baseline: "ave-baseline.json",
  });
  // a bad value goes through unchanged: the server validates it and says why it ignores it
  assert.deepEqual(serverSection(["solverTimeoutMs"], () => ({ globalValue: "fast" })), { solverTimeoutMs: "fast" });
});

test("server environment: the log level, validated, and unbuffered output", () => {
  const env = serverEnv({ PATH: "/usr/bin", GONE: undefined }, "debug");
  assert.deepEqual(env, { PATH: "/usr/bin", AVE_LSP_LOG_LEVEL: "DEBUG", PYTHONUNBUFFERED: "1" });
  assert.equal(serverEnv({}, "LOUD").AVE_LSP_LOG_LEVEL, "WARNING");
  assert.equal(serverEnv({}, undefined).AVE_LSP_LOG_LEVEL, "WARNING");
  // the setting wins over an inherited variable
  assert.equal(serverEnv({ AVE_LSP_LOG_LEVEL: "DEBUG" }, "ERROR").AVE_LSP_LOG_LEVEL, "ERROR");
});

test("every log level offered in package.json is one the server understands", () => {
  const server = (manifest.contributes.configuration as unknown as Array<{ id: string; properties: Record<string, { enum?: string[] }> }>)
    .find((s) => s.id === "ave.server");
  const offered = server?.properties["ave.logLevel"].enum ?? [];
  assert.deepEqual(offered, ["ERROR", "WARNING", "INFO", "DEBUG"]);
  for (const level of offered) {
    assert.equal(serverEnv({}, level).AVE_LSP_LOG_LEVEL, level);
  }
});
