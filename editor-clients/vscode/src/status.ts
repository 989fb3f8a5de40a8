// The status bar's state machine: folds client lifecycle events and the server's
// `diffusion/status` notifications into one state, and says how to show it.
// Pure: the vscode side only copies `view()` onto a StatusBarItem.

/** The `when` context key that says the backend follows rewrite instructions (package.json). */
export const INSTRUCTIONS_CONTEXT = 'diffusionLsp.instructions';

export type Phase = 'starting' | 'loading' | 'ready' | 'error' | 'stopped' | 'notInstalled';

/** `diffusion/status` params (docs/PROTOCOL.md). */
export interface ServerStatus {
  state: 'loading' | 'ready' | 'error';
  model: string;
  message: string;
  /** When ready: whether the backend follows a rewrite instruction. */
  instructions?: boolean;
  /** When ready and the `adapt` setting is on: the workspace adaptation and its held-out figures. */
  adapt?: AdaptStatus;
}

/** Held-out one-line exact match (fractions) before and after adapting to the workspace. */
export interface AdaptStatus {
  state: string;
  before?: number;
  after?: number;
  holes?: number;
}

function pct1(p: number | undefined): string {
  return typeof p === 'number' ? `${(p * 100).toFixed(1)}%` : '?';
}

/** One line for the tooltip (empty: nothing to say). */
export function describeAdapt(a: AdaptStatus | undefined): string {
  if (!a || typeof a.state !== 'string') {
    return '';
  }
  const change = `held-out lines ${pct1(a.before)} → ${pct1(a.after)} exact`;
  switch (a.state) {
    case 'adopted':
      return `Adapted to this workspace: ${change}`;
    case 'rejected':
      return `Workspace adaptation not used: ${change}`;
    case 'measuring':
    case 'training':
      return a.before === undefined ? 'Adapting to this workspace'
        : `Adapting to this workspace (held-out lines ${pct1(a.before)} exact before)`;
    case 'failed':
      return 'Workspace adaptation failed (see the log)';
    case 'no-workspace':
      return 'Workspace adaptation: no workspace folder';
    default:
      return '';
  }
}

export interface StatusView {
  /** Status bar text, with a codicon. */
  text: string;
  tooltip: string;
  /** Drives the item's background colour. */
  severity: 'normal' | 'warning' | 'error';
}

export function isServerStatus(value: unknown): value is ServerStatus {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const v = value as Record<string, unknown>;
  return (
    (v.state === 'loading' || v.state === 'ready' || v.state === 'error') &&
    (v.model === undefined || typeof v.model === 'string') &&
    (v.message === undefined || typeof v.message === 'string') &&
    (v.instructions === undefined || typeof v.instructions === 'boolean')
  );
}

/** "42%", "<1%" for an estimate that rounds to 0 but is not 0. */
export function percent(p: number): string {
  const rounded = Math.round(p * 100);
  return rounded === 0 && p > 0 ? '<1%' : `${rounded}%`;
}

export class StatusModel {
  private phase: Phase = 'starting';
  private model = '';
  private message = '';
  private instructions = false;
  private confidence: number | null = null;
  private adapt: AdaptStatus | undefined = undefined;

  /** Whether the server's last ready status said the backend follows rewrite instructions. */
  get takesInstructions(): boolean {
    return this.phase === 'ready' && this.instructions;
  }

  /** The last suggestion's estimated probability of being exactly right (null: unknown). */
  get fillConfidence(): number | null {
    return this.confidence;
  }

  /** A final draft arrived; `confidence` is its `fillConfidence` (null or absent: unknown). */
  suggestion(confidence: number | null | undefined): void {
    this.confidence = typeof confidence === 'number' && Number.isFinite(confidence) ? confidence : null;
  }

  get current(): Phase {
    return this.phase;
  }

  /** The client is (re)starting the server process. */
  starting(): void {
    this.set('starting', '');
  }

  /** The server process is up and initialized, the model state not known yet. */
  running(): void {
    if (this.phase === 'starting' || this.phase === 'stopped') {
      this.set('loading', 'Waiting for the model');
    }
  }

  /** A `diffusion/status` notification arrived. */
  serverStatus(status: ServerStatus): void {
    this.model = status.model ?? this.model;
    if (status.state === 'ready') {
      this.instructions = status.instructions === true;
      this.adapt = typeof status.adapt === 'object' && status.adapt !== null ? status.adapt : undefined;
    }
    this.set(status.state, status.message ?? '');
  }

  /** The server process stopped; an earlier error stays visible. */
  stopped(): void {
    if (this.phase !== 'error' && this.phase !== 'notInstalled') {
      this.set('stopped', 'The server is not running');
    }
  }

  /** The server process died; `message` says whether it is being restarted. */
  died(message: string): void {
    this.set('error', message);
  }

  /** Starting the server failed (spawn error, crash during initialize, ...). */
  failed(message: string): void {
    this.set('error', message);
  }

  notInstalled(message: string): void {
    this.set('notInstalled', message);
  }

  view(): StatusView {
    const model = this.model === '' ? '' : ` (${this.model})`;
    const detail = this.message === '' ? '' : `\n${this.message}`;
    const click = '\nClick to show the log.';
    const adapted = this.phase === 'ready' ? describeAdapt(this.adapt) : '';
    const likely =
      (this.confidence === null ? '' : `\nLast suggestion: ${percent(this.confidence)} likely right`) +
      (adapted === '' ? '' : `\n${adapted}`);
    switch (this.phase) {
      case 'starting':
        return { text: '$(loading~spin) Diffusion', tooltip: `Starting diffusion-lsp${click}`, severity: 'normal' };
      case 'loading':
        return {
          text: '$(loading~spin) Diffusion',
          tooltip: `Loading the model${model}${detail}${click}`,
          severity: 'normal',
        };
      case 'ready':
        return { text: '$(sparkle) Diffusion', tooltip: `Ready${model}${detail}${likely}${click}`, severity: 'normal' };
      case 'error':
        return { text: '$(error) Diffusion', tooltip: `Error${model}${detail}${click}`, severity: 'error' };
      case 'stopped':
        return { text: '$(circle-slash) Diffusion', tooltip: `Stopped${detail}${click}`, severity: 'warning' };
      case 'notInstalled':
        return { text: '$(warning) Diffusion', tooltip: `Not installed${detail}${click}`, severity: 'warning' };
    }
  }

  private set(phase: Phase, message: string): void {
    if (phase !== 'ready') {
      this.confidence = null;
    }
    this.phase = phase;
    this.message = message;
  }
}
