// The extension in a real VS Code: code-server (VS Code's own workbench, served to a browser)
// with the packaged .vsix installed, driven by headless Chromium through playwright-core, against
// the real diffusion-lsp. It opens a Python file from the Explorer and waits for the status bar to
// show the model ready; on the empty line of a `for` body asks for a suggestion (the command
// "Trigger Inline Suggestion"), waits for the ghost text, presses Tab, saves and checks the file
// on disk (the block fill where it was shown, no stray empty line after it, the cursor at its
// end); then opens a new line, types a character, waits for ghost text, presses Tab and checks
// the file again; then kills the server and checks the red status, the automatic restart, and a
// fill from the restarted server on text typed after it; then types trigger characters of the
// server's completion provider and checks the server is asked for ghost text only. Writes a
// screenshot of the ghost text after typing.
//
//   node e2e/code-server.js --code-server BIN --chromium BIN --playwright DIR --vsix FILE \
//        --server DIFFUSION_LSP [--screenshot out.png]
//
// Prints "ok ..." / "FAIL ..." lines and "N passed, N failed"; exits non-zero on a failure.
// Only 127.0.0.1 is used. No timing assertions: every wait is for a condition, with a generous
// limit (the machine may be loaded).

'use strict';
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');

function args() {
  const out = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    out[argv[i].replace(/^--/, '')] = argv[i + 1];
  }
  for (const key of ['code-server', 'chromium', 'playwright', 'vsix', 'server']) {
    if (!out[key]) {
      throw new Error(`missing --${key}`);
    }
  }
  return out;
}

const SOURCE = [
  '"""Word statistics."""',
  '',
  '',
  'def word_count(text):',
  '    """Return how often each word occurs in text."""',
  '    counts = {}',
  '    for word in text.split():',
  '        ',
  '    return counts',
  '',
];
const ROW = 7; // 0-based: the empty line of the for body (8 spaces)

let passed = 0;
let failed = 0;
function ok(name) {
  passed += 1;
  console.log(`ok   ${name}`);
}
function fail(name, error) {
  failed += 1;
  console.log(`FAIL ${name}\n     ${error && error.stack ? error.stack.split('\n').slice(0, 3).join('\n     ') : error}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function waitFor(what, ms, cond) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await cond();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main() {
  const opt = args();
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'diffusion-code-server-'));
  const userData = path.join(scratch, 'user-data');
  const extensions = path.join(scratch, 'extensions');
  const workspace = path.join(scratch, 'workspace');
  const logFile = path.join(scratch, 'diffusion-lsp.log');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.mkdirSync(workspace, { recursive: true });
  const file = path.join(workspace, 'word_count.py');
  fs.writeFileSync(file, SOURCE.join('\n'));
  fs.writeFileSync(
    path.join(userData, 'User', 'settings.json'),
    JSON.stringify(
      {
        // -vv: the log names every request the server receives (the trigger-character check reads it).
        'diffusionLsp.server.args': ['--log-file', logFile, '-vv'],
        // The embedded model is small: without validation it always proposes something.
        'diffusionLsp.validate': false,
        // The test checks the client, not the model's precision: withhold no fill.
        'diffusionLsp.minConfidence': 0,
        'diffusionLsp.threads': 1,
        'editor.inlineSuggest.enabled': true,
        'editor.quickSuggestions': { other: false, comments: false, strings: false },
        // VS Code's default: a trigger character of a completion provider asks it for items.
        'editor.suggestOnTriggerCharacters': true,
        'editor.fontSize': 15,
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'workbench.colorTheme': 'Default Dark Modern',
        'security.workspace.trust.enabled': false,
        'telemetry.telemetryLevel': 'off',
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'extensions.ignoreRecommendations': true,
        'update.mode': 'none',
        'chat.commandCenter.enabled': false,
        'files.autoSave': 'off',
      },
      null,
      2,
    ),
  );

  // No diffusionLsp.server.path: the extension finds the server as it does after the README's
  // set-up, through the ~/.local/bin/diffusion-lsp link scripts/setup.sh makes (a scratch HOME
  // here, and a PATH without diffusion-lsp on it).
  const home = path.join(scratch, 'home');
  fs.mkdirSync(path.join(home, '.local', 'bin'), { recursive: true });
  fs.symlinkSync(path.resolve(opt.server), path.join(home, '.local', 'bin', 'diffusion-lsp'));
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    PATH: [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin']
      .filter((dir) => !fs.existsSync(path.join(dir, 'diffusion-lsp')))
      .join(':'),
  };
  const version = spawnSync(opt['code-server'], ['--version'], { encoding: 'utf8', env });
  console.log(`code-server ${version.stdout.trim().split('\n').join(' ')}`);
  const install = spawnSync(
    opt['code-server'],
    ['--extensions-dir', extensions, '--user-data-dir', userData, '--install-extension', path.resolve(opt.vsix)],
    { encoding: 'utf8', env },
  );
  if (install.status !== 0) {
    fail('the .vsix installs into code-server', install.stdout + install.stderr);
    return;
  }
  ok('the .vsix installs into code-server (code-server --install-extension)');

  const port = await freePort();
  const server = spawn(
    opt['code-server'],
    [
      '--auth', 'none',
      '--bind-addr', `127.0.0.1:${port}`,
      '--user-data-dir', userData,
      '--extensions-dir', extensions,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      workspace,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env },
  );
  let serverLog = '';
  server.stdout.on('data', (d) => (serverLog += d));
  server.stderr.on('data', (d) => (serverLog += d));

  const { chromium } = require(require.resolve('playwright-core', { paths: [opt.playwright] }));
  const browser = await chromium.launch({
    executablePath: opt.chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  let page;
  try {
    page = await browser.newPage({ viewport: { width: 1100, height: 620 } });
    await waitFor('code-server to listen', 120000, async () => {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        return res.ok;
      } catch {
        return false;
      }
    });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector('.monaco-workbench', { timeout: 180000 });
    ok('the VS Code workbench loads in Chromium');

    // Open the file from the Explorer.
    const entry = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'word_count.py' });
    await entry.first().waitFor({ timeout: 120000 });
    await entry.first().click();
    await page.waitForSelector('.editor-instance .monaco-editor .view-lines', { timeout: 60000 });

    // The status bar shows the model: "Diffusion" with the ready icon.
    const statusItem = '.statusbar-item:has(.codicon-sparkle)';
    await waitFor('the Diffusion status bar item to say ready', 240000, async () => {
      const items = await page.$$(statusItem);
      for (const item of items) {
        if ((await item.innerText()).includes('Diffusion')) {
          return true;
        }
      }
      return false;
    });
    ok('the extension finds diffusion-lsp (~/.local/bin, as setup.sh links it), starts it, and the status bar shows the model ready');

    const readGhost = async () => {
      // The first line's ghost text is a run of inline decorations; further lines are a view zone.
      const text = await page.evaluate(() => {
        const editor = document.querySelector('.editor-instance .monaco-editor');
        if (!editor) {
          return '';
        }
        const first = [...editor.querySelectorAll('.ghost-text-decoration')].map((el) => el.textContent || '').join('');
        const rest = [...editor.querySelectorAll('.ghost-text .view-line')].map((el) => el.textContent || '');
        return [first, ...rest].join('\n');
      });
      const clean = text.replace(/\u00a0/g, ' ');
      return clean.trim() !== '' ? clean : null;
    };
    // Asks for a suggestion: the command "Trigger Inline Suggestion" from the command palette.
    const trigger = async () => {
      await page.keyboard.press('F1');
      await page.waitForSelector('.quick-input-widget input', { timeout: 30000 });
      await page.keyboard.type('Trigger Inline Suggestion');
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Trigger Inline Suggestion' }).first()
        .waitFor({ timeout: 30000 });
      await page.keyboard.press('Enter');
    };
    // Ghost text that stays: the same text read twice, a second apart. A read once caught, for a moment, the ghost
    // text of the empty line a keystroke had just left (CI, under load): VS Code took it away, and Tab then
    // inserted indentation, not a suggestion.
    const readSteadyGhost = async () => {
      const first = await readGhost();
      if (first === null) {
        return null;
      }
      await new Promise((r) => setTimeout(r, 1000));
      return (await readGhost()) === first ? first : null;
    };
    // Ghost text from the server; asks again when a try brings nothing.
    const waitForGhost = async (what) => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await waitFor(what, 45000, readSteadyGhost);
        } catch (error) {
          if (attempt === 3) {
            throw error;
          }
          await trigger();
        }
      }
    };
    const save = async (previous) => {
      await page.keyboard.press('Control+S');
      return waitFor('the file to be saved', 30000, () => {
        const text = fs.readFileSync(file, 'utf8');
        return text !== previous ? text : null;
      });
    };
    const cursorColumn = () =>
      page.evaluate(() => {
        const el = document.querySelector('.statusbar-item[id$="status.editor.selection"]');
        return el ? el.textContent : null;
      });
    const check = async (name, fn) => {
      try {
        ok(`${name}${(await fn()) || ''}`);
      } catch (error) {
        fail(name, error);
      }
    };
    const goTo = async (line, column) => {
      await page.keyboard.press('Control+G');
      await page.waitForSelector('.quick-input-widget input', { timeout: 30000 });
      await page.keyboard.type(`${line}:${column}`);
      await page.keyboard.press('Enter');
      await waitFor(`the cursor at ${line}:${column}`, 30000, async () =>
        ((await cursorColumn()) || '').includes(`Ln ${line}, Col ${column}`),
      );
    };

    // 1. A block body: on the empty line of the for body (8 spaces), ask; Tab accepts.
    await page.click('.editor-instance .monaco-editor .view-lines');
    await goTo(ROW + 1, 9);
    await trigger();
    const block = await waitForGhost('ghost text for the block body');
    ok(`asked on the empty line of a for body, ghost text from diffusion-lsp: ${JSON.stringify(block)}`);
    await page.keyboard.press('Tab');
    let saved = await save(SOURCE.join('\n'));
    let lines = saved.split('\n');
    const blockLines = block.split('\n');
    await check('Tab inserts the block fill where it was shown', () => {
      const expected = '        ' + blockLines[0].trimEnd();
      if (!lines[ROW].startsWith(expected)) {
        throw new Error(`line ${ROW + 1} is ${JSON.stringify(lines[ROW])}, expected ${JSON.stringify(expected)}`);
      }
      return `: ${JSON.stringify(lines[ROW])}`;
    });
    const after = lines.indexOf('    return counts');
    await check('the block fill leaves no stray empty line before the code after it', () => {
      if (after < 0 || lines[after - 1].trim() === '') {
        throw new Error(`lines ${ROW + 1}..: ${JSON.stringify(lines.slice(ROW, after + 1))}`);
      }
    });
    await check('the cursor ends at the end of the inserted text', async () => {
      const position = await cursorColumn();
      const last = blockLines[blockLines.length - 1].trimEnd();
      const column = (blockLines.length === 1 ? 8 : 0) + last.length + 1;
      const expected = `Ln ${ROW + blockLines.length}, Col ${column}`;
      if (position !== expected) {
        throw new Error(`status bar says ${JSON.stringify(position)}, expected ${JSON.stringify(expected)}`);
      }
      return ` (${position})`;
    });

    // 2. Typing: a new line in the body, a character typed, ghost text, Tab.
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    await page.keyboard.type('t');
    const typedRow = after; // the new line, 0-based, sits where "return counts" was
    const ghost = await waitForGhost('ghost text after typing');
    ok(`typing shows ghost text from diffusion-lsp: ${JSON.stringify(ghost)}`);
    if (opt.screenshot) {
      await page.screenshot({ path: opt.screenshot });
      console.log(`     screenshot: ${opt.screenshot}`);
    }
    await page.keyboard.press('Tab');
    saved = await save(saved);
    lines = saved.split('\n');
    await check('Tab inserts the ghost text after the typed character', () => {
      const line = lines[typedRow];
      const typed = line.indexOf('t');
      if (typed < 0 || !line.slice(typed + 1).startsWith(ghost.split('\n')[0].trimEnd())) {
        throw new Error(`line ${typedRow + 1} is ${JSON.stringify(line)}, the ghost text showed ${JSON.stringify(ghost)}`);
      }
      if (!lines.includes('    return counts')) {
        throw new Error('the code after it is gone');
      }
      return `: ${JSON.stringify(line)}`;
    });

    // 3. The server dies (kill -9 of the diffusion-lsp process this run started, found by its
    // unique log-file argument): the status bar turns red, the extension restarts it, the new
    // server gets the document as it is now and fills it.
    // Read from /proc (each process's command line, whole), polled: one `ps` listing once came back without the
    // server while another test suite ran beside this one, though the server answered the next request.
    const pids = () => {
      const found = [];
      for (const name of fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
        try {
          const argv = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
          if (argv.includes(logFile) && Number(name) !== process.pid) {
            found.push(Number(name));
          }
        } catch (error) {
          // the process ended while the listing was read
        }
      }
      return found;
    };
    const before = await waitFor('the diffusion-lsp process', 30000, () => (pids().length ? pids() : null))
      .catch(() => []);
    await check('the diffusion-lsp process is found', () => {
      if (before.length === 0) {
        throw new Error('no process with ' + logFile);
      }
      return ` (pid ${before.join(', ')})`;
    });
    if (before.length > 0) {
      await page.keyboard.press('Escape');
      for (const pid of before) {
        process.kill(pid, 'SIGKILL');
      }
      await check('a killed server is shown as failed in the status bar', async () => {
        await waitFor('the red status', 60000, async () => (await page.$('.statusbar-item:has(.codicon-error)')) !== null);
      });
      await check('the extension restarts it and the status bar shows it ready again', async () => {
        await waitFor('a new server', 120000, () => pids().some((pid) => !before.includes(pid)));
        await waitFor('ready again', 240000, async () => (await page.$(statusItem)) !== null);
      });
      // An edit after the restart: a new line, typed, ghost text, Tab, saved.
      await page.keyboard.press('End');
      await page.keyboard.press('Enter');
      await page.keyboard.type('n');
      const afterRestart = await waitForGhost('ghost text from the restarted server');
      ok(`the restarted server fills the current text: ${JSON.stringify(afterRestart)}`);
      await page.keyboard.press('Tab');
      saved = await save(saved);
      lines = saved.split('\n');
      await check('Tab inserts it on the new line', () => {
        const line = lines[typedRow + 1];
        if (!line || !line.trimStart().startsWith('n' + afterRestart.split('\n')[0].trimEnd())) {
          throw new Error(`line ${typedRow + 2} is ${JSON.stringify(line)}`);
        }
        return `: ${JSON.stringify(line)}`;
      });
    }

    // 4. Trigger characters of the server's completion provider ("=", " ") typed with inline suggestions
    // on: VS Code asks for ghost text, and the extension does not ask for the completion item too
    // (the fallback for editors without ghost text): a second fill of the same position would run the
    // model twice and, one job per document, supersede the ghost text's fill (answered empty).
    const received = (method) =>
      fs.existsSync(logFile)
        ? fs.readFileSync(logFile, 'utf8').split('\n').filter((line) => line.includes(`Request '${method}' received`)).length
        : 0;
    await page.keyboard.press('Escape');
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    const inlineBefore = received('textDocument/inlineCompletion');
    const completionBefore = received('textDocument/completion');
    await page.keyboard.type('total = ');
    const afterTrigger = await waitForGhost('ghost text after typing a trigger character');
    ok(`typing a trigger character shows ghost text from diffusion-lsp: ${JSON.stringify(afterTrigger)}`);
    await check('typing a trigger character asks the server for ghost text only, not for a completion item too', () => {
      const inline = received('textDocument/inlineCompletion') - inlineBefore;
      const completion = received('textDocument/completion') - completionBefore;
      if (inline < 1 || completion !== 0) {
        throw new Error(`${inline} inlineCompletion and ${completion} completion requests after typing "total = "`);
      }
      return ` (${inline} inlineCompletion, ${completion} completion)`;
    });
    await page.keyboard.press('Escape');
  } catch (error) {
    fail('the run', error);
    if (page && opt.screenshot) {
      await page.screenshot({ path: opt.screenshot.replace(/\.png$/, '') + '-failure.png' }).catch(() => {});
    }
  } finally {
    await browser.close();
    try {
      process.kill(-server.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    if (failed > 0) {
      console.log('--- code-server output (tail)\n' + serverLog.slice(-3000));
      if (fs.existsSync(logFile)) {
        console.log('--- diffusion-lsp log (tail)\n' + fs.readFileSync(logFile, 'utf8').slice(-3000));
      }
    }
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

main()
  .catch((error) => fail('the run', error))
  .finally(() => {
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(failed > 0 ? 1 : 0);
  });
