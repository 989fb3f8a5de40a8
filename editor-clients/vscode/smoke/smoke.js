// Smoke test of the packaged extension (dist/extension.js) outside VS Code: a stub `vscode`
// module (vscode-stub.js) stands in for the editor, the real diffusion-lsp serves.
// Checks: activation starts the server, the status bar reaches "ready", the inline
// completion provider registered through the proposed feature answers with an item at the
// cursor, drafts are painted as decorations and cleared, the completion provider is not asked
// for the same fill while inline suggestions are on, and a missing server is reported.
//
//   DIFFUSION_LSP=/path/to/diffusion-lsp node smoke/smoke.js
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const Module = require('module');
const stub = require('./vscode-stub');

const load = Module._load;
Module._load = function (request, ...rest) {
  return request === 'vscode' ? stub : load.call(this, request, ...rest);
};

// VS Code's extension host logs unhandled rejections instead of dying; so does this test (and counts them).
const rejections = [];
process.on('unhandledRejection', (error) => { rejections.push(error && error.message); console.log(`(unhandled rejection: ${error && error.message})`); });

const server = process.env.DIFFUSION_LSP;
let passed = 0;
let failed = 0;
function check(ok, what) {
  if (ok) { passed++; console.log(`ok   ${what}`); } else { failed++; console.log(`FAIL ${what}`); }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(ms, cond) {
  const end = Date.now() + ms;
  for (;;) { const v = cond(); if (v || Date.now() > end) return v; await sleep(50); }
}
// The diffusion-lsp processes this test started (children of this process; Linux's /proc).
function serverProcesses() {
  const found = [];
  for (const pid of fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('diffusion-lsp')) found.push(Number(pid));
    } catch { /* gone meanwhile */ }
  }
  return found;
}
function context() {
  const memento = { get: () => undefined, update: async () => {}, keys: () => [] };
  return { subscriptions: [], extensionPath: path.resolve(__dirname, '..'), asAbsolutePath: (p) => path.resolve(__dirname, '..', p),
    globalState: memento, workspaceState: memento, extensionUri: stub.Uri.file(path.resolve(__dirname, '..')), logUri: stub.Uri.file(os.tmpdir()) };
}

async function main() {
  if (!server) { console.log('FAIL DIFFUSION_LSP is not set\n0 passed, 1 failed'); process.exit(1); }
  const record = stub.__record;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'diffusion-vscode-'));
  const file = path.join(dir, 'example.py');
  const text = 'def read_lines(path):\n    with open(path) as handle:\n        return \n\n\nprint(1)\n';
  fs.writeFileSync(file, text);
  const doc = stub.__document(file, 'python', text);
  stub.__openDocuments.push(doc);
  const decorations = [];
  stub.window.visibleTextEditors.push({ document: doc, selection: new stub.Selection(new stub.Position(2, 15), new stub.Position(2, 15)),
    setDecorations: (type, ranges) => decorations.push({ type: type.key, ranges }) });
  Object.assign(stub.__config, {
    'diffusionLsp.server.path': server,
    'diffusionLsp.languages': ['python'],
    // The embedded model is weak: without validation it always proposes something.
    'diffusionLsp.validate': false,
    'diffusionLsp.draftIntervalMs': 0,
    // The test checks the client, not the model's precision: never withhold a fill.
    'diffusionLsp.minConfidence': 0,
  });

  const extension = require('../dist/extension.js');
  const ctx = context();
  const activation = extension.activate(ctx);
  const ready = await waitFor(300000, () => record.statusTexts.some((t) => t.includes('sparkle')) || record.statusTexts.some((t) => t.includes('error')));
  await activation;
  check(ready && record.statusTexts[record.statusTexts.length - 1].includes('sparkle'), `status bar reached ready (${record.statusTexts.join(' -> ')})`);
  check(record.contexts['diffusionLsp.active'] === true, 'context key diffusionLsp.active set');
  if (!ready || !record.statusTexts[record.statusTexts.length - 1].includes("sparkle")) { for (const l of (record.output && record.output.lines) || []) console.log(`  log: ${l}`); for (const m of record.messages) console.log(`  message: ${m.join(": ")}`); }
  for (const id of ['diffusionLsp.rewriteSelection', 'diffusionLsp.rewriteSelectionWithInstruction', 'diffusionLsp.fillHoles', 'diffusionLsp.completeBody', 'diffusionLsp.fixSyntax', 'diffusionLsp.showLog', 'diffusionLsp.restart']) {
    check(typeof record.commands[id] === 'function', `command ${id} registered`);
  }
  const registration = (record.providers.registerInlineCompletionItemProvider || [])[0];
  check(registration, registration ? 'inline completion provider registered (proposed feature on)'
    : 'inline completion provider registered: the server did not advertise inlineCompletionProvider in its InitializeResult capabilities');
  if (registration) {
    const provider = registration[1];
    let item;
    for (let attempt = 0; attempt < 3 && !item; attempt++) {
      const result = await provider.provideInlineCompletionItems(doc, new stub.Position(2, 15), { triggerKind: 0 }, new stub.CancellationTokenSource().token);
      const items = Array.isArray(result) ? result : result && result.items;
      item = items && items[0];
    }
    check(item && typeof item.insertText === 'string' && item.insertText.length > 0, `an inline completion item came back (${JSON.stringify(item && item.insertText)})`);
    check(item && item.range && item.range.start.line === 2 && item.range.start.character === 15, 'its range starts at the cursor');
    const painted = decorations.filter((d) => d.ranges.length > 0);
    check(painted.length > 0 && painted.some((d) => d.ranges.some((r) => r.renderOptions && r.renderOptions.after && r.renderOptions.after.contentText)),
      `drafts painted as decorations (${painted.length} updates)`);
    const last = new Map();
    for (const d of decorations) last.set(d.type, d.ranges.length);
    check([...last.values()].every((n) => n === 0), 'drafts cleared once the suggestion arrived');
    check(/Last suggestion: <?\d+% likely right/.test(record.tooltip || ''),
      `the status bar tooltip shows the final draft's fillConfidence (${JSON.stringify(record.tooltip)})`);
  }
  // A trigger character of the server's completion provider (" ") typed with inline suggestions on (VS Code's
  // default): VS Code asks both providers at once. The completion item (the fallback for editors without ghost
  // text) is not asked for: the server would run the model twice and, one job per document, supersede the
  // ghost text's request (answered empty). With inline suggestions off, the item is asked for.
  const completionRegistration = (record.providers.registerCompletionItemProvider || [])[0];
  check(completionRegistration && completionRegistration.slice(2).includes(' '), 'completion provider registered with the server\'s trigger characters');
  if (registration && completionRegistration) {
    const inline = registration[1];
    const completion = completionRegistration[1];
    const at = new stub.Position(2, 15);
    const [ghost, items] = await Promise.all([
      inline.provideInlineCompletionItems(doc, at, { triggerKind: 1 }, new stub.CancellationTokenSource().token),
      completion.provideCompletionItems(doc, at, { triggerKind: 1, triggerCharacter: ' ' }, new stub.CancellationTokenSource().token),
    ]);
    const ghostItems = Array.isArray(ghost) ? ghost : ghost && ghost.items;
    const listed = Array.isArray(items) ? items : items && items.items;
    check(ghostItems && ghostItems.length > 0, `with inline suggestions on, a trigger character's ghost text is answered (${ghostItems && ghostItems.length} items)`);
    check(!listed || listed.length === 0, `...and the completion item is not asked for as well (${listed && listed.length} items)`);
    stub.__config['editor.inlineSuggest.enabled'] = false;
    let offered;
    for (let attempt = 0; attempt < 3 && !(offered && offered.length); attempt++) {
      const result = await completion.provideCompletionItems(doc, at, { triggerKind: 1, triggerCharacter: ' ' }, new stub.CancellationTokenSource().token);
      offered = Array.isArray(result) ? result : result && result.items;
    }
    check(offered && offered.length > 0 && typeof offered[0].insertText === 'string',
      `with inline suggestions off, the fill comes as a completion item (${JSON.stringify(offered && offered[0] && offered[0].insertText)})`);
    delete stub.__config['editor.inlineSuggest.enabled'];
  }
  // The embedded model follows no instruction (ready status: instructions false): "Rewrite
  // selection" runs without asking for one.
  const asked = [];
  stub.window.showInputBox = async (options) => { asked.push(options); return 'make it shorter'; };
  const applied = record.applied.length;
  record.messages.length = 0;
  const likelyBefore = /Last suggestion: \S+ likely right/.exec(record.tooltip || '');
  stub.window.activeTextEditor = { document: doc, selection: new stub.Selection(new stub.Position(1, 4), new stub.Position(1, 30)) };
  await record.commands['diffusionLsp.rewriteSelection']();
  // The rewrite's drafts end with a final draft of the selection's text and no fillConfidence (an
  // action's edit has no estimate): the last suggestion's estimate stays in the tooltip.
  if (likelyBefore) {
    check((record.tooltip || '').includes(likelyBefore[0]),
      `after a rewrite the tooltip still shows the last suggestion's estimate (${JSON.stringify(record.tooltip)})`);
  }
  check(asked.length === 0, 'rewrite selection asks for no instruction when the server takes none');
  check(!record.messages.some((m) => m[0] === 'error'), `rewrite selection ran without an error (${record.messages.map((m) => m.join(': ')).join('; ')})`);
  check(record.applied.length > applied || record.messages.some((m) => m[0] === 'info' || m[0] === 'warning'),
    `the rewrite came back as a workspace edit or a message (${record.applied.length - applied} edits)`);
  // A document the server was never given (a language not in diffusionLsp.languages, a notebook cell):
  // the commands say why instead of sending it and showing the server's "unknown document" error.
  const markdown = stub.__document(path.join(dir, 'notes.md'), 'markdown', '# Notes\n\ndef f(): ...\n');
  const cell = stub.__document(path.join(dir, 'book.ipynb'), 'python', 'def f():\n    ...\n');
  cell.uri = new stub.Uri('vscode-notebook-cell', cell.uri.path);
  for (const [other, expected] of [[markdown, /not started for markdown.*diffusionLsp\.languages/], [cell, /notebook cell/]]) {
    for (const command of ['diffusionLsp.fillHoles', 'diffusionLsp.rewriteSelection']) {
      record.messages.length = 0;
      stub.window.activeTextEditor = { document: other, selection: new stub.Selection(new stub.Position(0, 0), new stub.Position(2, 5)) };
      await record.commands[command]();
      const said = record.messages.map((m) => m.join(': ')).join('; ');
      check(record.messages.length === 1 && record.messages[0][0] === 'info' && expected.test(said),
        `${command} on a ${other.uri.scheme} ${other.languageId} document says why it does not run (${said})`);
    }
  }
  // An action's edit is for the version it was computed on. "Complete body" once as is, then again
  // with the document moved on while the server works (the user typed; the didChange is still on its
  // way, so the server computes for the old version): the second edit must not be applied.
  // (a stub body: "Complete body" writes it line by line, and the model writes no line after example.py's `return`)
  const bodyFile = path.join(dir, 'add.py');
  const bodyText = 'def add(a, b):\n    pass\n\n\nprint(add(1, 2))\n';
  fs.writeFileSync(bodyFile, bodyText);
  const bodyDoc = stub.__document(bodyFile, 'python', bodyText);
  stub.__openDocument(bodyDoc);
  stub.window.activeTextEditor = { document: bodyDoc, selection: new stub.Selection(new stub.Position(1, 6), new stub.Position(1, 6)) };
  record.messages.length = 0;
  let before = record.applied.length;
  await record.commands['diffusionLsp.completeBody']();
  const fresh = record.applied.length - before;
  check(fresh === 1, `complete body applied its edit to the document it was made for (${fresh} edits; ${record.messages.map((m) => m.join(': ')).join('; ')})`);
  record.messages.length = 0;
  before = record.applied.length;
  const running = record.commands['diffusionLsp.completeBody']();
  bodyDoc.version = 2;
  await running;
  bodyDoc.version = 1;
  check(record.applied.length === before && record.messages.some((m) => m[0] === 'warning' && /no longer applies/.test(m[1])),
    `an edit made for a version the document has moved past is not applied (${record.applied.length - before} edits; ${record.messages.map((m) => m.join(': ')).join('; ')})`);
  // The server restarted while a command runs: the command says so in words, not with the library's
  // "Pending response rejected since connection got disposed" or "Starting server failed".
  record.messages.length = 0;
  const during = [record.commands['diffusionLsp.completeBody'](), record.commands['diffusionLsp.restart']()];
  await Promise.allSettled(during);
  const told = record.messages.map((m) => m.join(': ')).join('; ');
  check(!record.messages.some((m) => m[0] === 'error') && record.messages.some((m) => /server stopped or restarted while it ran|completed/.test(m[1])),
    `a command the server restarted under says so (${told})`);
  await waitFor(300000, () => record.statusTexts[record.statusTexts.length - 1].includes('sparkle'));
  // "Restart Server" twice in a row (or two setting changes that each restart it): the second waits for
  // the first; one server runs, the commands reach it, and deactivating stops it.
  const rejected = rejections.length;
  const restarting = [record.commands['diffusionLsp.restart'](), (async () => { await sleep(50); return record.commands['diffusionLsp.restart'](); })()];
  const outcomes = await Promise.allSettled(restarting);
  check(outcomes.every((o) => o.status === 'fulfilled'), `two restarts in a row both succeed (${outcomes.map((o) => o.reason && o.reason.message).join('; ')})`);
  if (fs.existsSync('/proc/self/stat')) {
    // a restart ends only once the stopped server's process has exited: no wait here
    check(serverProcesses().length === 1, `...and leave one server running (${serverProcesses().length})`);
  }
  check(rejections.length === rejected, `...without an unhandled rejection (${rejections.slice(rejected).join('; ')})`);
  await waitFor(300000, () => record.statusTexts[record.statusTexts.length - 1].includes('sparkle'));
  if (fs.existsSync('/proc/self/stat')) {
    // A server that does not answer the shutdown (a hung one: stopped with SIGSTOP) is killed by the restart.
    const [hung] = serverProcesses();
    process.kill(hung, 'SIGSTOP');
    await record.commands['diffusionLsp.restart']();
    const left = serverProcesses();
    check(left.length === 1 && !left.includes(hung), `a restart kills a server that does not answer the shutdown (${left.length} left${left.includes(hung) ? ', the hung one among them' : ''})`);
    check(record.output.lines.some((l) => l.includes(`process ${hung}) did not exit after it was stopped: killed it`)), '...and the log says so');
    if (left.includes(hung)) process.kill(hung, 'SIGKILL');
    await waitFor(300000, () => record.statusTexts[record.statusTexts.length - 1].includes('sparkle'));
  }
  record.messages.length = 0;
  await record.commands['diffusionLsp.completeBody']();
  check(!record.messages.some((m) => /not running/.test(m[1])), `...which the commands reach (${record.messages.map((m) => m.join(': ')).join('; ')})`);
  // A suggestion made for a version the document has moved past (the user typed; the didChange is still on
  // its way) is never shown: its final draft's estimate is not the last suggestion's either.
  check(!/Last suggestion/.test(record.tooltip || ''), `a restarted server has no last suggestion yet (${JSON.stringify(record.tooltip)})`);
  {
    const registrations = record.providers.registerInlineCompletionItemProvider || [];
    const provider = registrations[registrations.length - 1][1];
    const asking = provider.provideInlineCompletionItems(doc, new stub.Position(2, 15), { triggerKind: 0 }, new stub.CancellationTokenSource().token);
    doc.version = 2;
    await asking;
    await sleep(200);
    doc.version = 1;
    check(!/Last suggestion/.test(record.tooltip || ''),
      `the final draft of a suggestion for an older version leaves the tooltip alone (${JSON.stringify(record.tooltip)})`);
  }
  // A setting changed at runtime reaches the server (workspace/didChangeConfiguration), and still holds
  // after the server died and was restarted automatically: drafts off, so no draft is painted.
  const paintedDrafts = async () => {
    const registrations = record.providers.registerInlineCompletionItemProvider || [];
    const latest = registrations[registrations.length - 1][1];
    const mark = decorations.length;
    await latest.provideInlineCompletionItems(doc, new stub.Position(2, 15), { triggerKind: 0 }, new stub.CancellationTokenSource().token);
    return decorations.slice(mark).filter((d) => d.ranges.length > 0).length;
  };
  stub.__config['diffusionLsp.drafts'] = false;
  stub.__fireConfigurationChange(['diffusionLsp.drafts']);
  await sleep(500);
  let paintedNow = await paintedDrafts();
  check(paintedNow === 0, `drafts turned off at runtime: none painted (${paintedNow})`);
  if (fs.existsSync('/proc/self/stat')) {
    for (const pid of serverProcesses()) process.kill(pid, 'SIGKILL');
    // The tooltip says "restarting it" only until the new server's status replaces it (milliseconds): the
    // log keeps the line.
    const told = await waitFor(60000, () => record.output.lines.some((l) => /The server died; restarting it/.test(l)));
    check(told, 'a server that died is restarted automatically, and the log says so');
    const back = await waitFor(300000, () => record.statusTexts[record.statusTexts.length - 1].includes('sparkle'));
    paintedNow = back ? await paintedDrafts() : -1;
    check(paintedNow === 0, `...and still off once the server died and was restarted (${paintedNow} drafts painted)`);
  }
  delete stub.__config['diffusionLsp.drafts'];
  stub.window.activeTextEditor = undefined;
  await extension.deactivate();
  if (fs.existsSync('/proc/self/stat')) {
    check(await waitFor(60000, () => serverProcesses().length === 0), `deactivating stops the server (${serverProcesses().length} left)`);
  }

  // A server that is not there: one error naming the setting, a warning in the status bar.
  record.messages.length = 0;
  stub.__config['diffusionLsp.server.path'] = path.join(dir, 'no-such-diffusion-lsp');
  await extension.activate(context());
  check(record.messages.some((m) => m[0] === 'error' && /not found/.test(m[1]) && /diffusionLsp\.server\.path/.test(m[1])), 'a missing server is reported, naming the setting');
  check(record.statusTexts[record.statusTexts.length - 1].includes('warning'), 'status bar shows the missing server');
  await extension.deactivate();

  // A server that exits at start (a broken install: a traceback on stderr, exit status 1), at a path
  // with a space: restarted a bounded number of times, then one notification, not one per attempt, and no
  // unhandled rejection (vscode-jsonrpc rethrew a failed write of the initialize request; the library's
  // first start promise was left rejected once the close handler had restarted the server). Once as it
  // starts, once after reading its input (the initialize request written, then the connection closes).
  const brokenScripts = [
    ['at once', '#!/bin/sh\necho "ImportError: no module named torch" >&2\nexit 1\n'],
    ['after reading its input', '#!/bin/sh\nhead -c 100 >/dev/null\necho "ImportError: no module named torch" >&2\nexit 1\n'],
  ];
  for (const [index, [when, script]] of brokenScripts.entries()) {
    record.messages.length = 0;
    const rejectedBefore = rejections.length;
    const broken = path.join(dir, `broken install ${index}`, 'diffusion-lsp');
    fs.mkdirSync(path.dirname(broken));
    fs.writeFileSync(broken, script, { mode: 0o755 });
    stub.__config['diffusionLsp.server.path'] = broken;
    await extension.activate(context());
    const gaveUp = await waitFor(120000, () => /not restarted again/.test(record.tooltip || ''));
    await sleep(500);
    const errors = record.messages.filter((m) => m[0] === 'error');
    check(gaveUp && record.statusTexts[record.statusTexts.length - 1].includes('error'), `a server that exits ${when} ends red, not restarted again (${JSON.stringify(record.tooltip)})`);
    check(errors.length === 1 && errors[0].includes('Restart'), `...and the user is told once, offered Restart (${errors.map((m) => m[1]).join(' | ')})`);
    check(record.output.lines.some((l) => l.includes('ImportError: no module named torch')), "...and the server's stderr is in the log");
    check(rejections.length === rejectedBefore, `...without an unhandled rejection (${rejections.slice(rejectedBefore).join('; ')})`);
    if (index === brokenScripts.length - 1) {
      // The install fixed (the setting points at a working server), "Restart Server" brings it up.
      stub.__config['diffusionLsp.server.path'] = server;
      record.messages.length = 0;
      await record.commands['diffusionLsp.restart']();
      const back = await waitFor(300000, () => record.statusTexts[record.statusTexts.length - 1].includes('sparkle'));
      check(back && record.messages.length === 0, `after the install is fixed, Restart Server brings the server up (${record.messages.map((m) => m.join(': ')).join('; ')})`);
      // A model that fails to load (a setting names a checkpoint that is not there): the server says so
      // (window/showMessage) and the status bar turns red; one notification, not a second one of the extension's.
      record.messages.length = 0;
      stub.__config['diffusionLsp.model'] = path.join(dir, 'no-such-checkpoint');
      stub.__fireConfigurationChange(['diffusionLsp.model']);
      await waitFor(120000, () => record.statusTexts[record.statusTexts.length - 1].includes('error'));
      await sleep(1000);
      const told = record.messages.filter((m) => m[0] === 'error');
      check(record.statusTexts[record.statusTexts.length - 1].includes('error') && told.length === 1 && /no-such-checkpoint/.test(told[0][1]),
        `a model that fails to load: the status bar turns red and the user is told once (${told.map((m) => m[1]).join(' | ')})`);
      delete stub.__config['diffusionLsp.model'];
    }
    await extension.deactivate();
  }

  // A server that answers initialize with an error (another program at the path, a server of an incompatible
  // version): one message, and its process does not stay running (the library cannot stop a client that is
  // starting; the process was left idle until the next restart).
  {
    record.messages.length = 0;
    const rejectedBefore = rejections.length;
    const refusing = path.join(dir, 'refusing', 'diffusion-lsp');
    fs.mkdirSync(path.dirname(refusing));
    fs.writeFileSync(refusing, [
      '#!/usr/bin/env python3',
      'import json, sys',
      'def read():',
      '    length = None',
      '    while True:',
      '        line = sys.stdin.buffer.readline()',
      '        if not line:',
      '            sys.exit(0)',
      '        if line.strip() == b"":',
      '            break',
      '        name, _, value = line.decode().partition(":")',
      '        if name.lower() == "content-length":',
      '            length = int(value)',
      '    return json.loads(sys.stdin.buffer.read(length))',
      'message = read()',
      'body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": "unsupported client"}}).encode()',
      'sys.stdout.buffer.write(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)',
      'sys.stdout.buffer.flush()',
      'while True:',
      '    read()',
      '',
    ].join('\n'), { mode: 0o755 });
    stub.__config['diffusionLsp.server.path'] = refusing;
    await extension.activate(context());
    await waitFor(60000, () => record.messages.some((m) => m[0] === 'error'));
    await sleep(500);
    const errors = record.messages.filter((m) => m[0] === 'error');
    check(errors.length === 1 && /unsupported client/.test(errors[0][1]), `a server that refuses initialize: one message saying why (${errors.map((m) => m[1]).join(' | ')})`);
    check(record.statusTexts[record.statusTexts.length - 1].includes('error'), '...the status bar shows the error');
    if (fs.existsSync('/proc/self/stat')) {
      const left = await waitFor(15000, () => serverProcesses().length === 0);
      check(left, `...and its process does not stay running (${serverProcesses().length} left)`);
    }
    check(rejections.length === rejectedBefore, `...without an unhandled rejection (${rejections.slice(rejectedBefore).join('; ')})`);
    await extension.deactivate();
  }

  // A language added to diffusionLsp.languages: package.json's onLanguage events name the default languages only, so
  // the extension also activates once VS Code has started; the server starts once a document in one of the
  // languages is open, not before.
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'package.json'), 'utf8'));
  check(manifest.activationEvents.includes('onStartupFinished'), 'the extension activates once VS Code has started (onStartupFinished), for languages added to the setting');
  stub.__config['diffusionLsp.server.path'] = server;
  stub.__config['diffusionLsp.languages'] = ['php'];
  record.contexts['diffusionLsp.active'] = undefined;
  const late = context();
  await extension.activate(late);
  if (fs.existsSync('/proc/self/stat')) {
    check(serverProcesses().length === 0, `no server is started while no document in diffusionLsp.languages is open (${serverProcesses().length} running)`);
  }
  stub.__openDocument(stub.__document(path.join(dir, 'greet.php'), 'php', '<?php\nfunction greet($name) {\n  echo $name;\n}\n'));
  const started = await waitFor(60000, () => record.contexts['diffusionLsp.active'] === true);
  check(started, 'opening a document in a language added to diffusionLsp.languages starts the server');
  await extension.deactivate();
  for (const subscription of late.subscriptions) subscription.dispose();

  if (record.missing.size > 0) console.log(`(stub members the extension asked for but the stub lacks: ${[...record.missing].join(', ')})`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

main().catch((error) => { console.log(`FAIL ${error && error.stack || error}`); console.log(`${passed} passed, ${failed + 1} failed`); process.exit(1); });
// A hang guard only: the run restarts the server four times, each loading the model; it took 117 s on a loaded machine
// and ended in "FAIL timeout" at the former 120 s under two busy loops.
setTimeout(() => { console.log('FAIL timeout'); console.log(`${passed} passed, ${failed + 1} failed`); process.exit(1); }, 600000).unref();
