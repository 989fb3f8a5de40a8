// Paints `diffusion/draft` notifications in the editor: the developing suggestion as inline
// after-text at the place it will go, each run shaded by its confidence bucket, and the
// text it will replace (if any) struck through. The final suggestion itself is VS Code's
// ghost text; this view clears when it arrives.

import * as vscode from 'vscode';
import { Bucket, Draft, draftSegments, meanConfidence } from './draft';

/** Opacity and style per confidence bucket, on top of the ghost-text colour. */
const BUCKET_STYLE: Readonly<Record<Bucket, { opacity: number; extra: string; fontStyle?: string }>> = {
  high: { opacity: 1, extra: '' },
  medium: { opacity: 0.75, extra: '' },
  low: { opacity: 0.5, extra: 'underline dotted' },
  masked: { opacity: 0.3, extra: '' },
};

export class DraftView implements vscode.Disposable {
  // One type for every run: VS Code keeps the order of same-position decorations of one type
  // as given, which keeps the runs in token order.
  private readonly textType = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor('editorGhostText.foreground') },
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
  private readonly replacedType = vscode.window.createTextEditorDecorationType({
    textDecoration: 'line-through',
    opacity: '0.6',
  });
  private readonly shown = new Set<string>();

  /** Shows `draft` (already checked against the document version) at `range`. */
  show(draft: Draft, uri: vscode.Uri, range: vscode.Range): void {
    const segments = draftSegments(draft);
    const mean = meanConfidence(draft);
    const hover = new vscode.MarkdownString(
      `Diffusion draft, step ${draft.step}` +
        (mean === undefined ? '' : `, mean confidence ${mean.toFixed(2)}`),
    );
    const anchor = new vscode.Range(range.end, range.end);
    const runs: vscode.DecorationOptions[] = segments.map((segment) => {
      const style = BUCKET_STYLE[segment.bucket];
      return {
        range: anchor,
        hoverMessage: hover,
        renderOptions: {
          after: {
            contentText: segment.text,
            // `textDecoration` is the documented way to pass extra CSS to after-text.
            textDecoration: `${style.extra === '' ? 'none' : style.extra}; opacity: ${style.opacity}`,
          },
        },
      };
    });
    for (const editor of this.editorsOf(uri)) {
      editor.setDecorations(this.textType, runs);
      editor.setDecorations(this.replacedType, range.isEmpty ? [] : [range]);
    }
    this.shown.add(uri.toString());
  }

  clear(uri: vscode.Uri): void {
    if (!this.shown.delete(uri.toString())) {
      return;
    }
    for (const editor of this.editorsOf(uri)) {
      editor.setDecorations(this.textType, []);
      editor.setDecorations(this.replacedType, []);
    }
  }

  clearAll(): void {
    for (const uri of [...this.shown]) {
      this.clear(vscode.Uri.parse(uri));
    }
  }

  dispose(): void {
    this.textType.dispose();
    this.replacedType.dispose();
  }

  private editorsOf(uri: vscode.Uri): vscode.TextEditor[] {
    const key = uri.toString();
    return vscode.window.visibleTextEditors.filter((editor) => editor.document.uri.toString() === key);
  }
}
