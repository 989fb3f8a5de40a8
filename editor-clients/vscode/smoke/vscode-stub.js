// A minimal stand-in for the `vscode` module, enough for the bundled extension and
// vscode-languageclient to activate, start the real server and serve inline completions
// outside VS Code. Records what the extension asks of the editor (providers, status bar
// text, decorations) for smoke.js to check. Unknown members are noted in `missing`.

'use strict';
const path = require('path');

const record = { providers: {}, statusTexts: [], applied: [], decorations: [], messages: [], commands: {}, missing: new Set(), contexts: {} };

class Disposable {
  constructor(fn) { this._fn = fn; }
  static from(...items) { return new Disposable(() => items.forEach((i) => i && i.dispose && i.dispose())); }
  dispose() { if (this._fn) { this._fn(); this._fn = undefined; } }
}

class EventEmitter {
  constructor() { this.listeners = new Set(); this.event = (fn, thisArg) => { const l = fn.bind(thisArg); this.listeners.add(l); return new Disposable(() => this.listeners.delete(l)); }; }
  fire(value) { for (const l of [...this.listeners]) l(value); }
  dispose() { this.listeners.clear(); }
}

class Position {
  constructor(line, character) { this.line = line; this.character = character; }
  isEqual(o) { return this.line === o.line && this.character === o.character; }
  isBefore(o) { return this.line < o.line || (this.line === o.line && this.character < o.character); }
  translate(dl = 0, dc = 0) { return new Position(this.line + dl, this.character + dc); }
}

class Range {
  constructor(a, b, c, d) {
    if (typeof a === 'number') { this.start = new Position(a, b); this.end = new Position(c, d); }
    else { this.start = a; this.end = b; }
  }
  get isEmpty() { return this.start.isEqual(this.end); }
  get isSingleLine() { return this.start.line === this.end.line; }
}

class Selection extends Range {
  constructor(anchor, active) { super(anchor, active); this.anchor = anchor; this.active = active; }
}

class Uri {
  constructor(scheme, p) { this.scheme = scheme; this.authority = ''; this.path = p; this.query = ''; this.fragment = ''; }
  get fsPath() { return this.path; }
  static file(p) { return new Uri('file', path.resolve(p)); }
  static parse(s) {
    const m = /^([a-z]+):\/\/([^/]*)(.*)$/.exec(s);
    return m ? new Uri(m[1], decodeURIComponent(m[3])) : new Uri('file', s);
  }
  with(change) { return Object.assign(new Uri(this.scheme, this.path), change); }
  toString() { return `${this.scheme}://${this.path.split('/').map(encodeURIComponent).join('/')}`; }
  toJSON() { return { scheme: this.scheme, path: this.path }; }
}

class InlineCompletionItem { constructor(insertText, range, command) { this.insertText = insertText; this.range = range; this.command = command; } }
class InlineCompletionList { constructor(items) { this.items = items; } }
class CompletionList { constructor(items = [], isIncomplete = false) { this.items = items; this.isIncomplete = isIncomplete; } }
class ThemeColor { constructor(id) { this.id = id; } }
class MarkdownString { constructor(value = '') { this.value = value; } appendText(t) { this.value += t; return this; } appendMarkdown(t) { this.value += t; return this; } appendCodeblock(c) { this.value += c; return this; } }
class CancellationTokenSource {
  constructor() { const e = new EventEmitter(); this.token = { isCancellationRequested: false, onCancellationRequested: e.event }; this._e = e; }
  cancel() { this.token.isCancellationRequested = true; this._e.fire(); }
  dispose() {}
}
class CancellationError extends Error {}
class WorkspaceEdit {
  constructor() { this.edits = []; }
  replace(uri, range, newText) { this.edits.push({ uri, range, newText }); }
  insert(uri, position, newText) { this.edits.push({ uri, range: new Range(position, position), newText }); }
  delete(uri, range) { this.edits.push({ uri, range, newText: '' }); }
  set(uri, edits) { for (const e of edits || []) this.edits.push({ uri, range: e.range, newText: e.newText }); }
  get size() { return new Set(this.edits.map((e) => String(e.uri))).size; }
  entries() { return []; }
}
class Generic { constructor(...args) { this.args = args; } }
class CodeActionKind {
  constructor(value) { this.value = value; }
  append(part) { return new CodeActionKind(this.value ? `${this.value}.${part}` : part); }
  contains(other) { return this.value === '' || other.value === this.value || other.value.startsWith(`${this.value}.`); }
  intersects(other) { return this.contains(other) || other.contains(this); }
}
CodeActionKind.Empty = new CodeActionKind('');
for (const [name, value] of Object.entries({ QuickFix: 'quickfix', Refactor: 'refactor', RefactorExtract: 'refactor.extract',
  RefactorInline: 'refactor.inline', RefactorMove: 'refactor.move', RefactorRewrite: 'refactor.rewrite', Source: 'source',
  SourceOrganizeImports: 'source.organizeImports', SourceFixAll: 'source.fixAll', Notebook: 'notebook' })) {
  CodeActionKind[name] = new CodeActionKind(value);
}
class CodeAction { constructor(title, kind) { this.title = title; this.kind = kind; } }

function document(file, languageId, text) {
  const lines = () => text.split('\n');
  const doc = {
    uri: Uri.file(file), fileName: file, languageId, version: 1, isUntitled: false, isClosed: false, isDirty: false, eol: 1,
    getText: () => text,
    get lineCount() { return lines().length; },
    lineAt: (l) => { const t = lines()[typeof l === 'number' ? l : l.line]; return { text: t, range: new Range(0, 0, 0, t.length) }; },
    offsetAt: (p) => lines().slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character,
    positionAt: (o) => { let line = 0; for (const l of lines()) { if (o <= l.length) return new Position(line, o); o -= l.length + 1; line++; } return new Position(line, 0); },
    save: async () => true,
  };
  return doc;
}

const config = {};
const openDocuments = [];
const onDidChangeConfiguration = new EventEmitter();
const onDidOpenTextDocument = new EventEmitter();

function event() { return () => new Disposable(); }

function namespace(name, members) {
  return new Proxy(members, {
    get(target, prop) {
      if (prop in target) return target[prop];
      if (typeof prop !== 'string') return undefined;
      if (prop.startsWith('onDid') || prop.startsWith('onWill')) return event();
      if (prop.startsWith('register') || prop.startsWith('create')) {
        return (...args) => { record.providers[prop] = (record.providers[prop] || []).concat([args]); return new Disposable(); };
      }
      record.missing.add(`${name}.${prop}`);
      return undefined;
    },
  });
}

function outputChannel(name) {
  const lines = [];
  return { name, lines, append: (t) => lines.push(t), appendLine: (t) => lines.push(t), replace: () => {}, clear: () => {}, show: () => {}, hide: () => {}, dispose: () => {},
    trace: (t) => lines.push(t), debug: (t) => lines.push(t), info: (t) => lines.push(t), warn: (t) => lines.push(t), error: (t) => lines.push(String(t)), logLevel: 2, onDidChangeLogLevel: event() };
}

const vscode = {
  version: '1.90.0',
  env: { machineId: 'smoke', sessionId: 'smoke', language: 'en', appName: 'smoke', appRoot: '/', uriScheme: 'vscode', remoteName: undefined, uiKind: 1 },
  Disposable, EventEmitter, Position, Range, Selection, Uri, InlineCompletionItem, InlineCompletionList, CompletionList, ThemeColor, MarkdownString,
  CancellationTokenSource, CancellationError, CodeActionKind, CodeAction, WorkspaceEdit,
  CodeActionTriggerKind: { Invoke: 1, Automatic: 2 },
  StatusBarAlignment: { Left: 1, Right: 2 },
  DecorationRangeBehavior: { OpenOpen: 0, ClosedClosed: 1, OpenClosed: 2, ClosedOpen: 3 },
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  InlineCompletionTriggerKind: { Invoke: 0, Automatic: 1 },
  TextDocumentSaveReason: { Manual: 1, AfterDelay: 2, FocusOut: 3 },
  ViewColumn: { Active: -1, Beside: -2, One: 1 },
  DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
  ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
  window: namespace('window', {
    visibleTextEditors: [],
    activeTextEditor: undefined,
    createOutputChannel: (name) => (record.output = outputChannel(name)),
    createStatusBarItem: () => new Proxy({ show() {}, hide() {}, dispose() {} }, {
      set(target, prop, value) { target[prop] = value; if (prop === 'text') record.statusTexts.push(value); if (prop === 'tooltip') record.tooltip = value; return true; },
    }),
    createTextEditorDecorationType: (options) => ({ key: `decoration${record.decorations.length}`, options, dispose() {} }),
    showErrorMessage: async (...a) => { record.messages.push(['error', ...a]); return undefined; },
    showWarningMessage: async (...a) => { record.messages.push(['warning', ...a]); return undefined; },
    showInformationMessage: async (...a) => { record.messages.push(['info', ...a]); return undefined; },
    withProgress: (_o, task) => task({ report() {} }, new CancellationTokenSource().token),
  }),
  workspace: namespace('workspace', {
    workspaceFolders: undefined,
    textDocuments: openDocuments,
    notebookDocuments: [],
    getConfiguration: (section) => ({
      get: (key, def) => { const v = config[`${section}.${key}`]; return v === undefined ? def : v; },
      inspect: (key) => ({ key, globalValue: config[`${section}.${key}`] }),
      has: (key) => `${section}.${key}` in config,
      update: async () => {},
    }),
    onDidChangeConfiguration: onDidChangeConfiguration.event,
    onDidOpenTextDocument: onDidOpenTextDocument.event,
    getWorkspaceFolder: () => undefined,
    applyEdit: async (edit) => { record.applied.push(edit); return true; },
  }),
  languages: namespace('languages', {
    match: (selector, doc) => ([].concat(selector).some((s) => (typeof s === 'string' ? s : s.language) === doc.languageId) ? 10 : 0),
    createDiagnosticCollection: () => ({ set() {}, delete() {}, clear() {}, dispose() {}, forEach() {}, get() { return []; }, has() { return false; } }),
    getLanguages: async () => ['python'],
  }),
  commands: namespace('commands', {
    registerCommand: (id, fn) => { record.commands[id] = fn; return new Disposable(); },
    executeCommand: async (id, ...args) => { if (id === 'setContext') record.contexts[args[0]] = args[1]; return undefined; },
    getCommands: async () => Object.keys(record.commands),
  }),
  extensions: namespace('extensions', { all: [], getExtension: () => undefined }),
  notebooks: namespace('notebooks', {}),
  tasks: namespace('tasks', {}),
  debug: namespace('debug', {}),
};

module.exports = new Proxy(vscode, {
  get(target, prop) {
    if (prop in target) return target[prop];
    if (typeof prop === 'string' && /^[A-Z]/.test(prop)) { return Generic; }
    return undefined;
  },
});
module.exports.__record = record;
module.exports.__config = config;
module.exports.__document = document;
module.exports.__openDocuments = openDocuments;
// What VS Code does when the user opens a document.
module.exports.__openDocument = (doc) => { openDocuments.push(doc); onDidOpenTextDocument.fire(doc); };
// What VS Code does when the user changes settings: `keys` are the ones changed, e.g. 'diffusionLsp.drafts'.
module.exports.__fireConfigurationChange = (keys) => onDidChangeConfiguration.fire({
  affectsConfiguration: (section) => keys.some((key) => key === section || key.startsWith(`${section}.`)),
});
