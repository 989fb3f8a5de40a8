// When the server process dies: restart it, a bounded number of times. Pure: the clock is
// passed in. The language client re-opens every open document in a restarted server (didOpen
// with the current text), so a restart also re-syncs them.

export interface RestartDecision {
  restart: boolean;
  /** This restart's number (1-based) when `restart`, else the attempts made. */
  attempt: number;
  max: number;
  /** One line for the status bar and the log. */
  message: string;
}

export class RestartPolicy {
  private crashes: number[] = [];

  /**
   * @param max restarts allowed within `windowMs` (0: never restart)
   * @param windowMs crashes older than this no longer count
   */
  constructor(
    readonly max = 3,
    readonly windowMs = 3 * 60 * 1000,
  ) {}

  /** The server died at `now` (ms). */
  died(now: number): RestartDecision {
    this.crashes = this.crashes.filter((t) => now - t < this.windowMs);
    if (this.crashes.length >= this.max) {
      return {
        restart: false,
        attempt: this.crashes.length,
        max: this.max,
        message:
          this.max === 0
            ? 'The server died; it is not restarted automatically (run "Diffusion: Restart Server").'
            : `The server died ${this.max + 1} times in ${Math.round(this.windowMs / 60000)} minutes; ` +
              'it is not restarted again (run "Diffusion: Restart Server", see the log).',
      };
    }
    this.crashes.push(now);
    const attempt = this.crashes.length;
    return {
      restart: true,
      attempt,
      max: this.max,
      message: `The server died; restarting it (attempt ${attempt} of ${this.max}).`,
    };
  }

  /** A restart the user asked for starts a new series. */
  reset(): void {
    this.crashes = [];
  }
}

/**
 * vscode-jsonrpc's codes for a connection that is gone (MessageWriteError, MessageReadError,
 * PendingResponseRejected, ConnectionInactive): a server that exits while it starts fails the start
 * with one of them, and the client's close handler then decides (restart, or give up and say so once).
 */
const CONNECTION_LOST = new Set([-32099, -32098, -32097, -32096]);

/** True when `error` (a failed start or request) says the server's connection went away. */
export function connectionLost(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'number' && CONNECTION_LOST.has(code);
}
