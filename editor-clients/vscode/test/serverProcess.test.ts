import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { endServerProcess, hasExited, spawnServer, waitForExit } from '../src/serverProcess';

// Real processes (node itself): one that ends at the end of its input as diffusion-lsp does, and one
// that does not (a hung server).
const endsAtEof = ['-e', "process.stdin.resume(); process.stdin.on('end', () => process.exit(0));"];
const ignoresEof = ['-e', "process.stdin.resume(); process.stdin.on('end', () => {}); setInterval(() => {}, 1000);"];

describe('spawnServer', () => {
  it('resolves with the running process, its stdio piped', async () => {
    const child = await spawnServer(process.execPath, endsAtEof, os.tmpdir());
    assert.ok(child.pid && child.stdin && child.stdout && child.stderr);
    assert.equal(await endServerProcess(child, 60000), 'exited');
  });

  it('rejects, naming the command, when it cannot start', async () => {
    const missing = path.join(os.tmpdir(), 'no-such-diffusion-lsp');
    await assert.rejects(spawnServer(missing, [], undefined), /no-such-diffusion-lsp failed: .*ENOENT/);
    const notExecutable = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'diffusion-spawn-')), 'diffusion-lsp');
    fs.writeFileSync(notExecutable, '#!/bin/sh\n', { mode: 0o644 });
    await assert.rejects(spawnServer(notExecutable, [], undefined), /EACCES/);
  });
});

describe('endServerProcess', () => {
  it('lets a server that ends at the end of its input exit by itself', async () => {
    const child = await spawnServer(process.execPath, endsAtEof, undefined);
    assert.equal(await endServerProcess(child, 60000), 'exited');
    assert.equal(child.exitCode, 0);
  });

  it('kills a server that does not exit within the grace period (a stop that gave up left it running)', async () => {
    const child = await spawnServer(process.execPath, ignoresEof, undefined);
    assert.equal(await endServerProcess(child, 200), 'killed');
    assert.ok(hasExited(child));
    assert.equal(child.signalCode, 'SIGKILL');
  });

  it('kills a stopped (SIGSTOP) server, which cannot read anything', async () => {
    const child = await spawnServer(process.execPath, endsAtEof, undefined);
    process.kill(child.pid!, 'SIGSTOP');
    assert.equal(await endServerProcess(child, 200), 'killed');
  });

  it('is done at once for a server that has exited already', async () => {
    const child = await spawnServer(process.execPath, ['-e', 'process.exit(3)'], undefined);
    assert.ok(await waitForExit(child, 60000));
    assert.equal(await endServerProcess(child, 60000), 'exited');
    assert.equal(child.exitCode, 3);
  });
});
