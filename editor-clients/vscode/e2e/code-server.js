// The extension in a real VS Code: code-server (VS Code's own workbench, served to a browser)
// with the packaged .vsix installed, driven by headless Chromium through playwright-core, against
// the real diffusion-lsp. It opens a Python file, waits for the model, types on the empty line of
// a `for` body, waits for ghost text from diffusion-lsp, presses Tab, saves, and checks the file
// on disk: the ghost text was inserted where it was shown, with no stray empty line, and the
// status bar showed the model state. Writes a screenshot of the ghost text.
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
        'diffusionLsp.server.path': opt.server,
        'diffusionLsp.server.args': ['--log-file', logFile],
        // The embedded model is small: without validation it always proposes something.
        'diffusionLsp.validate': false,
        'diffusionLsp.threads': 1,
        'editor.inlineSuggest.enabled': true,
        'editor.quickSuggestions': { other: false, comments: false, strings: false },
        'editor.suggestOnTriggerCharacters': false,
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

  const version = spawnSync(opt['code-server'], ['--version'], { encoding: 'utf8' });
  console.log(`code-server ${version.stdout.trim().split('\n').join(' ')}`);
  const install = spawnSync(
    opt['code-server'],
    ['--extensions-dir', extensions, '--user-data-dir', userData, '--install-extension', path.resolve(opt.vsix)],
    { encoding: 'utf8' },
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
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
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
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 620 } });
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

    // Open the file with Quick Open.
    await page.waitForSelector('.part.editor', { timeout: 120000 });
    await page.keyboard.press('Control+P');
    await page.waitForSelector('.quick-input-widget input', { timeout: 60000 });
    await page.keyboard.type('word_count.py');
    await page.waitForTimeout(500); // let Quick Open filter (no assertion depends on it)
    await page.keyboard.press('Enter');
    await page.waitForSelector('.monaco-editor .view-lines', { timeout: 60000 });

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
    ok('the extension starts diffusion-lsp and the status bar shows the model ready');

    // Go to the empty line of the for body, at its end, and type a character.
    await page.click('.monaco-editor .view-lines');
    await page.keyboard.press('Control+G');
    await page.waitForSelector('.quick-input-widget input', { timeout: 30000 });
    await page.keyboard.type(`${ROW + 1}:9`);
    await page.keyboard.press('Enter');
    await page.waitForTimeout(300);
    await page.keyboard.type('c');
    // Ghost text from the server (an automatic request after typing; Alt+\ asks again if needed).
    let ghost;
    for (let attempt = 0; attempt < 4 && !ghost; attempt++) {
      if (attempt > 0) {
        await page.keyboard.press('Alt+Backslash');
      }
      try {
        ghost = await waitFor('ghost text', 45000, async () => {
          const text = await page.evaluate(() => {
            const parts = [...document.querySelectorAll('.monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text')]
              .map((el) => el.textContent || '');
            return parts.join('\n');
          });
          return text.replace(/\u00a0/g, ' ').trim() !== '' ? text.replace(/\u00a0/g, ' ') : null;
        });
      } catch (error) {
        if (attempt === 3) {
          throw error;
        }
      }
    }
    ok(`ghost text from diffusion-lsp appears after typing: ${JSON.stringify(ghost)}`);
    if (opt.screenshot) {
      await page.screenshot({ path: opt.screenshot });
      console.log(`     screenshot: ${opt.screenshot}`);
    }

    // Tab accepts it; save and read the document from disk.
    await page.keyboard.press('Tab');
    await page.waitForTimeout(300);
    await page.keyboard.press('Control+S');
    const saved = await waitFor('the file to be saved', 30000, () => {
      const text = fs.readFileSync(file, 'utf8');
      return text !== SOURCE.join('\n') ? text : null;
    });
    const lines = saved.split('\n');
    const firstGhostLine = ghost.split('\n')[0];
    try {
      if (!lines[ROW].startsWith('        c')) {
        throw new Error(`line ${ROW + 1} is ${JSON.stringify(lines[ROW])}`);
      }
      const inserted = lines[ROW].slice('        c'.length);
      if (firstGhostLine.trim() !== '' && !inserted.startsWith(firstGhostLine.trimEnd())) {
        throw new Error(`inserted ${JSON.stringify(inserted)}, the ghost text showed ${JSON.stringify(firstGhostLine)}`);
      }
      ok(`Tab inserts the ghost text where it was shown: ${JSON.stringify(lines[ROW])}`);
    } catch (error) {
      fail('Tab inserts the ghost text where it was shown', error);
    }
    try {
      const next = lines.indexOf('    return counts');
      if (next < 0 || lines[next - 1].trim() === '') {
        throw new Error(`a stray empty line before "return counts": ${JSON.stringify(lines.slice(ROW, next + 1))}`);
      }
      ok('the accepted fill leaves no stray empty line');
    } catch (error) {
      fail('the accepted fill leaves no stray empty line', error);
    }
    try {
      const position = await page.evaluate(() => {
        const el = document.querySelector('.statusbar-item[id$="status.editor.selection"]');
        return el ? el.textContent : null;
      });
      const expectCol = lines[lines.indexOf('    return counts') - 1].length + 1;
      if (position && !position.includes(`Col ${expectCol}`)) {
        throw new Error(`status bar says ${position}, expected column ${expectCol}`);
      }
      ok(`the cursor ends at the end of the inserted text (${position || 'position item not found'})`);
    } catch (error) {
      fail('the cursor ends at the end of the inserted text', error);
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
