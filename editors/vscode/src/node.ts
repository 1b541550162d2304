/** The real file system and process runner for discovery (Node only, no `vscode`). */
import { execFile } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import type { DiscoveryDeps, RunResult } from "./discovery";

/** How long a `--version` probe may take (a cold Python start on a slow disk). */
export const PROBE_TIMEOUT_MS = 20_000;

export function isExecutable(p: string): boolean {
  try {
    if (!statSync(p).isFile()) {
      return false;
    }
    accessSync(p, process.platform === "win32" ? constants.F_OK : constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function run(command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { timeout: PROBE_TIMEOUT_MS, windowsHide: true, env: env ?? process.env, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error && typeof (error as NodeJS.ErrnoException).code === "string") {
          resolve({ code: null, stdout: String(stdout), stderr: String(stderr), error: String((error as NodeJS.ErrnoException).code) });
        } else if (error && error.killed) {
          resolve({ code: null, stdout: String(stdout), stderr: String(stderr), error: `timed out after ${PROBE_TIMEOUT_MS / 1000} s` });
        } else {
          const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
          resolve({ code, stdout: String(stdout), stderr: String(stderr) });
        }
      },
    );
  });
}

export function nodeDeps(env?: NodeJS.ProcessEnv): DiscoveryDeps {
  return { isExecutable, run: (c, a) => run(c, a, env) };
}
