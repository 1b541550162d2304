/**
 * Settings -> what the server gets. No `vscode` import: unit-tested under plain Node.
 *
 * The `ave.*` settings come in two groups (package.json `contributes.configuration`):
 *  - section `ave.checker`: the server's own settings, generated from the server's schema
 *    (`ave_lsp.config.settings_schema()`, see scripts/sync_settings.py). They reach the
 *    server as the `ave` section of `workspace/configuration`.
 *  - section `ave.server`: how the extension starts the server (command, log level, trace).
 *    They never reach the server as settings.
 */

/** The id of the configuration section that holds the server's settings. */
export const CHECKER_SECTION_ID = "ave.checker";

/** The scopes of one setting, as VS Code's `WorkspaceConfiguration.inspect` reports them. */
export interface Inspected {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
  globalLanguageValue?: unknown;
  workspaceLanguageValue?: unknown;
  workspaceFolderLanguageValue?: unknown;
}

/** `inspect(key)` for a key relative to `ave` (e.g. `"solverTimeoutMs"`). */
export type Inspect = (key: string) => Inspected | undefined;

interface ConfigurationSection {
  id?: string;
  properties?: Record<string, unknown>;
}

/** The minimal shape of package.json this module reads. */
export interface ExtensionManifest {
  contributes?: { configuration?: ConfigurationSection | ConfigurationSection[] };
}

/**
 * The server's setting keys (without the `ave.` prefix, in package.json order), read
 * from the `ave.checker` configuration section of the manifest.
 * @throws Error when the manifest has no such section (a broken package).
 */
export function serverSettingKeys(manifest: ExtensionManifest): string[] {
  const raw = manifest.contributes?.configuration;
  const sections = Array.isArray(raw) ? raw : raw ? [raw] : [];
  const checker = sections.find((s) => s.id === CHECKER_SECTION_ID);
  if (!checker || !checker.properties) {
    throw new Error(`package.json has no configuration section "${CHECKER_SECTION_ID}"`);
  }
  return Object.keys(checker.properties).map((k) => {
    if (!k.startsWith("ave.")) {
      throw new Error(`setting ${k} in "${CHECKER_SECTION_ID}" does not start with "ave."`);
    }
    return k.slice("ave.".length);
  });
}

/**
 * The value the user set for one setting: the most specific scope that has one
 * (folder, then workspace, then user; a language-specific value before the plain one at
 * each level). `undefined` when only the default applies.
 */
export function explicitValue(inspected: Inspected | undefined): unknown {
  if (!inspected) {
    return undefined;
  }
  for (const v of [
    inspected.workspaceFolderLanguageValue,
    inspected.workspaceFolderValue,
    inspected.workspaceLanguageValue,
    inspected.workspaceValue,
    inspected.globalLanguageValue,
    inspected.globalValue,
  ]) {
    if (v !== undefined) {
      return v;
    }
  }
  return undefined;
}

/**
 * The `ave` section sent to the server: every server key, with the user's value where the
 * user set one and `null` elsewhere. `null` means "not set" to the server, so the
 * project's `[tool.ave]` in pyproject.toml (else the server's default) applies: a VS Code
 * default must not override the project's configuration. Values are passed as they are;
 * the server validates them and logs a warning for a bad one (keeping the lower layer's).
 */
export function serverSection(keys: readonly string[], inspect: Inspect): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const v = explicitValue(inspect(key));
    out[key] = v === undefined ? null : v;
  }
  return out;
}

/** The log levels the server understands (`AVE_LSP_LOG_LEVEL`). */
export const LOG_LEVELS = ["ERROR", "WARNING", "INFO", "DEBUG"] as const;

/**
 * The environment of the server process: the extension host's, plus `AVE_LSP_LOG_LEVEL`
 * from `ave.logLevel` (an unknown level falls back to WARNING, the server's default) and
 * `PYTHONUNBUFFERED=1` (so the server's stderr log reaches the output channel at once).
 */
export function serverEnv(
  base: Record<string, string | undefined>,
  logLevel: unknown,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v !== undefined) {
      env[k] = v;
    }
  }
  const level = typeof logLevel === "string" ? logLevel.toUpperCase() : "";
  env.AVE_LSP_LOG_LEVEL = (LOG_LEVELS as readonly string[]).includes(level) ? level : "WARNING";
  env.PYTHONUNBUFFERED = "1";
  return env;
}

/** The settings whose change needs a new server process (not just a settings refresh). */
export const RESTART_SETTINGS = ["ave.serverPath", "ave.interpreter", "ave.logLevel"] as const;
