import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { LookupEnvironment, notInstalledMessage, resolveServerCommand } from '../src/serverCommand';

function env(files: string[], overrides: Partial<LookupEnvironment> = {}): LookupEnvironment {
  const present = new Set(files);
  return {
    platform: 'linux',
    pathVariable: '/usr/local/bin:/usr/bin',
    workspaceFolders: ['/home/me/project'],
    isFile: (file) => present.has(file),
    ...overrides,
  };
}

describe('resolveServerCommand', () => {
  it('finds a bare name on PATH, first directory first', () => {
    const found = resolveServerCommand('diffusion-lsp', env(['/usr/bin/diffusion-lsp', '/usr/local/bin/diffusion-lsp']));
    assert.equal(found.command, '/usr/local/bin/diffusion-lsp');
  });

  it('expands ~/ in a configured path to the home directory, as a shell would', () => {
    const found = resolveServerCommand('~/.local/bin/diffusion-lsp', env(['/home/me/.local/bin/diffusion-lsp'], { homeDir: '/home/me' }));
    assert.equal(found.command, '/home/me/.local/bin/diffusion-lsp');
    assert.equal(
      resolveServerCommand('~\\bin\\diffusion-lsp.exe', env(['C:\\Users\\me\\bin\\diffusion-lsp.exe'], { platform: 'win32', homeDir: 'C:\\Users\\me' })).command,
      'C:\\Users\\me\\bin\\diffusion-lsp.exe',
    );
    // Only a leading ~ followed by a separator: "~user/..." and a "~" inside the path are left alone.
    assert.deepEqual(resolveServerCommand('tools/~/diffusion-lsp', env([], { homeDir: '/home/me' })).searched, ['/home/me/project/tools/~/diffusion-lsp']);
  });

  it('falls back to the workspace virtual environment', () => {
    const found = resolveServerCommand('diffusion-lsp', env(['/home/me/project/.venv/bin/diffusion-lsp']));
    assert.equal(found.command, '/home/me/project/.venv/bin/diffusion-lsp');
  });

  it("finds the link scripts/setup.sh makes in ~/.local/bin when that is not on VS Code's PATH", () => {
    const found = resolveServerCommand('diffusion-lsp', env(['/home/me/.local/bin/diffusion-lsp'], { homeDir: '/home/me' }));
    assert.equal(found.command, '/home/me/.local/bin/diffusion-lsp');
    assert.deepEqual(
      resolveServerCommand('diffusion-lsp', env([], { homeDir: '/home/me', pathVariable: '/home/me/.local/bin' })).searched,
      [
        '/home/me/.local/bin/diffusion-lsp',
        '/home/me/project/.venv/bin/diffusion-lsp',
        '/home/me/project/venv/bin/diffusion-lsp',
      ],
      'looked at once',
    );
  });

  it('treats an empty setting as the default name', () => {
    assert.equal(resolveServerCommand('  ', env(['/usr/bin/diffusion-lsp'])).command, '/usr/bin/diffusion-lsp');
  });

  it('resolves a relative path against the first workspace folder', () => {
    const found = resolveServerCommand('tools/diffusion-lsp', env(['/home/me/project/tools/diffusion-lsp']));
    assert.equal(found.command, '/home/me/project/tools/diffusion-lsp');
  });

  it('uses an absolute path as is and does not search PATH for it', () => {
    const found = resolveServerCommand('/opt/dl/bin/diffusion-lsp', env(['/usr/bin/diffusion-lsp']));
    assert.equal(found.command, undefined);
    assert.deepEqual(found.searched, ['/opt/dl/bin/diffusion-lsp']);
  });

  it('reports every place it looked when nothing is found', () => {
    const found = resolveServerCommand('diffusion-lsp', env([]));
    assert.equal(found.command, undefined);
    assert.deepEqual(found.searched, [
      '/usr/local/bin/diffusion-lsp',
      '/usr/bin/diffusion-lsp',
      '/home/me/project/.venv/bin/diffusion-lsp',
      '/home/me/project/venv/bin/diffusion-lsp',
    ]);
  });

  it('handles a missing PATH and no workspace', () => {
    const found = resolveServerCommand('diffusion-lsp', env([], { pathVariable: undefined, workspaceFolders: [] }));
    assert.deepEqual(found, { command: undefined, searched: [] });
  });

  it('tries Windows executable suffixes and Scripts folders', () => {
    const windows = env(['C:\\proj\\.venv\\Scripts\\diffusion-lsp.exe'], {
      platform: 'win32',
      pathVariable: 'C:\\Windows',
      workspaceFolders: ['C:\\proj'],
    });
    assert.equal(resolveServerCommand('diffusion-lsp', windows).command, 'C:\\proj\\.venv\\Scripts\\diffusion-lsp.exe');
  });
});

describe('notInstalledMessage', () => {
  it('names the command and the setting to change', () => {
    const message = notInstalledMessage('my-lsp');
    assert.match(message, /"my-lsp" was not found/);
    assert.match(message, /diffusionLsp\.server\.path/);
  });
});
