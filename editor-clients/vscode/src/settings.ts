// Maps the extension's `diffusionLsp.*` configuration to the server's settings object
// (sent as `initializationOptions` and in `workspace/didChangeConfiguration`).
// Pure: no `vscode` import, so it is unit-tested without an editor.

/** The server's settings, exactly as docs/PROTOCOL.md names them. */
export interface ServerSettings {
  model?: string;
  device?: string;
  dtype?: string;
  quantization?: string;
  deviceMap?: string;
  threads?: number;
  kvCache?: boolean;
  cacheRefresh?: number;
  tMin?: number;
  tMax?: number;
  experts?: string;
  adapt?: string;
  steps?: number;
  threshold?: number;
  maxHoleTokens?: number;
  prefixTokens?: number;
  suffixTokens?: number;
  debounceMs?: number;
  drafts?: boolean;
  draftIntervalMs?: number;
  validate?: boolean;
  minConfidence?: number;
  namesRule?: boolean;
  documentLines?: boolean;
  workspaceLines?: boolean;
  commonLines?: boolean;
  maxAlternatives?: number;
  engine?: string;
  engineTokenFile?: string;
  engineCaFile?: string;
  engineTimeout?: number;
  engineRetries?: number;
}

type Kind = 'string' | 'integer' | 'number' | 'boolean';

/** Every server key with the JSON type the extension passes through. */
export const SERVER_SETTING_KINDS: Readonly<Record<keyof ServerSettings, Kind>> = {
  model: 'string',
  device: 'string',
  dtype: 'string',
  quantization: 'string',
  deviceMap: 'string',
  threads: 'integer',
  kvCache: 'boolean',
  cacheRefresh: 'integer',
  tMin: 'number',
  tMax: 'number',
  experts: 'string',
  adapt: 'string',
  steps: 'integer',
  threshold: 'number',
  maxHoleTokens: 'integer',
  prefixTokens: 'integer',
  suffixTokens: 'integer',
  debounceMs: 'integer',
  drafts: 'boolean',
  draftIntervalMs: 'integer',
  validate: 'boolean',
  minConfidence: 'number',
  namesRule: 'boolean',
  documentLines: 'boolean',
  workspaceLines: 'boolean',
  commonLines: 'boolean',
  maxAlternatives: 'integer',
  engine: 'string',
  engineTokenFile: 'string',
  engineCaFile: 'string',
  engineTimeout: 'number',
  engineRetries: 'integer',
};

function hasKind(value: unknown, kind: Kind): boolean {
  switch (kind) {
    case 'string':
      return typeof value === 'string' && value.trim() !== '';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
  }
}

/**
 * Defaults this client chooses differently from the server's: the editor paints drafts,
 * so it asks for them unless the user turned them off.
 */
export const CLIENT_DEFAULTS: Readonly<ServerSettings> = { drafts: true };

/**
 * Builds the settings object from a reader of the values the user set for `diffusionLsp.<key>`.
 * Unset keys (undefined / null / empty string) are left out so the server default applies
 * (or the client's, see CLIENT_DEFAULTS);
 * a value of the wrong JSON type is left out too and named in `rejected`, so the extension
 * can say so. Range checks (e.g. `steps <= 512`) stay with the server, which warns once.
 */
export function toServerSettings(read: (key: string) => unknown): {
  settings: ServerSettings;
  rejected: string[];
} {
  const settings: Record<string, unknown> = {};
  const rejected: string[] = [];
  for (const [key, kind] of Object.entries(SERVER_SETTING_KINDS)) {
    const value = read(key);
    if (value === undefined || value === null || value === '') {
      continue;
    }
    if (hasKind(value, kind)) {
      settings[key] = typeof value === 'string' ? value.trim() : value;
    } else {
      rejected.push(key);
    }
  }
  for (const [key, value] of Object.entries(CLIENT_DEFAULTS)) {
    if (!(key in settings)) {
      settings[key] = value;
    }
  }
  return { settings: settings as ServerSettings, rejected };
}

/** A settings push: a value, or `null` for a setting the user removed (the server puts its default back). */
export type ServerSettingsPush = { [K in keyof ServerSettings]?: ServerSettings[K] | null };

/** The `workspace/didChangeConfiguration` params the server expects. The server merges each push onto the
 * settings it holds, so a key sent before (`previous`) and unset now goes as `null`: its default again. */
export function configurationChangeParams(settings: ServerSettings, previous: ServerSettings = {}): {
  settings: { diffusionLsp: ServerSettingsPush };
} {
  const cleared: ServerSettingsPush = {};
  for (const key of Object.keys(previous) as (keyof ServerSettings)[]) {
    if (!(key in settings)) {
      cleared[key] = null;
    }
  }
  return { settings: { diffusionLsp: { ...cleared, ...settings } } };
}

/** Which setting changes need a server restart rather than a configuration push. */
export const RESTART_KEYS: readonly string[] = ['server.path', 'server.args', 'languages'];
