// The server answers textDocument/completion with its fill as a completion item: the fallback for
// editors without ghost text. In VS Code, which shows the same fill as ghost text, asking for both
// on a keystroke (a trigger character, a quick suggestion) ran the model twice, and the server's one
// job per document let the second request supersede the first: the ghost text could be answered
// empty. Pure: no `vscode` import.

/**
 * Whether to ask the server for completion items, given `editor.inlineSuggest.enabled` for the
 * document: only when the user turned inline suggestions off (VS Code's default is on).
 */
export function wantsCompletionItems(inlineSuggestEnabled: unknown): boolean {
  return inlineSuggestEnabled === false;
}
