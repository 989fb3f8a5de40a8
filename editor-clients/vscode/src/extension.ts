// Entry point: creates the status bar, the draft view and the server controller, and
// registers the commands and the configuration / document listeners.

import * as vscode from 'vscode';
import { SERVED_SCHEMES } from './actions';
import { runAction, rewriteSelection } from './commands';
import { DraftView } from './draftView';
import { SECTION, ServerController } from './server';
import { RESTART_KEYS } from './settings';
import { SHOW_LOG_COMMAND, StatusBar } from './statusBar';

let controller: ServerController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('Diffusion LSP');
  const status = new StatusBar();
  const drafts = new DraftView();
  const server = new ServerController(output, status, drafts);
  controller = server;
  const client = () => server.running;
  // The extension activates on its default languages and, for the languages added to
  // diffusionLsp.languages (VS Code's activation events are fixed in package.json), once VS Code has
  // started (onStartupFinished). The server starts once a document in one of the languages is open.
  let started = false;
  const startServer = (): Promise<void> => {
    started = true;
    status.show();
    return server.start();
  };
  const startIfServed = async (): Promise<void> => {
    const languages = vscode.workspace.getConfiguration(SECTION).get<string[]>('languages', []);
    const served = (document: vscode.TextDocument) =>
      SERVED_SCHEMES.includes(document.uri.scheme) && languages.includes(document.languageId);
    if (!started && vscode.workspace.textDocuments.some(served)) {
      await startServer();
    }
  };

  context.subscriptions.push(
    output,
    status,
    drafts,
    server,
    vscode.commands.registerCommand(SHOW_LOG_COMMAND, () => output.show(true)),
    vscode.commands.registerCommand('diffusionLsp.restart', () => {
      started = true;
      status.show();
      return server.restart();
    }),
    // "Rewrite Selection": the model rewrites it, nothing asked. The instruction variant is shown only
    // while the server's ready status says instructions: true (INSTRUCTIONS_CONTEXT).
    vscode.commands.registerCommand('diffusionLsp.rewriteSelection', () => rewriteSelection(client, () => false)),
    vscode.commands.registerCommand('diffusionLsp.rewriteSelectionWithInstruction', () =>
      rewriteSelection(client, () => status.model.takesInstructions),
    ),
    vscode.commands.registerCommand('diffusionLsp.fillHoles', () => runAction(client, 'fillHoles')),
    vscode.commands.registerCommand('diffusionLsp.completeBody', () => runAction(client, 'completeBody')),
    vscode.commands.registerCommand('diffusionLsp.fixSyntax', () => runAction(client, 'fixSyntax')),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
        void (started ? server.restart() : startIfServed());
      } else if (event.affectsConfiguration(SECTION)) {
        void server.pushSettings();
      }
    }),
    vscode.workspace.onDidChangeTextDocument((event) => {
      if (event.contentChanges.length > 0) {
        server.documentChanged(event.document.uri);
      }
    }),
    vscode.workspace.onDidCloseTextDocument((document) => server.documentChanged(document.uri)),
    vscode.workspace.onDidOpenTextDocument(() => void startIfServed()),
  );
  await startIfServed();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}
