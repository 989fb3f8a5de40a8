// Turns `diffusion/draft` notifications into what the editor paints: runs of text with a
// confidence bucket each, and decides which draft of a document is current.
// Pure: positions stay in protocol form; the vscode side converts and paints.

/** The glyph the server puts in a still-masked slot. */
export const MASK_GLYPH = '▒';
/** Shown in place of a line break (an inline decoration is one line). */
export const NEWLINE_GLYPH = '⏎';

export interface ProtocolPosition {
  line: number;
  character: number;
}

export interface ProtocolRange {
  start: ProtocolPosition;
  end: ProtocolPosition;
}

export interface DraftToken {
  text: string;
  confidence: number;
}

/** `diffusion/draft` params (docs/PROTOCOL.md). */
export interface Draft {
  uri: string;
  version: number;
  id: string;
  step: number;
  done: boolean;
  range: ProtocolRange;
  text: string;
  tokens?: DraftToken[];
  /** On the final (`done`) draft: the fill's estimated probability of being exactly right. */
  fillConfidence?: number | null;
  /** A code action's drafts name it (`fillHoles`, `rewriteSelection`, ...); an inline request's do not. */
  action?: string;
}

export type Bucket = 'masked' | 'low' | 'medium' | 'high';

/** Bucket bounds: below 0.4 low, below 0.8 medium, else high; masked slots apart. */
export const BUCKET_BOUNDS = { low: 0.4, medium: 0.8 } as const;

export function bucketOf(token: DraftToken): Bucket {
  if (token.text.includes(MASK_GLYPH) || token.confidence <= 0) {
    return 'masked';
  }
  if (token.confidence < BUCKET_BOUNDS.low) {
    return 'low';
  }
  return token.confidence < BUCKET_BOUNDS.medium ? 'medium' : 'high';
}

export interface Segment {
  text: string;
  bucket: Bucket;
}

function isPosition(value: unknown): value is ProtocolPosition {
  const v = value as ProtocolPosition | null;
  return typeof v === 'object' && v !== null && Number.isInteger(v.line) && Number.isInteger(v.character);
}

/** Validates a notification's params at the edge; anything else is dropped. */
export function isDraft(value: unknown): value is Draft {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const v = value as Record<string, unknown>;
  const range = v.range as Record<string, unknown> | undefined;
  const tokensOk =
    v.tokens === undefined ||
    (Array.isArray(v.tokens) &&
      v.tokens.every(
        (t: unknown) =>
          typeof t === 'object' &&
          t !== null &&
          typeof (t as DraftToken).text === 'string' &&
          typeof (t as DraftToken).confidence === 'number',
      ));
  return (
    typeof v.uri === 'string' &&
    typeof v.version === 'number' &&
    (typeof v.id === 'string' || typeof v.id === 'number') &&
    typeof v.done === 'boolean' &&
    typeof v.text === 'string' &&
    typeof range === 'object' &&
    range !== null &&
    isPosition(range.start) &&
    isPosition(range.end) &&
    tokensOk
  );
}

/** The draft's tokens, or its text split into masked / unmasked runs when tokens are absent. */
function tokensOf(draft: Draft): DraftToken[] {
  if (draft.tokens && draft.tokens.length > 0) {
    return draft.tokens;
  }
  const runs = draft.text.match(new RegExp(`${MASK_GLYPH}+|[^${MASK_GLYPH}]+`, 'gu')) ?? [];
  return runs.map((text) => ({ text, confidence: text.startsWith(MASK_GLYPH) ? 0 : 0.5 }));
}

/**
 * Flattens a draft into one line of segments for an inline decoration: a line break becomes
 * ` ⏎ ` and the indentation after it is dropped; spaces become non-breaking so the
 * decoration keeps them; adjacent tokens of one bucket merge; the text stops at `maxChars`
 * with an ellipsis.
 */
export function draftSegments(draft: Draft, maxChars = 120): Segment[] {
  const segments: Segment[] = [];
  let length = 0;
  let afterNewline = false;
  for (const token of tokensOf(draft)) {
    const bucket = bucketOf(token);
    let text = '';
    for (const ch of token.text) {
      if (ch === '\r') {
        continue;
      } else if (ch === '\n') {
        text += `\u00a0${NEWLINE_GLYPH}\u00a0`;
        afterNewline = true;
      } else if (afterNewline && (ch === ' ' || ch === '\t')) {
        continue;
      } else {
        afterNewline = false;
        text += ch === ' ' ? '\u00a0' : ch === '\t' ? '\u00a0\u00a0' : ch;
      }
    }
    if (text === '') {
      continue;
    }
    const room = maxChars - length;
    const clipped = [...text].length > room ? [...text].slice(0, Math.max(room, 0)).join('') + '…' : text;
    const last = segments[segments.length - 1];
    if (last && last.bucket === bucket) {
      last.text += clipped;
    } else {
      segments.push({ text: clipped, bucket });
    }
    length += [...clipped].length;
    if (length >= maxChars) {
      break;
    }
  }
  return segments;
}

/** Mean confidence of the unmasked tokens, for a tooltip (undefined when all are masked). */
export function meanConfidence(draft: Draft): number | undefined {
  const known = tokensOf(draft).filter((t) => bucketOf(t) !== 'masked');
  if (known.length === 0) {
    return undefined;
  }
  return known.reduce((sum, t) => sum + t.confidence, 0) / known.length;
}

/**
 * True for the final draft of a request answered with a suggestion: its `fillConfidence` is the last
 * suggestion's. A final draft without text (nothing found, or the request ended without an answer:
 * cancelled, superseded, the document changed) only clears what was painted; so does a code action's
 * (it has `action`): its text is an edit's, which has no estimate, and the last suggestion's stays.
 */
export function isFinalSuggestion(draft: Draft): boolean {
  return draft.done && draft.text !== '' && draft.action === undefined;
}

export type DraftAction = { kind: 'show'; draft: Draft } | { kind: 'clear'; uri: string } | { kind: 'ignore' };

/**
 * Keeps the current draft of each document and decides what a new notification does:
 * a draft for an older document version, an older request, or an older step is ignored;
 * the final (`done`) draft clears the decoration, since the real suggestion follows.
 */
export class DraftBoard {
  private readonly latest = new Map<string, { id: string; step: number }>();

  receive(draft: Draft, documentVersion: number | undefined): DraftAction {
    if (documentVersion !== undefined && documentVersion !== draft.version) {
      return { kind: 'ignore' };
    }
    const id = String(draft.id);
    const previous = this.latest.get(draft.uri);
    if (previous && previous.id === id && draft.step < previous.step) {
      return { kind: 'ignore' };
    }
    if (previous && previous.id !== id && compareIds(id, previous.id) < 0) {
      return { kind: 'ignore' };
    }
    if (draft.done) {
      this.latest.set(draft.uri, { id, step: Number.POSITIVE_INFINITY });
      return { kind: 'clear', uri: draft.uri };
    }
    this.latest.set(draft.uri, { id, step: draft.step });
    return { kind: 'show', draft };
  }

  /** The document changed or closed: whatever was shown for it is stale. */
  forget(uri: string): void {
    this.latest.delete(uri);
  }

  /** The server stopped: a new one numbers its requests from 1 again, so none of its drafts is older. */
  forgetAll(): void {
    this.latest.clear();
  }
}

/** Request ids are opaque strings; numeric ones compare as numbers, others never count as older. */
function compareIds(a: string, b: string): number {
  const x = Number(a);
  const y = Number(b);
  return Number.isFinite(x) && Number.isFinite(y) ? x - y : 0;
}
