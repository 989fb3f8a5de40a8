// Starts the server process and makes sure a stopped server's process ends. vscode-languageclient's
// stop() gives up on a server that does not answer `shutdown` within its timeout, or answers it with
// an error: it then sends no `exit` and leaves the process running with its input open. Its own
// fallback (kill the process 2 s later) runs a script next to its sources, which the bundle does not
// ship. So the extension starts the process itself and ends it after every stop.

import { ChildProcess, spawn } from 'child_process';

/** Starts `command args` with pipes for stdio; resolves once it runs, rejects with why it could not start. */
export function spawnServer(command: string, args: string[], cwd: string | undefined): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd });
  return new Promise((resolve, reject) => {
    child.once('spawn', () => resolve(child));
    // kept for good: a later 'error' (a failed kill) with no listener would end the extension host
    child.on('error', (error) => reject(new Error(`Launching server using command ${command} failed: ${error.message}`)));
  });
}

/** Whether `child` has exited (and Node has seen it). */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Resolves with whether `child` exited within `ms` milliseconds. */
export function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (hasExited(child)) {
    return Promise.resolve(true);
  }
  return new Promise((resolve) => {
    const done = (exited: boolean) => {
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve(exited);
    };
    const onExit = () => done(true);
    const timer = setTimeout(() => done(hasExited(child)), ms);
    child.on('exit', onExit);
  });
}

export type Ending = 'exited' | 'killed' | 'still running';

/**
 * Ends a server process once its client has stopped (or failed to): closes its input (the server ends
 * its session at the end of its input; after a completed stop it has `exit` and exits anyway), waits
 * up to `graceMs` for it to exit, then kills it (SIGKILL) and waits for that. 'still running' only if
 * even the kill has not ended it within `graceMs`.
 */
export async function endServerProcess(child: ChildProcess, graceMs: number): Promise<Ending> {
  if (child.stdin && !child.stdin.destroyed) {
    child.stdin.on('error', () => undefined); // EPIPE from a process that is gone already
    child.stdin.end();
  }
  if (await waitForExit(child, graceMs)) {
    return 'exited';
  }
  child.kill('SIGKILL');
  return (await waitForExit(child, graceMs)) ? 'killed' : 'still running';
}
