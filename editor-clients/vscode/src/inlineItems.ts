// What the extension does to the server's inline-completion items before VS Code shows them.
// Pure: no `vscode` import (positions and line text are passed in).
//
// - A block fill ends in a line break. Inserted on a line whose rest is blank (the usual place:
//   an empty indented line after `for ...:`), that break would leave a stray empty line and the
//   cursor on it; the break (and any blank lines after it) is dropped and the blank rest of the
//   line replaced instead.
// - The server answers with its distinct fills, best first (the alternatives VS Code cycles with
//   Alt+] / Alt+[); empty items and repeats are left out, the order is kept.

export interface Point {
  line: number;
  character: number;
}

export interface PlainItem {
  /** The text to insert (a snippet's text is handled by VS Code and left alone). */
  text: string;
  range: { start: Point; end: Point } | undefined;
}

/**
 * The item as it should be inserted: `lineAtEnd` is the text of the line where `range` ends (or of
 * the cursor's line when the item has no range; `cursor` is then where it goes).
 */
export function normalizeItem(item: PlainItem, lineAtEnd: string, cursor: Point): PlainItem {
  const end = item.range?.end ?? cursor;
  if (!/\r?\n\s*$/.test(item.text)) {
    return item;
  }
  const rest = lineAtEnd.slice(end.character);
  if (rest.trim() !== '') {
    return item; // the break pushes the code after it down: keep it
  }
  const start = item.range?.start ?? cursor;
  return {
    text: item.text.replace(/\r?\n\s*$/, ''),
    range: { start: { ...start }, end: { line: end.line, character: end.character + rest.length } },
  };
}

/** Indices of the items to keep: non-empty, first of each (range, text). */
export function distinctItems(items: readonly PlainItem[]): number[] {
  const seen = new Set<string>();
  const keep: number[] = [];
  items.forEach((item, index) => {
    if (item.text === '') {
      return;
    }
    const r = item.range;
    const key = r ? `${r.start.line}:${r.start.character}:${r.end.line}:${r.end.character}:${item.text}` : `-:${item.text}`;
    if (!seen.has(key)) {
      seen.add(key);
      keep.push(index);
    }
  });
  return keep;
}
