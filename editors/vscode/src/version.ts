/**
 * Server version checks (from `--version` and the `initialize` response's `serverInfo`).
 * No `vscode` import: unit-tested under plain Node.
 */

/** The oldest server this extension works with: the first with the `ave` settings
 *  section, pull diagnostics and the suppression quick fix. */
export const MIN_SERVER_VERSION = "0.1.0";
export const SERVER_NAME = "ave-lsp";

/** `[major, minor, patch]` of `X.Y.Z[suffix]`, or undefined. A pre-release suffix
 *  (`0.2.0rc1`, `0.2.0-dev`) is ignored: it counts as its release. */
export function parseVersion(v: string | undefined): [number, number, number] | undefined {
  const m = /^\s*v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(v ?? "");
  if (!m) {
    return undefined;
  }
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? "0")];
}

/** Negative, zero or positive as `a` is older than, equal to or newer than `b`. */
export function compareVersions(a: [number, number, number], b: [number, number, number]): number {
  for (let i = 0; i < 3; i++) {
    if (a[i] !== b[i]) {
      return a[i] - b[i];
    }
  }
  return 0;
}

export interface ServerInfo {
  name: string;
  version?: string;
}

export interface VersionVerdict {
  ok: boolean;
  /** The version to show (status bar), "unknown" when the server gave none. */
  shown: string;
  /** Why not ok (a warning to show). */
  message?: string;
}

/**
 * Judge the `serverInfo` of the `initialize` response against `min`.
 * `upgrade` is the command that (re)installs the server from a checkout of Ave (shown in
 * the message).
 */
export function checkServerInfo(
  info: ServerInfo | undefined,
  upgrade: string,
  min: string = MIN_SERVER_VERSION,
): VersionVerdict {
  if (!info) {
    return { ok: false, shown: "unknown", message: `Ave: the server sent no serverInfo; is it ${SERVER_NAME}? Expected ${SERVER_NAME} >= ${min}.` };
  }
  if (info.name !== SERVER_NAME) {
    return { ok: false, shown: info.version ?? "unknown", message: `Ave: the server calls itself "${info.name}", not "${SERVER_NAME}": check "ave.serverPath".` };
  }
  const have = parseVersion(info.version);
  const want = parseVersion(min) as [number, number, number];
  if (!have) {
    return { ok: false, shown: info.version ?? "unknown", message: `Ave: ${SERVER_NAME} reported no usable version (${JSON.stringify(info.version ?? null)}); this extension needs >= ${min}.` };
  }
  if (compareVersions(have, want) < 0) {
    return {
      ok: false,
      shown: info.version as string,
      message: `Ave: ${SERVER_NAME} ${info.version} is older than this extension needs (>= ${min}). Update your checkout of Ave and reinstall it with \`${upgrade}\`.`,
    };
  }
  return { ok: true, shown: info.version as string };
}
