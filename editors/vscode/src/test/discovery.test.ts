import assert from "node:assert/strict";
import { test } from "node:test";
import {
  candidates,
  discover,
  expandPath,
  installCommand,
  notFoundMessage,
  quoteArg,
  which,
  type DiscoveryInput,
  type RunResult,
} from "../discovery";

const base: DiscoveryInput = {
  serverPath: "",
  interpreter: [],
  pathEnv: "/usr/local/bin:/usr/bin",
  platform: "linux",
  home: "/home/u",
  workspaceFolder: "/w/proj",
};

/** A fake machine: executables on disk and what each command line prints. */
function fake(executables: string[], programs: Record<string, RunResult>) {
  const calls: string[] = [];
  return {
    calls,
    deps: {
      isExecutable: (p: string) => executables.includes(p),
      run: (command: string, args: string[]): Promise<RunResult> => {
        const line = [command, ...args].join(" ");
        calls.push(line);
        return Promise.resolve(programs[line] ?? { code: null, stdout: "", stderr: "", error: "ENOENT" });
      },
    },
  };
}

const ok = (v = "0.1.0"): RunResult => ({ code: 0, stdout: `ave-lsp ${v}\n`, stderr: "" });
const noModule = (py: string): RunResult => ({ code: 1, stdout: "", stderr: `${py}: No module named ave_lsp\n` });

test("expandPath: ~, ${userHome}, ${workspaceFolder}, relative paths", () => {
  assert.equal(expandPath("~/venv/bin/ave-lsp", "/home/u", "/w"), "/home/u/venv/bin/ave-lsp");
  assert.equal(expandPath("${userHome}/x", "/home/u"), "/home/u/x");
  assert.equal(expandPath("${workspaceFolder}/.venv/bin/ave-lsp", "/home/u", "/w/p"), "/w/p/.venv/bin/ave-lsp");
  assert.equal(expandPath(".venv/bin/ave-lsp", "/home/u", "/w/p"), "/w/p/.venv/bin/ave-lsp");
  assert.equal(expandPath("ave-lsp", "/home/u", "/w/p"), "ave-lsp"); // a bare name: looked up on PATH by the OS
  assert.equal(expandPath("/opt/ave/bin/ave-lsp", "/home/u", "/w/p"), "/opt/ave/bin/ave-lsp");
  assert.equal(expandPath("C:\\ave\\ave-lsp.exe", "C:\\Users\\u", "C:\\w"), "C:\\ave\\ave-lsp.exe");
});

test("which: PATH order, PATHEXT on Windows", () => {
  const exe = ["/usr/bin/ave-lsp", "/usr/local/bin/ave-lsp"];
  assert.equal(which("ave-lsp", "/usr/local/bin:/usr/bin", "linux", (p) => exe.includes(p)), "/usr/local/bin/ave-lsp");
  assert.equal(which("ave-lsp", "/opt:/usr/bin", "linux", (p) => exe.includes(p)), "/usr/bin/ave-lsp");
  assert.equal(which("ave-lsp", "", "linux", () => true), undefined);
  assert.equal(which("ave-lsp", undefined, "linux", () => true), undefined);
  const win = "C:\\venv\\Scripts\\ave-lsp.exe";
  assert.equal(which("ave-lsp", "C:\\Windows;C:\\venv\\Scripts", "win32", (p) => p === win, ".COM;.EXE"), win);
});

test("candidates: an explicit setting is the only candidate", () => {
  assert.deepEqual(candidates({ ...base, serverPath: "~/bin/ave-lsp", pythonExtension: ["/py"] }, () => true), [
    { source: "ave.serverPath", command: "/home/u/bin/ave-lsp", args: [] },
  ]);
  assert.deepEqual(candidates({ ...base, interpreter: ["${workspaceFolder}/.venv/bin/python", "-X", "utf8"] }, () => true), [
    {
      source: "ave.interpreter",
      command: "/w/proj/.venv/bin/python",
      args: ["-X", "utf8", "-m", "ave_lsp"],
      python: ["/w/proj/.venv/bin/python", "-X", "utf8"],
    },
  ]);
});

test("candidates: the Python extension's interpreter, then PATH", () => {
  const c = candidates({ ...base, pythonExtension: ["/venv/bin/python"] }, (p) => p === "/usr/bin/ave-lsp");
  assert.deepEqual(
    c.map((x) => [x.source, x.command, x.args]),
    [
      ["Python extension", "/venv/bin/python", ["-m", "ave_lsp"]],
      ["PATH", "/usr/bin/ave-lsp", []],
    ],
  );
});

test("discover: the active interpreter has ave_lsp", async () => {
  const { deps, calls } = fake([], { "/venv/bin/python -m ave_lsp --version": ok("0.1.0") });
  const r = await discover({ ...base, pythonExtension: ["/venv/bin/python"] }, deps);
  assert.equal(r.found, true);
  if (r.found) {
    assert.equal(r.version, "0.1.0");
    assert.deepEqual([r.candidate.command, ...r.candidate.args], ["/venv/bin/python", "-m", "ave_lsp"]);
  }
  assert.deepEqual(calls, ["/venv/bin/python -m ave_lsp --version"]);
});

test("discover: falls back to PATH when the interpreter lacks ave_lsp", async () => {
  const { deps } = fake(["/usr/local/bin/ave-lsp"], {
    "/venv/bin/python -m ave_lsp --version": noModule("/venv/bin/python"),
    "/usr/local/bin/ave-lsp --version": ok("0.3.1"),
  });
  const r = await discover({ ...base, pythonExtension: ["/venv/bin/python"] }, deps);
  assert.equal(r.found, true);
  if (r.found) {
    assert.equal(r.candidate.source, "PATH");
    assert.equal(r.version, "0.3.1");
    assert.deepEqual(r.tried.map((t) => t.reason), ["ave_lsp is not installed in /venv/bin/python"]);
  }
});

test("discover: nothing found -> every reason and the install command for the active interpreter", async () => {
  const { deps } = fake([], { "/my venv/bin/python -m ave_lsp --version": noModule("/my venv/bin/python") });
  const r = await discover({ ...base, pythonExtension: ["/my venv/bin/python"] }, deps);
  assert.equal(r.found, false);
  if (!r.found) {
    assert.equal(r.installCommand, "'/my venv/bin/python' -m pip install -e /path/to/ave");
    const msg = notFoundMessage(r);
    assert.match(msg, /Python extension: ave_lsp is not installed in \/my venv\/bin\/python/);
    assert.match(msg, /PATH: ave-lsp is not on PATH/);
    assert.match(msg, /Install it from a checkout of Ave \(\/path\/to\/ave\) with `'\/my venv\/bin\/python' -m pip install -e \/path\/to\/ave`/);
    assert.match(msg, /"ave\.serverPath"/);
  }
});

test("discover: a broken explicit serverPath does not fall back", async () => {
  const { deps, calls } = fake(["/usr/bin/ave-lsp"], {
    "/usr/bin/ave-lsp --version": ok(),
    "/opt/ave-lsp --version": { code: null, stdout: "", stderr: "", error: "EACCES" },
  });
  const r = await discover({ ...base, serverPath: "/opt/ave-lsp" }, deps);
  assert.equal(r.found, false);
  assert.deepEqual(calls, ["/opt/ave-lsp --version"]);
  if (!r.found) {
    assert.deepEqual(r.tried.map((t) => t.reason), ["/opt/ave-lsp is not executable"]);
    assert.equal(r.installCommand, "python3 -m pip install -e /path/to/ave");
  }
});

test("discover: a program called ave-lsp that is not Ave's server is refused", async () => {
  const { deps } = fake(["/usr/bin/ave-lsp"], { "/usr/bin/ave-lsp --version": { code: 0, stdout: "something else 2.0\n", stderr: "" } });
  const r = await discover(base, deps);
  assert.equal(r.found, false);
  if (!r.found) {
    assert.match(r.tried[0].reason, /is not Ave's server/);
  }
});

test("discover: a failing --version and a timeout are reported with their output", async () => {
  const { deps } = fake([], {
    "/py -m ave_lsp --version": { code: 2, stdout: "", stderr: "Traceback...\nImportError: z3 missing\n" },
  });
  const r = await discover({ ...base, interpreter: ["/py"] }, deps);
  assert.equal(r.found, false);
  if (!r.found) {
    assert.equal(r.tried[0].reason, "/py -m ave_lsp --version failed (exit 2): ImportError: z3 missing");
    assert.equal(r.installCommand, "/py -m pip install -e /path/to/ave");
  }
  const slow = fake([], { "/py -m ave_lsp --version": { code: null, stdout: "", stderr: "", error: "timed out after 20 s" } });
  const r2 = await discover({ ...base, interpreter: ["/py"] }, slow.deps);
  assert.equal(r2.found, false);
  if (!r2.found) {
    assert.equal(r2.tried[0].reason, "/py could not be run: timed out after 20 s");
  }
});

test("install command quoting: POSIX and Windows", () => {
  assert.equal(quoteArg("/a b/python", "linux"), "'/a b/python'");
  assert.equal(quoteArg("it's", "linux"), "'it'\\''s'");
  assert.equal(quoteArg("C:\\Program Files\\Python\\python.exe", "win32"), '"C:\\Program Files\\Python\\python.exe"');
  assert.equal(installCommand({ ...base, platform: "win32", home: "C:\\Users\\u", workspaceFolder: undefined }), "py -m pip install -e /path/to/ave");
});
