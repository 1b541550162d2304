/**
 * A stand-in for the `vscode` module, enough for vscode-languageclient and this extension
 * to run under plain Node (VS Code itself cannot be downloaded here). What the tests look
 * at is real: documents, configuration scopes, diagnostics collections, tabs, messages;
 * everything else (provider registrations, editor UI) is a lenient stub returning
 * disposables. Not a test of VS Code, a test of our code and vscode-languageclient
 * talking to the real `ave-lsp`.
 */
import * as path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";

type Listener<T> = (e: T) => unknown;

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((d) => d?.dispose?.()));
  }
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) {
      l(e);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
    readonly query: string,
    readonly fragment: string,
  ) {}
  static file(p: string): Uri {
    return new Uri("file", "", path.resolve(p), "", "");
  }
  static parse(s: string): Uri {
    if (s.startsWith("file:")) {
      return Uri.file(fileURLToPath(s));
    }
    const m = /^([a-z][\w+.-]*):(?:\/\/([^/]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/i.exec(s);
    if (!m) {
      throw new Error(`bad uri ${s}`);
    }
    return new Uri(m[1], m[2] ?? "", decodeURIComponent(m[3] ?? ""), m[4] ?? "", m[5] ?? "");
  }
  get fsPath(): string {
    return this.path;
  }
  with(change: { scheme?: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(change.scheme ?? this.scheme, this.authority, change.path ?? this.path, change.query ?? this.query, change.fragment ?? this.fragment);
  }
  toString(): string {
    if (this.scheme === "file") {
      return pathToFileURL(this.path).href;
    }
    return `${this.scheme}:${this.authority ? `//${this.authority}` : ""}${this.path}`;
  }
  toJSON(): unknown {
    return this.toString();
  }
}

export class Position {
  constructor(readonly line: number, readonly character: number) {}
}
export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: Position | number, b: Position | number, c?: number, d?: number) {
    if (typeof a === "number") {
      this.start = new Position(a, b as number);
      this.end = new Position(c as number, d as number);
    } else {
      this.start = a;
      this.end = b as Position;
    }
  }
}
export class Location {
  constructor(readonly uri: Uri, readonly range: Range) {}
}
export class Diagnostic {
  code?: unknown;
  source?: string;
  relatedInformation?: DiagnosticRelatedInformation[];
  tags?: unknown[];
  data?: unknown;
  constructor(readonly range: Range, readonly message: string, readonly severity: number = 0) {}
}
export class DiagnosticRelatedInformation {
  constructor(readonly location: Location, readonly message: string) {}
}
export enum DiagnosticSeverity {
  Error = 0,
  Warning = 1,
  Information = 2,
  Hint = 3,
}
export enum DiagnosticTag {
  Unnecessary = 1,
  Deprecated = 2,
}
export class MarkdownString {
  constructor(public value = "", public supportThemeIcons = false) {}
  appendMarkdown(v: string): this {
    this.value += v;
    return this;
  }
}
export class CancellationError extends Error {}
export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  cancel(): void {
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
  dispose(): void {
    this.emitter.dispose();
  }
}
export class TabInputText {
  constructor(readonly uri: Uri) {}
}
export class TabInputTextDiff {
  constructor(readonly original: Uri, readonly modified: Uri) {}
}
export class TabInputCustom {
  constructor(readonly uri: Uri, readonly viewType: string) {}
}
export enum LanguageStatusSeverity {
  Information = 0,
  Warning = 1,
  Error = 2,
}

/** A callable, constructible stub whose every member is another stub; calls return a
 *  disposable. */
function lenient(): unknown {
  const f = function () {
    return new Disposable();
  };
  return new Proxy(f, {
    get: (_t, p) => (p === "prototype" ? {} : p === "then" ? undefined : lenient()),
    construct: () => ({}),
  });
}

function withDefaults<T extends object>(o: T): T {
  return new Proxy(o, {
    get: (t, p) => (p in t ? (t as Record<string | symbol, unknown>)[p] : p === "then" ? undefined : lenient()),
  });
}

export interface TextDocumentLike {
  uri: Uri;
  fileName: string;
  languageId: string;
  version: number;
  isClosed: boolean;
  isDirty: boolean;
  isUntitled: boolean;
  lineCount: number;
  eol: number;
  getText(): string;
}

export function textDocument(file: string, text: string, languageId = "python"): TextDocumentLike {
  return {
    uri: Uri.file(file),
    fileName: file,
    languageId,
    version: 1,
    isClosed: false,
    isDirty: false,
    isUntitled: false,
    lineCount: text.split("\n").length,
    eol: 1,
    getText: () => text,
  };
}

/** User settings by full key ("ave.interpreter"); only these are "set", the rest are
 *  package.json defaults. */
export interface FakeState {
  settings: Record<string, unknown>;
  defaults: Record<string, unknown>;
  folder: string;
  documents: TextDocumentLike[];
  diagnostics: Map<string, Diagnostic[]>;
  messages: { kind: string; text: string; items: string[] }[];
  output: string[];
  status: { text?: string; severity?: number; detail?: string; dispose?: () => void };
  configurationEvents: EventEmitter<{ affectsConfiguration(s: string): boolean }>;
}

export function createFakeVscode(state: FakeState): unknown {
  const folderUri = Uri.file(state.folder);
  const workspaceFolder = { uri: folderUri, name: path.basename(state.folder), index: 0 };

  const configuration = (section?: string) =>
    withDefaults({
      get: (key: string, dflt?: unknown) => {
        const full = section ? `${section}.${key}` : key;
        return full in state.settings ? state.settings[full] : full in state.defaults ? state.defaults[full] : dflt;
      },
      has: (key: string) => `${section}.${key}` in state.settings || `${section}.${key}` in state.defaults,
      inspect: (key: string) => {
        const full = section ? `${section}.${key}` : key;
        return {
          key: full,
          defaultValue: state.defaults[full],
          globalValue: state.settings[full],
        };
      },
      update: () => Promise.resolve(),
    });

  const message = (kind: string) => (text: string, ...items: unknown[]) => {
    state.messages.push({ kind, text, items: items.filter((i): i is string => typeof i === "string") });
    return Promise.resolve(undefined);
  };

  const vscode = {
    version: "1.82.0",
    Disposable,
    EventEmitter,
    Uri,
    Position,
    Range,
    Location,
    Diagnostic,
    DiagnosticRelatedInformation,
    DiagnosticSeverity,
    DiagnosticTag,
    MarkdownString,
    CancellationError,
    CancellationTokenSource,
    TabInputText,
    TabInputTextDiff,
    TabInputCustom,
    LanguageStatusSeverity,
    env: withDefaults({ appName: "Fake VS Code", language: "en", machineId: "test", clipboard: { writeText: () => Promise.resolve() } }),
    extensions: withDefaults({ getExtension: () => undefined }),
    commands: withDefaults({
      registerCommand: () => new Disposable(),
      executeCommand: () => Promise.resolve(undefined),
    }),
    window: withDefaults({
      createOutputChannel: (name: string) =>
        withDefaults({
          name,
          append: (s: string) => state.output.push(s),
          appendLine: (s: string) => state.output.push(s),
          replace: () => undefined,
          clear: () => undefined,
          show: () => undefined,
          hide: () => undefined,
          dispose: () => undefined,
        }),
      showErrorMessage: message("error"),
      showWarningMessage: message("warning"),
      showInformationMessage: message("information"),
      activeTextEditor: undefined,
      visibleTextEditors: [],
      onDidChangeActiveTextEditor: new EventEmitter().event,
      onDidChangeVisibleTextEditors: new EventEmitter().event,
      tabGroups: withDefaults({
        get all() {
          return [{ tabs: state.documents.map((d) => ({ input: new TabInputText(d.uri) })) }];
        },
        onDidChangeTabs: new EventEmitter().event,
        onDidChangeTabGroups: new EventEmitter().event,
      }),
      withProgress: (_o: unknown, task: (p: unknown, t: unknown) => unknown) =>
        task({ report: () => undefined }, new CancellationTokenSource().token),
      createTerminal: () => withDefaults({ show: () => undefined, sendText: () => undefined }),
    }),
    languages: withDefaults({
      match: (selector: unknown, doc: TextDocumentLike) => {
        const sels = (Array.isArray(selector) ? selector : [selector]) as (string | { language?: string; scheme?: string })[];
        for (const s of sels) {
          if (typeof s === "string" ? s === doc.languageId : (s.language === undefined || s.language === doc.languageId) && (s.scheme === undefined || s.scheme === doc.uri.scheme)) {
            return 10;
          }
        }
        return 0;
      },
      createDiagnosticCollection: () =>
        withDefaults({
          set: (uri: Uri | [Uri, Diagnostic[]][], diags?: Diagnostic[]) => {
            if (Array.isArray(uri)) {
              for (const [u, d] of uri) {
                state.diagnostics.set(u.toString(), d ?? []);
              }
            } else {
              state.diagnostics.set(uri.toString(), diags ?? []);
            }
          },
          delete: (uri: Uri) => state.diagnostics.delete(uri.toString()),
          get: (uri: Uri) => state.diagnostics.get(uri.toString()),
          has: (uri: Uri) => state.diagnostics.has(uri.toString()),
          clear: () => state.diagnostics.clear(),
          forEach: () => undefined,
          dispose: () => undefined,
        }),
      createLanguageStatusItem: () => Object.assign(state.status, { dispose: () => undefined }),
    }),
    workspace: withDefaults({
      get workspaceFolders() {
        return [workspaceFolder];
      },
      name: workspaceFolder.name,
      getWorkspaceFolder: () => workspaceFolder,
      get textDocuments() {
        return state.documents;
      },
      notebookDocuments: [],
      getConfiguration: configuration,
      onDidChangeConfiguration: state.configurationEvents.event,
      onDidOpenTextDocument: new EventEmitter().event,
      onDidCloseTextDocument: new EventEmitter().event,
      onDidChangeTextDocument: new EventEmitter().event,
      onDidSaveTextDocument: new EventEmitter().event,
      onWillSaveTextDocument: new EventEmitter().event,
      onDidChangeWorkspaceFolders: new EventEmitter().event,
      isTrusted: true,
      createFileSystemWatcher: () => withDefaults({ dispose: () => undefined }),
    }),
  };
  return withDefaults(vscode);
}
