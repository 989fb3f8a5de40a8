// Works around vscode-languageclient 9.0.1 sending VS Code's inline-completion context to
// the server unconverted (fixed in 10.x): VS Code's trigger kinds are Invoke = 0 and
// Automatic = 1, LSP's are Invoked = 1 and Automatic = 2; and VS Code's Range serializes
// as an array. The middleware hands the client a context already in protocol form, which
// 9.0.1 passes through as is. Pure: no `vscode` import.

/** VS Code's InlineCompletionTriggerKind values. */
export const CODE_TRIGGER = { Invoke: 0, Automatic: 1 } as const;
/** LSP's InlineCompletionTriggerKind values. */
export const PROTOCOL_TRIGGER = { Invoked: 1, Automatic: 2 } as const;

interface PositionLike {
  line: number;
  character: number;
}

export interface CodeInlineContext {
  triggerKind: number;
  selectedCompletionInfo?: { range: { start: PositionLike; end: PositionLike }; text: string };
}

export interface ProtocolInlineContext {
  triggerKind: number;
  selectedCompletionInfo?: { range: { start: PositionLike; end: PositionLike }; text: string };
}

const point = (p: PositionLike): PositionLike => ({ line: p.line, character: p.character });

export function protocolInlineContext(context: CodeInlineContext): ProtocolInlineContext {
  const triggerKind = context.triggerKind === CODE_TRIGGER.Invoke ? PROTOCOL_TRIGGER.Invoked : PROTOCOL_TRIGGER.Automatic;
  const info = context.selectedCompletionInfo;
  if (!info) {
    return { triggerKind };
  }
  return {
    triggerKind,
    selectedCompletionInfo: { range: { start: point(info.range.start), end: point(info.range.end) }, text: info.text },
  };
}
