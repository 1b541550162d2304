/**
 * The VS Code glue: starts `ave-lsp` for Python files beside the Python language server
 * (Pylance, pyright, ruff keep running; this client only adds Ave's diagnostics, hover
 * and quick fixes), restarts it on demand, and shows its state in the language status.
 * The logic (discovery, settings, versions) lives in modules without `vscode`.
 */
import * as os from "node:os";
import * as vscode from "vscode";
import {
  LanguageClient,
  type LanguageClientOptions,
  type ResponseError,
  type ServerOptions,
  State,
} from "vscode-languageclient/node";
import { PythonExtension } from "@vscode/python-extension";
import manifest from "../package.json";
import { describe, discover, INSTALL_SOURCE, installCommand, notFoundMessage, type DiscoveryInput } from "./discovery";
import { nodeDeps } from "./node";
import { RESTART_SETTINGS, serverEnv, serverSection, serverSettingKeys } from "./settings";
import { checkServerInfo } from "./version";

const SERVER_KEYS = serverSettingKeys(manifest);

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
let status: vscode.LanguageStatusItem;
let starting: Promise<void> = Promise.resolve();

/** The Python extension's API, or undefined when that extension is not installed. */
async function pythonApi(): Promise<PythonExtension | undefined> {
  if (!vscode.extensions.getExtension("ms-python.python")) {
    return undefined;
  }
  try {
    return await PythonExtension.api();
  } catch (e) {
    output.appendLine(`[ave] the Python extension's API is unavailable: ${String(e)}`);
    return undefined;
  }
}

async function activeInterpreter(folder: vscode.WorkspaceFolder | undefined): Promise<string[] | undefined> {
  const api = await pythonApi();
  if (!api) {
    return undefined;
  }
  try {
    const envPath = api.environments.getActiveEnvironmentPath(folder?.uri);
    const env = await api.environments.resolveEnvironment(envPath);
    const exe = env?.executable.uri?.fsPath ?? envPath.path;
    return exe ? [exe] : undefined;
  } catch (e) {
    output.appendLine(`[ave] could not resolve the active interpreter: ${String(e)}`);
    return undefined;
  }
}

function firstFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

async function discoveryInput(): Promise<DiscoveryInput> {
  const folder = firstFolder();
  const cfg = vscode.workspace.getConfiguration("ave", folder?.uri);
  return {
    serverPath: cfg.get<string>("serverPath") ?? "",
    interpreter: cfg.get<string[]>("interpreter") ?? [],
    pythonExtension: await activeInterpreter(folder),
    pathEnv: process.env.PATH,
    pathExt: process.env.PATHEXT,
    platform: process.platform,
    home: os.homedir(),
    workspaceFolder: folder?.uri.fsPath,
  };
}

function setStatus(text: string, severity: vscode.LanguageStatusSeverity, detail: string, command?: vscode.Command): void {
  status.text = text;
  status.severity = severity;
  status.detail = detail;
  status.command = command;
}

async function showNotFound(message: string, install: string): Promise<void> {
  const choice = await vscode.window.showErrorMessage(message, "Install in Terminal", "Copy Install Command", "Open Settings");
  if (choice === "Install in Terminal") {
    const term = vscode.window.createTerminal("Install ave-lsp");
    term.show();
    // (typed, not run: INSTALL_SOURCE stands for the path of the user's checkout of Ave)
    term.sendText(install, false);
    vscode.window.showInformationMessage(
      `Ave: replace ${INSTALL_SOURCE} with the path of your checkout of Ave, press Enter, then run "Ave: Restart Language Server" when the installation has finished.`,
    );
  } else if (choice === "Copy Install Command") {
    await vscode.env.clipboard.writeText(install);
  } else if (choice === "Open Settings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "@ext:ave.ave ave.server");
  }
}

async function start(): Promise<void> {
  const input = await discoveryInput();
  const logLevel = vscode.workspace.getConfiguration("ave").get<string>("logLevel");
  const env = serverEnv(process.env, logLevel);
  setStatus("$(sync~spin) Ave", vscode.LanguageStatusSeverity.Information, "looking for ave-lsp");
  const result = await discover(input, nodeDeps(env));
  if (!result.found) {
    const message = notFoundMessage(result);
    output.appendLine(`[ave] ${message}`);
    setStatus("Ave: server not found", vscode.LanguageStatusSeverity.Error, result.installCommand, {
      title: "Restart",
      command: "ave.restartServer",
    });
    void showNotFound(message, result.installCommand);
    return;
  }
  const { candidate } = result;
  output.appendLine(`[ave] starting ${describe(candidate)} (ave-lsp ${result.version}, from ${candidate.source})`);
  const serverOptions: ServerOptions = { command: candidate.command, args: candidate.args, options: { env } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
    ],
    outputChannel: output,
    diagnosticCollectionName: "ave",
    middleware: {
      workspace: {
        // The server pulls its "ave" section; answer with the values the user set
        // (null elsewhere, so pyproject.toml's [tool.ave] applies), never VS Code's defaults.
        configuration: async (params, token, next): Promise<unknown[] | ResponseError> => {
          const result: unknown = await next(params, token);
          if (!Array.isArray(result)) {
            return result as ResponseError;
          }
          const base: unknown[] = result;
          return params.items.map((item, i): unknown => {
            if (item.section !== "ave") {
              return base[i];
            }
            const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : firstFolder()?.uri;
            const cfg = vscode.workspace.getConfiguration("ave", scope);
            return serverSection(SERVER_KEYS, (key) => cfg.inspect(key));
          });
        },
        // On a change, tell the server to pull again (a pushed copy would carry defaults).
        didChangeConfiguration: (_sections, next) => next(undefined),
      },
    },
  };
  const c = new LanguageClient("ave", "Ave", serverOptions, clientOptions);
  client = c;
  c.onDidChangeState((e) => {
    if (e.newState === State.Stopped && client === c) {
      setStatus("Ave: stopped", vscode.LanguageStatusSeverity.Warning, "the server stopped", {
        title: "Restart",
        command: "ave.restartServer",
      });
    }
  });
  try {
    await c.start();
  } catch (e) {
    setStatus("Ave: failed", vscode.LanguageStatusSeverity.Error, String(e), { title: "Show Log", command: "ave.showOutput" });
    output.appendLine(`[ave] the server failed to start: ${String(e)}`);
    return;
  }
  const verdict = checkServerInfo(c.initializeResult?.serverInfo, installCommand(input));
  setStatus(`Ave ${verdict.shown}`, verdict.ok ? vscode.LanguageStatusSeverity.Information : vscode.LanguageStatusSeverity.Warning,
    `${describe(candidate)} (${candidate.source})`, { title: "Restart", command: "ave.restartServer" });
  if (verdict.message) {
    output.appendLine(`[ave] ${verdict.message}`);
    void vscode.window.showWarningMessage(verdict.message);
  }
}

async function stop(): Promise<void> {
  const c = client;
  client = undefined;
  if (c && c.state !== State.Stopped) {
    try {
      await c.stop();
    } catch (e) {
      output.appendLine(`[ave] stopping the server: ${String(e)}`);
    }
  }
}

/** Restart (serialized: two quick restarts do not start two servers). */
function restart(): Promise<void> {
  starting = starting.then(async () => {
    await stop();
    await start();
  });
  return starting;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Ave");
  status = vscode.languages.createLanguageStatusItem("ave.server", { language: "python" });
  status.name = "Ave";
  context.subscriptions.push(
    output,
    status,
    vscode.commands.registerCommand("ave.restartServer", restart),
    vscode.commands.registerCommand("ave.showOutput", () => output.show(true)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (RESTART_SETTINGS.some((s) => e.affectsConfiguration(s))) {
        void restart();
      }
    }),
  );
  const api = await pythonApi();
  if (api) {
    context.subscriptions.push(
      api.environments.onDidChangeActiveEnvironmentPath(() => {
        const cfg = vscode.workspace.getConfiguration("ave", firstFolder()?.uri);
        if (!cfg.get<string>("serverPath") && (cfg.get<string[]>("interpreter") ?? []).length === 0) {
          void restart();
        }
      }),
    );
  }
  await restart();
}

export function deactivate(): Promise<void> {
  return stop();
}
