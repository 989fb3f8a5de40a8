// Owns the language client: finds and starts `diffusion-lsp`, wires the protocol extensions
// (`diffusion/status`, `diffusion/draft`) to the status bar and the draft view, pushes
// setting changes, and restarts on demand.

import * as fs from 'fs';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from 'vscode-languageclient/node';
import { DraftBoard, isDraft } from './draft';
import { protocolInlineContext } from './inlineContext';
import { DraftView } from './draftView';
import { notInstalledMessage, resolveServerCommand } from './serverCommand';
import { configurationChangeParams, SERVER_SETTING_KINDS, ServerSettings, toServerSettings } from './settings';
import { StatusBar } from './statusBar';
import { isServerStatus } from './status';

export const SECTION = 'diffusionLsp';
const ACTIVE_CONTEXT = 'diffusionLsp.active';

/** The value the user set for `diffusionLsp.<key>` at the narrowest scope, if any. */
function explicitValue(config: vscode.WorkspaceConfiguration, key: string): unknown {
  const inspected = config.inspect(key);
  return inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
}

export class ServerController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly board = new DraftBoard();

  constructor(
    private readonly output: vscode.OutputChannel,
    private readonly status: StatusBar,
    private readonly drafts: DraftView,
  ) {}

  /** The running client, for commands; undefined while stopped. */
  get running(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  async start(): Promise<void> {
    const config = vscode.workspace.getConfiguration(SECTION);
    const configured = config.get<string>('server.path', 'diffusion-lsp');
    const resolution = resolveServerCommand(configured, {
      platform: process.platform,
      pathVariable: process.env.PATH,
      workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath),
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
      void vscode.window.showErrorMessage(message, 'Show Log').then((choice) => {
        if (choice) {
          this.output.show(true);
        }
      });
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.drafts.clearAll();
    if (client?.needsStop()) {
      await client.stop();
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Sends the current settings as `workspace/didChangeConfiguration`. */
  async pushSettings(): Promise<void> {
    const client = this.running;
    if (client) {
      await client.sendNotification(DidChangeConfigurationNotification.type, configurationChangeParams(this.readSettings()));
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
    // No `transport`: with TransportKind.stdio the client appends `--stdio` to the arguments,
    // which diffusion-lsp does not take; a plain Executable talks over stdio anyway.
    const serverOptions: ServerOptions = { command, args };
    const clientOptions: LanguageClientOptions = {
      documentSelector: languages.flatMap((language) => [
        { scheme: 'file', language },
        { scheme: 'untitled', language },
      ]),
      initializationOptions: this.readSettings(),
      outputChannel: this.output,
      middleware: {
        // The suggestion is in: VS Code shows it as ghost text, so the draft goes.
        provideInlineCompletionItems: async (document, position, context, token, next) => {
          const protocolContext = protocolInlineContext(context) as unknown as vscode.InlineCompletionContext;
          try {
            return await next(document, position, protocolContext, token);
          } finally {
            this.drafts.clear(document.uri);
          }
        },
      },
    };
    const client = new LanguageClient(SECTION, 'Diffusion LSP', serverOptions, clientOptions);
    // textDocument/inlineCompletion is a proposed (LSP 3.18) feature in vscode-languageclient 9:
    // without this the client neither announces nor uses it, and no ghost text appears.
    client.registerProposedFeatures();

    client.onNotification('diffusion/status', (params: unknown) => {
      if (isServerStatus(params)) {
        this.status.update((model) => model.serverStatus(params));
        if (params.state === 'error') {
          void vscode.window.showErrorMessage(`Diffusion LSP: ${params.message}`, 'Show Log').then((choice) => {
            if (choice) {
              this.output.show(true);
            }
          });
        }
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
      if (running) {
        this.status.update((model) => model.running());
      } else if (event.newState === State.Stopped) {
        this.drafts.clearAll();
        this.status.update((model) => model.stopped());
      }
    });
    return client;
  }

  private showDraft(client: LanguageClient, params: Parameters<DraftBoard['receive']>[0]): void {
    const uri = client.protocol2CodeConverter.asUri(params.uri);
    const document = vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === uri.toString());
    const action = this.board.receive(params, document?.version);
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
