// The VS Code draft log: a real VS Code does not let a test read decorations back (the
// extension in a real VS Code: ../vscode/e2e), so this loads the packaged extension
// (editor-clients/vscode/dist/extension.js) with the smoke test's stub `vscode` module
// (vscode/smoke/vscode-stub.js) against the real diffusion-lsp, asks for one inline completion
// at the recordings' example cursor, and writes every draft decoration the extension painted
// (its after-text runs and their confidence shade), then the ghost text VS Code would show.
//
//   node vscode-drafts.js SERVER EXAMPLE.py LINE COL OUT.txt '{"model": "embedded", ...}'
//
// LINE and COL are 1-based. Called by record.py; exits non-zero when no draft was painted or
// no suggestion came back.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const Module = require('module');

const vscodeDir = path.resolve(__dirname, '..', 'vscode');
const stub = require(path.join(vscodeDir, 'smoke', 'vscode-stub.js'));
const load = Module._load;
Module._load = function (request, ...rest) {
  return request === 'vscode' ? stub : load.call(this, request, ...rest);
};
process.on('unhandledRejection', (error) => console.error(`(unhandled rejection: ${error && error.message})`));

const [server, example, lineArg, colArg, outFile, settingsJson] = process.argv.slice(2);
if (!server || !example || !outFile) {
  console.error('usage: node vscode-drafts.js SERVER EXAMPLE.py LINE COL OUT.txt [SETTINGS_JSON]');
  process.exit(2);
}
const settings = JSON.parse(settingsJson || '{}');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(ms, cond) {
  const end = Date.now() + ms;
  for (;;) { const v = cond(); if (v || Date.now() > end) return v; await sleep(50); }
}

// The extension's shades (src/draftView.ts BUCKET_STYLE): opacity on the ghost-text colour.
function bucketOf(textDecoration) {
  const m = /opacity:\s*([\d.]+)/.exec(textDecoration || '');
  const opacity = m ? Number(m[1]) : 1;
  if (opacity <= 0.3) return ['▒', 'masked'];
  if (opacity <= 0.5) return ['L', 'low'];
  if (opacity < 1) return ['M', 'medium'];
  return ['H', 'high'];
}

async function main() {
  const record = stub.__record;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'diffusion-vscode-rec-'));
  const file = path.join(dir, path.basename(example));
  const text = fs.readFileSync(example, 'utf8');
  fs.writeFileSync(file, text);
  const doc = stub.__document(file, 'python', text);
  stub.__openDocuments.push(doc);
  const cursor = new stub.Position(Number(lineArg) - 1, Number(colArg) - 1);
  const updates = [];
  let t0 = 0;
  stub.window.visibleTextEditors.push({
    document: doc, selection: new stub.Selection(cursor, cursor),
    setDecorations: (type, ranges) => updates.push({ t: Date.now() - t0, type: type.key, ranges }),
  });
  // Name the extension's two decoration types by what they paint (the stub numbers them all 0).
  const createType = stub.window.createTextEditorDecorationType;
  stub.window.createTextEditorDecorationType = (options) => Object.assign(createType(options),
    { key: options.after ? 'draft text' : options.textDecoration ? 'replaced text' : 'other decoration' });
  const config = { 'diffusionLsp.server.path': server, 'diffusionLsp.languages': ['python'] };
  for (const [key, value] of Object.entries(settings)) config[`diffusionLsp.${key}`] = value;
  Object.assign(stub.__config, config);

  const extension = require(path.join(vscodeDir, 'dist', 'extension.js'));
  const memento = { get: () => undefined, update: async () => {}, keys: () => [] };
  const ctx = { subscriptions: [], extensionPath: vscodeDir, asAbsolutePath: (p) => path.resolve(vscodeDir, p),
    globalState: memento, workspaceState: memento, extensionUri: stub.Uri.file(vscodeDir), logUri: stub.Uri.file(os.tmpdir()) };
  const activation = extension.activate(ctx);
  await waitFor(90000, () => record.statusTexts.some((t) => /sparkle|error/.test(t)));
  await activation;
  const registration = (record.providers.registerInlineCompletionItemProvider || [])[0];
  if (!registration) throw new Error(`no inline completion provider registered (status: ${record.statusTexts.join(' -> ')})`);
  updates.length = 0;
  t0 = Date.now();
  const result = await registration[1].provideInlineCompletionItems(doc, cursor, { triggerKind: 0 },
    new stub.CancellationTokenSource().token);
  const elapsed = Date.now() - t0;
  await sleep(200);
  const items = Array.isArray(result) ? result : result && result.items;
  const item = items && items[0];
  await extension.deactivate();

  const out = [];
  out.push('# VS Code: the draft decorations the extension painted while one suggestion developed.');
  out.push('# A real run: editor-clients/vscode/dist/extension.js, loaded with the smoke test\'s stub');
  out.push('# `vscode` module (a real VS Code does not let a test read decorations back; see');
  out.push('# editor-clients/vscode/e2e for the extension in a real VS Code), against the real diffusion-lsp.');
  out.push(`# Settings: ${JSON.stringify(settings)}. Document ${path.basename(example)}, cursor ${lineArg}:${colArg}.`);
  out.push('# Regenerate: bash editor-clients/recordings/record.sh');
  out.push('#');
  out.push('# Each update is one setDecorations call of the draft type: the after-text runs at the cursor.');
  out.push('#   text  what is painted (⏎ = a line break, ▒ = a still-masked slot; the extension paints');
  out.push('#         spaces as no-break spaces, shown here as spaces)');
  out.push('#   shade one mark per character: H high confidence (ghost-text colour), M medium (opacity 0.75),');
  out.push('#         L low (opacity 0.5, dotted underline), ▒ masked (opacity 0.3)');
  out.push('');
  let drafts = 0;
  for (const u of updates) {
    if (u.ranges.length === 0) {
      if (u.type === 'draft text') out.push(`+${String(u.t).padStart(5)} ms  ${u.type}: cleared`);
      continue;
    }
    const runs = u.ranges.filter((r) => r.renderOptions && r.renderOptions.after);
    if (runs.length === 0) {
      const r = u.ranges[0];
      out.push(`+${String(u.t).padStart(5)} ms  ${u.type}: struck through ${r.start.line + 1}:${r.start.character + 1}-${r.end.line + 1}:${r.end.character + 1}`);
      continue;
    }
    drafts++;
    const hover = runs[0].hoverMessage && (runs[0].hoverMessage.value || runs[0].hoverMessage);
    const at = runs[0].range.start;
    let textLine = '';
    let shadeLine = '';
    for (const r of runs) {
      const after = r.renderOptions.after;
      const [mark] = bucketOf(after.textDecoration);
      const shown = after.contentText.replace(/\u00a0/g, ' ');
      textLine += shown;
      shadeLine += [...shown].map((c) => (c === ' ' ? ' ' : mark)).join('');
    }
    out.push(`+${String(u.t).padStart(5)} ms  ${u.type}: ${runs.length} run${runs.length === 1 ? "" : "s"} at ${at.line + 1}:${at.character + 1}  (hover: "${hover}")`);
    out.push(`   text  |${textLine}|`);
    out.push(`   shade |${shadeLine}|`);
  }
  out.push('');
  if (item) {
    const r = item.range;
    out.push(`+${String(elapsed).padStart(5)} ms  the inline completion answered; VS Code shows it as ghost text at ` +
      `${r ? `${r.start.line + 1}:${r.start.character + 1}` : 'the cursor'}:`);
    out.push(`   ${JSON.stringify(typeof item.insertText === 'string' ? item.insertText : item.insertText && item.insertText.value)}`);
  } else {
    out.push(`+${String(elapsed).padStart(5)} ms  the inline completion answered with no item (no suggestion here)`);
  }
  fs.writeFileSync(outFile, `${out.join('\n')}\n`);
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`vscode: ${drafts} draft updates, suggestion ${item ? JSON.stringify(item.insertText) : 'none'}`);
  if (drafts === 0 || !item) process.exit(1);
  process.exit(0);
}

main().catch((error) => { console.error(`vscode-drafts: ${error && error.stack || error}`); process.exit(1); });
setTimeout(() => { console.error('vscode-drafts: timeout'); process.exit(1); }, 100000).unref();
