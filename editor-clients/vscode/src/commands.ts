// The extension's editor commands: rewrite the selection with an instruction, and run the
// server's "Fill holes" / "Complete body" / "Fix syntax error" code actions directly.

import * as vscode from 'vscode';
import {
  CodeAction,
  CodeActionParams,
  CodeActionRequest,
  CodeActionResolveRequest,
  Command,
  ExecuteCommandRequest,
  LanguageClient,
} from 'vscode-languageclient/node';
import { ACTIONS, ActionName, notServedReason, pickAction, REWRITE_COMMAND, rewriteArgument, staleDocuments } from './actions';
import { connectionLost } from './restartPolicy';
import { SECTION } from './server';

type ClientSource = () => LanguageClient | undefined;

function activeEditor(getClient: ClientSource): { editor: vscode.TextEditor; client: LanguageClient } | undefined {
  const editor = vscode.window.activeTextEditor;
  const client = getClient();
  if (!client) {
    void vscode.window.showWarningMessage('Diffusion LSP is not running (see the status bar).');
    return undefined;
  }
  if (!editor) {
    return undefined;
  }
  const languages = vscode.workspace.getConfiguration(SECTION).get<string[]>('languages', []);
  const reason = notServedReason(editor.document.languageId, editor.document.uri.scheme, languages);
  if (reason) {
    void vscode.window.showInformationMessage(`Diffusion: ${reason}.`);
    return undefined;
  }
  return { editor, client };
}

function withProgress<T>(title: string, task: () => Promise<T>): Thenable<T> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: `Diffusion: ${title}…` }, task);
}

/**
 * Has the server rewrite the selection (`diffusion.rewriteSelection`). Asks for an instruction
 * first only when the server's ready status said its backend follows one (`instructions: true`).
 */
export async function rewriteSelection(getClient: ClientSource, takesInstructions: () => boolean): Promise<void> {
  const target = activeEditor(getClient);
  if (!target) {
    return;
  }
  const { editor, client } = target;
  if (editor.selection.isEmpty) {
    void vscode.window.showInformationMessage('Select the code to rewrite first.');
    return;
  }
  let instruction: string | undefined;
  if (takesInstructions()) {
    instruction = await vscode.window.showInputBox({
      title: 'Rewrite selection',
      prompt: 'What should change? Leave empty to let the model rewrite it freely.',
      placeHolder: 'e.g. use a list comprehension',
    });
    if (instruction === undefined) {
      return; // Escape: cancelled.
    }
  }
  const document = editor.document;
  const argument = rewriteArgument(
    client.code2ProtocolConverter.asUri(document.uri),
    document.version,
    client.code2ProtocolConverter.asRange(editor.selection),
    instruction,
  );
  try {
    // The server answers by sending workspace/applyEdit, which the client applies.
    await withProgress(ACTIONS.rewriteSelection.progress, () =>
      client.sendRequest(ExecuteCommandRequest.type, { command: REWRITE_COMMAND, arguments: [argument] }),
    );
  } catch (error) {
    reportFailure('rewrite', error, client, getClient);
  }
}

/** Asks the server for its code actions here and runs the one named. */
export async function runAction(getClient: ClientSource, name: ActionName): Promise<void> {
  const target = activeEditor(getClient);
  if (!target) {
    return;
  }
  const { editor, client } = target;
  const spec = ACTIONS[name];
  const params: CodeActionParams = {
    textDocument: { uri: client.code2ProtocolConverter.asUri(editor.document.uri) },
    range: client.code2ProtocolConverter.asRange(editor.selection),
    context: { diagnostics: [], only: [spec.only], triggerKind: 1 /* Invoked */ },
  };
  try {
    await withProgress(spec.progress, async () => {
      const offered = (await client.sendRequest(CodeActionRequest.type, params)) ?? [];
      const actions = offered.filter((item): item is CodeAction => !Command.is(item));
      let action = pickAction(actions, name);
      if (!action) {
        void vscode.window.showInformationMessage(`Diffusion: nothing to do here (${spec.progress.toLowerCase()}).`);
        return;
      }
      if (!action.edit && !action.command) {
        action = await client.sendRequest(CodeActionResolveRequest.type, action);
      }
      if (action.edit) {
        const edit = await client.protocol2CodeConverter.asWorkspaceEdit(action.edit);
        // Checked right before applying: an edit made for a version the user has typed past would
        // land at the older text's positions (applyEdit itself does not compare versions).
        const versionOf = (uri: string) =>
          vscode.workspace.textDocuments.find((doc) => client.code2ProtocolConverter.asUri(doc.uri) === uri)?.version;
        if (staleDocuments(action.edit, versionOf).length > 0 || !(await vscode.workspace.applyEdit(edit))) {
          void vscode.window.showWarningMessage('Diffusion: the edit no longer applies (the file changed).');
        }
      }
      if (action.command) {
        await client.sendRequest(ExecuteCommandRequest.type, {
          command: action.command.command,
          arguments: action.command.arguments,
        });
      }
    });
  } catch (error) {
    reportFailure(spec.progress.toLowerCase(), error, client, getClient);
  }
}

/**
 * A command's request failed. When the server went away meanwhile (it died, or was restarted: the
 * connection's errors, or the client it was sent to is no longer the running one) the library's words
 * ("Pending response rejected since connection got disposed", "Starting server failed") mean nothing
 * to the user: say what happened instead.
 */
function reportFailure(what: string, error: unknown, client: LanguageClient, getClient: ClientSource): void {
  if (connectionLost(error) || getClient() !== client) {
    void vscode.window.showWarningMessage(
      `Diffusion: ${what} stopped: the server stopped or restarted while it ran (see the status bar); run it again.`,
    );
  } else {
    void vscode.window.showErrorMessage(`Diffusion: ${what} failed: ${messageOf(error)}`);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
