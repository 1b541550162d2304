/**
 * Finding the `ave-lsp` server. No `vscode` import: unit-tested under plain Node with a
 * fake file system and process runner.
 *
 * Order (the first that is configured decides; an explicit setting never falls back):
 *  1. `ave.serverPath`: that executable;
 *  2. `ave.interpreter`: `<command> -m ave_lsp`;
 *  3. the Python extension's active interpreter: `<python> -m ave_lsp`, if ave_lsp is
 *     installed there; else
 *  4. `ave-lsp` on PATH.
 * Each candidate is probed with `--version` (it prints `ave-lsp X.Y.Z`), which also proves
 * it is Ave's server and not another program of that name.
 */

/** The distribution (pyproject.toml `[project] name`; a test checks it). */
export const DISTRIBUTION = "ave";
/** Where the distribution is installed from: a checkout of Ave. It is not on PyPI, and the
 *  `ave` there is another project -- `pip install ave` would install that. */
export const INSTALL_SOURCE = "/path/to/ave";
/** The console script (pyproject.toml `[project.scripts]`) and the module. */
export const SERVER_SCRIPT = "ave-lsp";
export const SERVER_MODULE = "ave_lsp";

export type Source = "ave.serverPath" | "ave.interpreter" | "Python extension" | "PATH";

export interface Candidate {
  source: Source;
  command: string;
  args: string[];
  /** The Python command of a `-m ave_lsp` candidate (for the install hint). */
  python?: string[];
}

export interface RunResult {
  /** Exit code; null when the process could not start or was killed. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why the process could not start (ENOENT, EACCES, timeout), if it did not. */
  error?: string;
}

export interface DiscoveryDeps {
  /** Whether `path` is an executable regular file. */
  isExecutable(path: string): boolean;
  /** Run `command args` without a shell, with a timeout; never rejects. */
  run(command: string, args: string[]): Promise<RunResult>;
}

export interface DiscoveryInput {
  /** `ave.serverPath` ("" = unset). */
  serverPath: string;
  /** `ave.interpreter` ([] = unset). */
  interpreter: readonly string[];
  /** The Python extension's active interpreter, when that extension is there. */
  pythonExtension?: readonly string[];
  /** PATH of the extension host. */
  pathEnv?: string;
  /** PATHEXT (Windows). */
  pathExt?: string;
  platform: string;
  home: string;
  /** The first workspace folder's path (relative serverPath, `${workspaceFolder}`). */
  workspaceFolder?: string;
}

export interface Tried {
  candidate: Candidate;
  reason: string;
}

export interface Found {
  found: true;
  candidate: Candidate;
  /** The version `--version` printed. */
  version: string;
  tried: Tried[];
}

export interface NotFound {
  found: false;
  tried: Tried[];
  /** A shell command that installs the server where the extension looks for it. */
  installCommand: string;
}

/** `~`, `${userHome}`, `${workspaceFolder}` expanded; a relative path made absolute
 *  against the workspace folder (left as is without one). */
export function expandPath(p: string, home: string, workspaceFolder?: string): string {
  let s = p.trim();
  s = s.replace(/\$\{userHome\}/g, home);
  if (workspaceFolder !== undefined) {
    s = s.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  }
  if (s === "~") {
    s = home;
  } else if (s.startsWith("~/") || s.startsWith("~\\")) {
    s = joinPath(home, s.slice(2));
  }
  if (workspaceFolder !== undefined && !isAbsolute(s) && /[\\/]/.test(s)) {
    s = joinPath(workspaceFolder, s);
  }
  return s;
}

function isAbsolute(p: string): boolean {
  return p.startsWith("/") || /^[A-Za-z]:[\\/]/.test(p) || p.startsWith("\\\\");
}

function joinPath(dir: string, rest: string): string {
  const sep = dir.includes("\\") && !dir.includes("/") ? "\\" : "/";
  return dir.replace(/[\\/]+$/, "") + sep + rest.replace(/^[\\/]+/, "");
}

/** The first `name` on `pathEnv` that is executable (with PATHEXT's extensions on
 *  Windows), or undefined. */
export function which(
  name: string,
  pathEnv: string | undefined,
  platform: string,
  isExecutable: (p: string) => boolean,
  pathExt?: string,
): string | undefined {
  const win = platform === "win32";
  const dirs = (pathEnv ?? "").split(win ? ";" : ":").filter((d) => d !== "");
  const exts = win ? ["", ...(pathExt ?? ".COM;.EXE;.BAT;.CMD").split(";").filter((e) => e)] : [""];
  for (const dir of dirs) {
    for (const ext of exts) {
      const p = joinPath(dir, name + ext.toLowerCase());
      if (isExecutable(p)) {
        return p;
      }
    }
  }
  return undefined;
}

/** The candidates to probe, in order (see the module comment). */
export function candidates(input: DiscoveryInput, isExecutable: (p: string) => boolean): Candidate[] {
  if (input.serverPath.trim() !== "") {
    const command = expandPath(input.serverPath, input.home, input.workspaceFolder);
    return [{ source: "ave.serverPath", command, args: [] }];
  }
  const interp = input.interpreter.filter((s) => s.trim() !== "");
  if (interp.length > 0) {
    const python = [expandPath(interp[0], input.home, input.workspaceFolder), ...interp.slice(1)];
    return [{ source: "ave.interpreter", command: python[0], args: [...python.slice(1), "-m", SERVER_MODULE], python }];
  }
  const out: Candidate[] = [];
  const ext = (input.pythonExtension ?? []).filter((s) => s !== "");
  if (ext.length > 0) {
    out.push({ source: "Python extension", command: ext[0], args: [...ext.slice(1), "-m", SERVER_MODULE], python: [...ext] });
  }
  const onPath = which(SERVER_SCRIPT, input.pathEnv, input.platform, isExecutable, input.pathExt);
  out.push({ source: "PATH", command: onPath ?? SERVER_SCRIPT, args: [] });
  return out;
}

const VERSION_LINE = /^ave-lsp\s+(\d+\.\d+\.\d+\S*)\s*$/m;

/** Why a `--version` probe failed, in words; undefined when it succeeded. */
export function probeFailure(candidate: Candidate, r: RunResult): string | undefined {
  if (r.error !== undefined) {
    if (/ENOENT/.test(r.error)) {
      return candidate.source === "PATH" ? `${SERVER_SCRIPT} is not on PATH` : `${candidate.command} does not exist`;
    }
    if (/EACCES/.test(r.error)) {
      return `${candidate.command} is not executable`;
    }
    return `${candidate.command} could not be run: ${r.error}`;
  }
  const out = `${r.stdout}\n${r.stderr}`;
  if (r.code === 0 && VERSION_LINE.test(r.stdout)) {
    return undefined;
  }
  if (candidate.python && new RegExp(`No module named '?${SERVER_MODULE}`).test(out)) {
    return `${SERVER_MODULE} is not installed in ${candidate.python.join(" ")}`;
  }
  const tail = out.trim().split(/\r?\n/).slice(-1)[0] ?? "";
  if (r.code === 0) {
    return `${describe(candidate)} is not Ave's server (--version printed ${JSON.stringify(tail)})`;
  }
  return `${describe(candidate)} --version failed (exit ${r.code})${tail ? `: ${tail}` : ""}`;
}

/** The server version from `--version` output. */
export function parseVersionOutput(stdout: string): string | undefined {
  return VERSION_LINE.exec(stdout)?.[1];
}

/** The command line of a candidate, for messages. */
export function describe(c: Candidate): string {
  return [c.command, ...c.args].map((a) => quoteArg(a, "linux")).join(" ");
}

/** `arg` quoted for a POSIX shell (or cmd.exe / PowerShell on Windows) where needed. */
export function quoteArg(arg: string, platform: string): string {
  if (/^[A-Za-z0-9_@%+=:,./\\-]+$/.test(arg)) {
    return arg;
  }
  if (platform === "win32") {
    return `"${arg.replace(/"/g, '""')}"`;
  }
  return `'${arg.replace(/'/g, "'\\''")}'`;
}

/** The install command for where the extension looks: the configured or active
 *  interpreter's pip, else the platform's python; an editable install of a checkout of Ave
 *  (INSTALL_SOURCE stands for its path). */
export function installCommand(input: DiscoveryInput): string {
  const interp = input.interpreter.filter((s) => s.trim() !== "");
  const python =
    interp.length > 0
      ? [expandPath(interp[0], input.home, input.workspaceFolder), ...interp.slice(1)]
      : (input.pythonExtension ?? []).length > 0
        ? [...(input.pythonExtension as string[])]
        : [input.platform === "win32" ? "py" : "python3"];
  return [...python, "-m", "pip", "install", "-e", INSTALL_SOURCE].map((a) => quoteArg(a, input.platform)).join(" ");
}

/** Probe the candidates in order; the first whose `--version` says `ave-lsp X.Y.Z` wins. */
export async function discover(input: DiscoveryInput, deps: DiscoveryDeps): Promise<Found | NotFound> {
  const tried: Tried[] = [];
  for (const candidate of candidates(input, (p) => deps.isExecutable(p))) {
    if (candidate.source === "PATH" && candidate.command === SERVER_SCRIPT) {
      tried.push({ candidate, reason: `${SERVER_SCRIPT} is not on PATH` });
      continue;
    }
    const r = await deps.run(candidate.command, [...candidate.args, "--version"]);
    const reason = probeFailure(candidate, r);
    if (reason === undefined) {
      return { found: true, candidate, version: parseVersionOutput(r.stdout) as string, tried };
    }
    tried.push({ candidate, reason });
  }
  return { found: false, tried, installCommand: installCommand(input) };
}

/** The message shown when no server was found. */
export function notFoundMessage(nf: NotFound): string {
  const reasons = nf.tried.map((t) => `${t.candidate.source}: ${t.reason}`).join("; ");
  return (
    `Ave: the language server (${SERVER_SCRIPT}) was not found (${reasons}). ` +
    `Install it from a checkout of Ave (${INSTALL_SOURCE}) with \`${nf.installCommand}\`, or set "ave.serverPath" to the ${SERVER_SCRIPT} executable.`
  );
}
