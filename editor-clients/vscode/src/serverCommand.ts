// Finds the `diffusion-lsp` executable the extension should start, and words the message
// shown when it is missing. Pure: the file system and environment are passed in.

import * as path from 'path';

export interface LookupEnvironment {
  platform: NodeJS.Platform;
  /** The PATH variable as the extension host sees it. */
  pathVariable: string | undefined;
  /** Workspace folder paths, first one first. */
  workspaceFolders: readonly string[];
  /** True when `file` exists and is a file (executability is left to the spawn). */
  isFile: (file: string) => boolean;
  /** The user's home directory: `~/.local/bin` is where scripts/setup.sh links the server. */
  homeDir?: string;
}

export interface Resolution {
  /** Absolute path to run, or undefined when nothing was found. */
  command: string | undefined;
  /** Every place looked at, in order, for the "not installed" message. */
  searched: string[];
}

function pathApi(platform: NodeJS.Platform): path.PlatformPath {
  return platform === 'win32' ? path.win32 : path.posix;
}

function executableNames(name: string, platform: NodeJS.Platform): string[] {
  if (platform !== 'win32' || path.win32.extname(name) !== '') {
    return [name];
  }
  return [name + '.exe', name + '.cmd', name];
}

/**
 * Resolves the configured server command:
 * - a path with a directory part is used as is (relative paths against the first workspace folder,
 *   `~/` against the home directory);
 * - a bare name is looked up on PATH, then in the workspace's `.venv` / `venv`, then in
 *   `~/.local/bin` (where scripts/setup.sh links it; VS Code started from a desktop menu may not
 *   have that directory on its PATH).
 */
export function resolveServerCommand(configured: string, env: LookupEnvironment): Resolution {
  const p = pathApi(env.platform);
  const name = configured.trim() === '' ? 'diffusion-lsp' : configured.trim();
  const searched: string[] = [];
  const tryFile = (file: string): string | undefined => {
    searched.push(file);
    return env.isFile(file) ? file : undefined;
  };

  const hasDirectory = name.includes('/') || (env.platform === 'win32' && name.includes('\\'));
  if (hasDirectory) {
    const base = env.workspaceFolders[0];
    // `~/...` is the user's home, as in a shell (nothing between VS Code and the spawn expands it).
    const home = /^~(?=[/\\])/.test(name) && env.homeDir !== undefined ? p.join(env.homeDir, name.slice(2)) : undefined;
    const absolute = home ?? (p.isAbsolute(name) || base === undefined ? name : p.resolve(base, name));
    for (const candidate of executableNames(absolute, env.platform)) {
      const found = tryFile(candidate);
      if (found) {
        return { command: found, searched };
      }
    }
    return { command: undefined, searched };
  }

  const separator = env.platform === 'win32' ? ';' : ':';
  const pathDirs = (env.pathVariable ?? '').split(separator).filter((dir) => dir !== '');
  const binDir = env.platform === 'win32' ? 'Scripts' : 'bin';
  const venvDirs = env.workspaceFolders.flatMap((folder) => [
    p.join(folder, '.venv', binDir),
    p.join(folder, 'venv', binDir),
  ]);
  const userDirs = env.homeDir && env.platform !== 'win32' ? [p.join(env.homeDir, '.local', 'bin')] : [];
  const dirs = [...pathDirs, ...venvDirs, ...userDirs].filter((dir, index, all) => all.indexOf(dir) === index);
  for (const dir of dirs) {
    for (const file of executableNames(name, env.platform)) {
      const found = tryFile(p.join(dir, file));
      if (found) {
        return { command: found, searched };
      }
    }
  }
  return { command: undefined, searched };
}

/** The error shown when the server cannot be found; names the setting to change. */
export function notInstalledMessage(configured: string): string {
  const name = configured.trim() === '' ? 'diffusion-lsp' : configured.trim();
  return (
    `Diffusion LSP: the language server "${name}" was not found on PATH, in the ` +
    `workspace's .venv or in ~/.local/bin. Run scripts/setup.sh in a checkout of diffusion-lsp ` +
    `(it links ~/.local/bin/diffusion-lsp), or set "diffusionLsp.server.path" to the executable.`
  );
}
