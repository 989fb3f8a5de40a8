// The server's code actions as the extension's commands know them: which kind to ask for,
// how to recognise the action (its `data.action`, else its kind), and the
// `diffusion.rewriteSelection` argument.
// Pure: no `vscode` import.

import type { ProtocolRange } from './draft';

export type ActionName = 'rewriteSelection' | 'fillHoles' | 'completeBody' | 'fixSyntax';

export interface ActionSpec {
  /** The `CodeActionKind` to put in `context.only`. */
  only: string;
  /** The action's own kind (docs/PROTOCOL.md), recognised when the action carries no data. */
  kind: string;
  /** Progress text while the server computes the edit. */
  progress: string;
}

/** The command name doubles as the server's `data.action`. Titles are for people, never matched. */
export const ACTIONS: Readonly<Record<ActionName, ActionSpec>> = {
  rewriteSelection: { only: 'refactor.rewrite', kind: 'refactor.rewrite.rewriteSelection', progress: 'Rewriting the selection' },
  fillHoles: { only: 'refactor.rewrite', kind: 'refactor.rewrite.fillHoles', progress: 'Filling holes' },
  completeBody: { only: 'refactor.rewrite', kind: 'refactor.rewrite.completeBody', progress: 'Completing the body' },
  fixSyntax: { only: 'quickfix', kind: 'quickfix', progress: 'Fixing the syntax error' },
};

/** The command the server runs for "rewrite with an instruction". */
export const REWRITE_COMMAND = 'diffusion.rewriteSelection';
/** The command carrying an action's data when the client cannot resolve actions lazily. */
export const RUN_ACTION_COMMAND = 'diffusion.runAction';

export interface OfferedAction {
  title: string;
  kind?: string;
  data?: unknown;
  command?: { command: string; arguments?: unknown[] };
}

/** True when `kind` is `wanted` or a sub-kind of it (`refactor.rewrite.x` under `refactor.rewrite`). */
export function kindMatches(kind: string | undefined, wanted: string): boolean {
  return kind !== undefined && (kind === wanted || kind.startsWith(wanted + '.'));
}

function actionOf(value: unknown): string | undefined {
  if (typeof value === 'object' && value !== null && typeof (value as { action?: unknown }).action === 'string') {
    return (value as { action: string }).action;
  }
  return undefined;
}

/** The server's `data.action` of an offered action (or of its `diffusion.runAction` command's argument). */
export function actionName(action: OfferedAction): string | undefined {
  const fromData = actionOf(action.data);
  if (fromData !== undefined) {
    return fromData;
  }
  if (action.command?.command === RUN_ACTION_COMMAND) {
    return actionOf(action.command.arguments?.[0]);
  }
  return undefined;
}

/** The server action a command stands for (by data.action, else by kind), or undefined when none is offered. */
export function pickAction<T extends OfferedAction>(actions: readonly T[], name: ActionName): T | undefined {
  const spec = ACTIONS[name];
  return (
    actions.find((action) => actionName(action) === name) ??
    actions.find((action) => actionName(action) === undefined && kindMatches(action.kind, spec.kind))
  );
}

export interface RewriteArgument {
  uri: string;
  version: number;
  range: ProtocolRange;
  instruction?: string;
}

/** The single argument of `diffusion.rewriteSelection`; a blank instruction is left out. */
export function rewriteArgument(
  uri: string,
  version: number,
  range: ProtocolRange,
  instruction: string | undefined,
): RewriteArgument {
  const trimmed = instruction?.trim() ?? '';
  return trimmed === '' ? { uri, version, range } : { uri, version, range, instruction: trimmed };
}

interface VersionedEdit {
  textDocument?: { uri?: unknown; version?: unknown };
}

/**
 * The documents `edit` (a protocol WorkspaceEdit) was made for at a version they have moved on from:
 * `versionOf(uri)` is the open document's version now (undefined when it is not open). Applying such an
 * edit would put its text at positions of the older text. `vscode.workspace.applyEdit` does not check
 * (a `vscode.WorkspaceEdit` has no versions; the language client checks only the edits the server sends
 * as workspace/applyEdit), so the extension checks before applying an action's own edit.
 */
export function staleDocuments(edit: unknown, versionOf: (uri: string) => number | undefined): string[] {
  const changes = (edit as { documentChanges?: unknown } | null | undefined)?.documentChanges;
  if (!Array.isArray(changes)) {
    return [];
  }
  const stale: string[] = [];
  for (const change of changes as VersionedEdit[]) {
    const uri = change?.textDocument?.uri;
    const version = change?.textDocument?.version;
    if (typeof uri !== 'string' || typeof version !== 'number') {
      continue; // a resource operation, or an edit for no particular version
    }
    const now = versionOf(uri);
    if (now !== undefined && now !== version && !stale.includes(uri)) {
      stale.push(uri);
    }
  }
  return stale;
}

/** The URI schemes of the documents the server is given (the client's documentSelector). */
export const SERVED_SCHEMES: readonly string[] = ['file', 'untitled'];

/**
 * Why the server cannot act on a document with this language id and URI scheme (the client never
 * opened it there: the server would answer "unknown document"), or undefined when it can.
 * `languages` is the `diffusionLsp.languages` setting.
 */
export function notServedReason(languageId: string, scheme: string, languages: readonly string[]): string | undefined {
  if (!SERVED_SCHEMES.includes(scheme)) {
    const what = scheme === 'vscode-notebook-cell' ? 'a notebook cell' : `a ${scheme}: document`;
    return `the server does not see ${what}, only files and untitled documents`;
  }
  if (!languages.includes(languageId)) {
    return `the server is not started for ${languageId} (add it to diffusionLsp.languages)`;
  }
  return undefined;
}
