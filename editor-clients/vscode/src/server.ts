// Owns the language client: finds and starts `diffusion-lsp`, wires the protocol extensions
// (`diffusion/status`, `diffusion/draft`) to the status bar and the draft view, pushes
// setting changes, and restarts on demand.

import { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from 'vscode-languageclient/node';
import { SERVED_SCHEMES } from './actions';
import { wantsCompletionItems } from './completionFallback';
import { DraftBoard, isDraft, isFinalSuggestion } from './draft';
import { protocolInlineContext } from './inlineContext';
import { distinctItems, normalizeItem } from './inlineItems';
import { connectionLost, RestartPolicy } from './restartPolicy';
import { DraftView } from './draftView';
import { notInstalledMessage, resolveServerCommand } from './serverCommand';
import { endServerProcess, spawnServer } from './serverProcess';
import { configurationChangeParams, SERVER_SETTING_KINDS, ServerSettings, toServerSettings } from './settings';
import { StatusBar } from './statusBar';
import { isServerStatus } from './status';

export const SECTION = 'diffusionLsp';
const ACTIVE_CONTEXT = 'diffusionLsp.active';
/** How long a stopped server has to exit before it is killed, and a starting one to finish its start before it is stopped. */
const EXIT_GRACE_MS = 10000;
const START_SETTLE_MS = 60000;

/** The value the user set for `diffusionLsp.<key>` at the narrowest scope, if any. */
function explicitValue(config: vscode.WorkspaceConfiguration, key: string): unknown {
  const inspected = config.inspect(key);
  return inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
}

export class ServerController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly board = new DraftBoard();
  private readonly restarts = new RestartPolicy();
  /** The settings the running server was last given (start or push): a key removed since goes as null. */
  private sent: ServerSettings = {};
  /** The start / stop / restart under way (see exclusive). */
  private queue: Promise<void> = Promise.resolve();
  /** The server processes each client started and that have not exited (a restart after a crash starts another). */
  private readonly processes = new WeakMap<LanguageClient, Set<ChildProcess>>();

  constructor(
    private readonly output: vscode.OutputChannel,
    private readonly status: StatusBar,
    private readonly drafts: DraftView,
  ) {}

  /** The running client, for commands; undefined while stopped. */
  get running(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  /** Starts the server (after any start, stop or restart still under way). */
  start(): Promise<void> {
    return this.exclusive(() => this.startNow());
  }

  /** Stops the server (after any start, stop or restart still under way). */
  stop(): Promise<void> {
    return this.exclusive(() => this.stopNow());
  }

  /** Stops and starts the server; a restart asked for while one is under way runs after it. */
  restart(): Promise<void> {
    return this.exclusive(async () => {
      this.restarts.reset();
      await this.stopNow();
      await this.startNow();
    });
  }

  /**
   * Runs `op` after the start / stop / restart before it has finished. Two of them interleaved (a
   * restart asked for while the server starts, two setting changes that each restart it) would start
   * a server the controller no longer holds: it kept running, unreachable by commands and by stop.
   */
  private exclusive(op: () => Promise<void>): Promise<void> {
    const run = this.queue.then(op);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async startNow(): Promise<void> {
    const config = vscode.workspace.getConfiguration(SECTION);
    const configured = config.get<string>('server.path', 'diffusion-lsp');
    const resolution = resolveServerCommand(configured, {
      platform: process.platform,
      pathVariable: process.env.PATH,
      workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath),
      homeDir: os.homedir(),
      isFile: (file) => {
        try {
          return fs.statSync(file).isFile();
        } catch {
          return false;
        }
      },
    });
    if (resolution.command === undefined) {
      const message = notInstalledMessage(configured);
      this.output.appendLine(`${message}\nLooked in:\n  ${resolution.searched.join('\n  ')}`);
      this.status.update((model) => model.notInstalled(message));
      void this.offerSettings(message);
      return;
    }

    const client = this.createClient(resolution.command, config.get<string[]>('server.args', []));
    this.client = client;
    this.status.update((model) => model.starting());
    try {
      await client.start();
    } catch (error) {
      const message = `Diffusion LSP failed to start: ${error instanceof Error ? error.message : String(error)}`;
      this.output.appendLine(message);
      this.status.update((model) => model.failed(message));
      if (connectionLost(error)) {
        return; // the server exited while starting: the close handler restarts it, or gives up and says so once
      }
      // The server answered initialize with an error (or the client refused its answer): the library's own
      // stop cannot stop a client that is starting, so the process stayed running, idle, until the next
      // restart. It is ended here; its close is not a crash (the client is no longer the controller's).
      await this.stopNow();
      void vscode.window.showErrorMessage(message, 'Show Log').then((choice) => {
        if (choice) {
          this.output.show(true);
        }
      });
    }
  }

  private async stopNow(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.drafts.clearAll();
    this.board.forgetAll();
    if (!client) {
      return;
    }
    if (client.state === State.Starting) {
      // vscode-languageclient cannot stop a client while it starts (its automatic restart after a
      // crash included): let the start settle first (a start that never does: its process is ended below).
      await Promise.race([client.start().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, START_SETTLE_MS))]);
    }
    if (client.needsStop()) {
      await client.stop().catch((error: unknown) => {
        this.output.appendLine(`Stopping the server failed: ${error instanceof Error ? error.message : String(error)}`);
      });
    }
    // The stop may have given up (no answer to shutdown in time, an error answer, a client that could not
    // be stopped) with the process still running and nothing left to end it: every stop ends it here.
    for (const child of this.processes.get(client) ?? []) {
      const ending = await endServerProcess(child, EXIT_GRACE_MS);
      if (ending !== 'exited') {
        this.output.appendLine(`The server (process ${child.pid}) did not exit after it was stopped: ${ending === 'killed' ? 'killed it' : 'killing it failed'}.`);
      }
    }
  }

  /** Sends the current settings as `workspace/didChangeConfiguration`. */
  async pushSettings(): Promise<void> {
    const client = this.running;
    if (client) {
      const settings = this.readSettings();
      await client.sendNotification(DidChangeConfigurationNotification.type, configurationChangeParams(settings, this.sent));
      this.sent = settings;
    }
  }

  /** The document changed: its draft (for the old version) is stale. */
  documentChanged(uri: vscode.Uri): void {
    this.board.forget(uri.toString());
    this.drafts.clear(uri);
  }

  dispose(): void {
    void this.stop();
  }

  private readSettings(): ServerSettings {
    const config = vscode.workspace.getConfiguration(SECTION);
    const { settings, rejected } = toServerSettings((key) => explicitValue(config, key));
    for (const key of rejected) {
      const expected = SERVER_SETTING_KINDS[key as keyof ServerSettings];
      this.output.appendLine(`Setting ${SECTION}.${key} is not a valid ${expected}; the server default applies.`);
    }
    return settings;
  }

  private createClient(command: string, args: string[]): LanguageClient {
    const config = vscode.workspace.getConfiguration(SECTION);
    const languages = config.get<string[]>('languages', []);
    // The extension starts the process (over stdio, in the first folder as the library would), so that
    // stopNow can end it whatever the client's stop did.
    const processes = new Set<ChildProcess>();
    const serverOptions: ServerOptions = async () => {
      const child = await spawnServer(command, args, workingDirectory());
      processes.add(child);
      child.on('exit', (code, signal) => {
        processes.delete(child);
        this.output.appendLine(`Server process ${child.pid} exited with ${signal ? `signal ${signal}` : `code ${code}`}.`);
      });
      return child;
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: languages.flatMap((language) => SERVED_SCHEMES.map((scheme) => ({ scheme, language }))),
      // Read at each initialize, the automatic restart after a crash included: the settings as they
      // are now, not as they were when the client was made (a change pushed since would be lost).
      initializationOptions: () => (this.sent = this.readSettings()),
      outputChannel: this.output,
      // The library's default shows the error (and "Server initialization failed.") as notifications on
      // every failed start; the log has it, the status bar and the close handler tell the user.
      initializationFailedHandler: (error) => {
        this.output.appendLine(`Server initialization failed: ${error instanceof Error ? error.message : String(error)}`);
        return false;
      },
      // A server that dies is shown as failed and restarted (bounded); the client re-opens every
      // open document in the new one, with its current text.
      errorHandler: {
        error: (_error, _message, count) => ({
          action: (count ?? 0) < 5 ? ErrorAction.Continue : ErrorAction.Shutdown,
          handled: true,
        }),
        closed: () => {
          if (client !== this.client) {
            // a client being stopped or stopped already (its process ended by stopNow): never restarted
            return { action: CloseAction.DoNotRestart, handled: true };
          }
          const decision = this.restarts.died(Date.now());
          this.output.appendLine(decision.message);
          this.status.update((model) => model.died(decision.message));
          if (!decision.restart) {
            void vscode.window.showErrorMessage(`Diffusion LSP: ${decision.message}`, 'Restart', 'Show Log').then((choice) => {
              if (choice === 'Restart') {
                void this.restart();
              } else if (choice === 'Show Log') {
                this.output.show(true);
              }
            });
          }
          return { action: decision.restart ? CloseAction.Restart : CloseAction.DoNotRestart, handled: true };
        },
      },
      middleware: {
        // The completion item carries the fill that the ghost text shows: asked for too on the same
        // keystroke, it would run the model again and supersede the ghost text's request (one job per
        // document). Asked for only where the user turned inline suggestions off.
        provideCompletionItem: (document, position, context, token, next) =>
          wantsCompletionItems(vscode.workspace.getConfiguration('editor', document).get('inlineSuggest.enabled'))
            ? next(document, position, context, token)
            : undefined,
        // The suggestion is in: VS Code shows it as ghost text, so the draft goes. Every item
        // the server sends is kept (its alternatives, best first: Alt+] / Alt+[ cycle them).
        provideInlineCompletionItems: async (document, position, context, token, next) => {
          const protocolContext = protocolInlineContext(context) as unknown as vscode.InlineCompletionContext;
          try {
            const result = await next(document, position, protocolContext, token);
            return result ? normalizeInlineResult(document, position, result) : result;
          } finally {
            this.drafts.clear(document.uri);
          }
        },
      },
    };
    const client = new QuietClient(SECTION, 'Diffusion LSP', serverOptions, clientOptions);
    this.processes.set(client, processes);
    // textDocument/inlineCompletion is a proposed (LSP 3.18) feature in vscode-languageclient 9:
    // without this the client neither announces nor uses it, and no ghost text appears.
    client.registerProposedFeatures();

    client.onNotification('diffusion/status', (params: unknown) => {
      if (isServerStatus(params)) {
        // An error status (the model failed to load, the engine is unreachable) comes with the server's own
        // window/showMessage, which the library shows: the status bar turns red, no second notification.
        this.status.update((model) => model.serverStatus(params));
      }
    });
    client.onNotification('diffusion/draft', (params: unknown) => {
      if (isDraft(params)) {
        this.showDraft(client, params);
      }
    });
    client.onDidChangeState((event) => {
      const running = event.newState === State.Running;
      void vscode.commands.executeCommand('setContext', ACTIVE_CONTEXT, running);
      if (event.newState === State.Starting) {
        this.status.update((model) => model.starting());
      } else if (running) {
        this.status.update((model) => model.running());
      } else if (event.newState === State.Stopped) {
        this.drafts.clearAll();
        this.board.forgetAll(); // a restarted server numbers its requests from 1 again
        this.status.update((model) => model.stopped());
      }
    });
    return client;
  }

  private showDraft(client: LanguageClient, params: Parameters<DraftBoard['receive']>[0]): void {
    const uri = client.protocol2CodeConverter.asUri(params.uri);
    const document = vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === uri.toString());
    const action = this.board.receive(params, document?.version);
    // A final draft the board ignores (for a version the document has moved past, or an older request)
    // is of a suggestion never shown: its estimate is not the last suggestion's.
    if (action.kind !== 'ignore' && isFinalSuggestion(params)) {
      this.status.update((model) => model.suggestion(params.fillConfidence));
    }
    if (action.kind === 'show') {
      this.drafts.show(action.draft, uri, client.protocol2CodeConverter.asRange(action.draft.range));
    } else if (action.kind === 'clear') {
      this.drafts.clear(uri);
    }
  }

  private async offerSettings(message: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(message, 'Open Settings', 'Show Log');
    if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', `${SECTION}.server.path`);
    } else if (choice === 'Show Log') {
      this.output.show(true);
    }
  }
}

/**
 * A LanguageClient that logs its own start and restart failures instead of forcing a notification
 * for each: a server that exits at start would otherwise pop up "couldn't create connection to
 * server" and "Restarting server failed" on every automatic restart. The extension tells the user
 * (start(), the close handler: once per failure); the log keeps every line.
 */
class QuietClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification?: boolean | 'force'): void {
    super.error(message, data, showNotification === 'force' ? false : showNotification);
  }

  /**
   * The library stops a client whose initialize failed with `void this.stop()`, which rejects while the
   * client starts ("Client is not running and can't be stopped"): an unhandled rejection each time.
   * A caller that awaits the stop still gets its error; the process is ended by the controller.
   */
  override stop(timeout?: number): Promise<void> {
    const stopping = super.stop(timeout);
    stopping.catch(() => undefined);
    return stopping;
  }

  /**
   * The library's start() keeps its outcome in a promise held only by the client (`_onStart`) and returns
   * it at the end. A server that exits while it starts makes the close handler restart it first, which
   * replaces `_onStart`: the first start's promise is then rejected ("Pending response rejected since
   * connection got disposed") with nothing holding it, an unhandled rejection for each failed start
   * (microsoft/vscode-languageserver-node issue 1307). Marked handled here as soon as it exists; whoever
   * awaits start() still gets its outcome.
   */
  override start(): Promise<void> {
    const starting = super.start();
    (this as unknown as { _onStart?: Promise<void> })._onStart?.catch(() => undefined);
    return starting;
  }
}

/** The first workspace folder, when it is a local directory (the server's working directory). */
function workingDirectory(): string | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (folder?.uri.scheme !== 'file') {
    return undefined;
  }
  try {
    return fs.statSync(folder.uri.fsPath).isDirectory() ? folder.uri.fsPath : undefined;
  } catch {
    return undefined;
  }
}

/** The server's items with block fills' trailing line breaks handled and repeats left out. */
function normalizeInlineResult(
  document: vscode.TextDocument,
  position: vscode.Position,
  result: vscode.InlineCompletionItem[] | vscode.InlineCompletionList,
): vscode.InlineCompletionItem[] | vscode.InlineCompletionList {
  const items = Array.isArray(result) ? result : result.items;
  const plain = items.map((item) => ({
    text: typeof item.insertText === 'string' ? item.insertText : item.insertText.value,
    range: item.range
      ? {
          start: { line: item.range.start.line, character: item.range.start.character },
          end: { line: item.range.end.line, character: item.range.end.character },
        }
      : undefined,
  }));
  const out = distinctItems(plain).map((index) => {
    const item = items[index];
    if (typeof item.insertText !== 'string') {
      return item; // a snippet: VS Code handles it
    }
    const endLine = item.range ? item.range.end.line : position.line;
    const fixed = normalizeItem(plain[index], document.lineAt(endLine).text, {
      line: position.line,
      character: position.character,
    });
    if (fixed === plain[index]) {
      return item;
    }
    const r = fixed.range!;
    const range = new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character);
    const copy = new vscode.InlineCompletionItem(fixed.text, range, item.command);
    copy.filterText = item.filterText;
    return copy;
  });
  return Array.isArray(result) ? out : new vscode.InlineCompletionList(out);
}
