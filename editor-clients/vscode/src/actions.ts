// The server's code actions as the extension's commands know them: which kind to ask for,
// how to recognise the action by its title, and the `diffusion.rewriteSelection` argument.
// Pure: no `vscode` import.

import type { ProtocolRange } from './draft';

export type ActionName = 'rewriteSelection' | 'fillHoles' | 'completeBody' | 'fixSyntax';

export interface ActionSpec {
  /** The `CodeActionKind` to put in `context.only`. */
  kind: string;
  /** Matches the server's title (docs/PROTOCOL.md). */
  title: RegExp;
  /** Progress text while the server computes the edit. */
  progress: string;
}

export const ACTIONS: Readonly<Record<ActionName, ActionSpec>> = {
  rewriteSelection: { kind: 'refactor.rewrite', title: /^rewrite selection/i, progress: 'Rewriting the selection' },
  fillHoles: { kind: 'refactor.rewrite', title: /^fill \d+ holes?/i, progress: 'Filling holes' },
  completeBody: { kind: 'refactor.rewrite', title: /^complete body/i, progress: 'Completing the body' },
  fixSyntax: { kind: 'quickfix', title: /^fix syntax error/i, progress: 'Fixing the syntax error' },
};

/** The command the server runs for "rewrite with an instruction". */
export const REWRITE_COMMAND = 'diffusion.rewriteSelection';

export interface TitledAction {
  title: string;
  kind?: string;
}

/** True when `kind` is `wanted` or a sub-kind of it (`refactor.rewrite.x` under `refactor.rewrite`). */
export function kindMatches(kind: string | undefined, wanted: string): boolean {
  return kind === undefined || kind === wanted || kind.startsWith(wanted + '.');
}

/** The server action a command stands for, or undefined when the server offered none here. */
export function pickAction<T extends TitledAction>(actions: readonly T[], name: ActionName): T | undefined {
  const spec = ACTIONS[name];
  return actions.find((action) => kindMatches(action.kind, spec.kind) && spec.title.test(action.title));
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
