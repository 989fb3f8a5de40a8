import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { CLIENT_DEFAULTS, configurationChangeParams, SERVER_SETTING_KINDS, toServerSettings } from '../src/settings';
import { INSTRUCTIONS_CONTEXT } from '../src/status';

const reader = (values: Record<string, unknown>) => (key: string) => values[key];

describe('toServerSettings', () => {
  it('sends nothing but the client defaults when the user set nothing', () => {
    assert.deepEqual(toServerSettings(reader({})), { settings: { drafts: true }, rejected: [] });
  });

  it('passes every documented key with its protocol name', () => {
    const values = {
      model: '/models/dgemma',
      device: 'cuda:1',
      dtype: 'bfloat16',
      quantization: 'int8',
      deviceMap: 'auto',
      threads: 4,
      steps: 8,
      threshold: 0.9,
      maxHoleTokens: 32,
      prefixTokens: 200,
      suffixTokens: 50,
      debounceMs: 75,
      drafts: false,
      draftIntervalMs: 50,
      validate: false,
      minConfidence: 0.25,
      namesRule: false,
      maxAlternatives: 5,
    };
    assert.deepEqual(toServerSettings(reader(values)), { settings: values, rejected: [] });
  });

  it('leaves out unset, null and empty values so the server default applies', () => {
    const { settings } = toServerSettings(reader({ model: '', deviceMap: null, steps: undefined }));
    assert.deepEqual(settings, { drafts: true });
  });

  it('names values of the wrong type and leaves them out', () => {
    const { settings, rejected } = toServerSettings(
      reader({ steps: 2.5, threads: '4', drafts: 'yes', threshold: Number.NaN, model: 'embedded' }),
    );
    assert.deepEqual(settings, { model: 'embedded', drafts: true });
    assert.deepEqual(rejected.sort(), ['drafts', 'steps', 'threads', 'threshold']);
  });

  it('passes minConfidence 0 (never withhold) and leaves out null (the calibrated bar)', () => {
    assert.deepEqual(toServerSettings(reader({ minConfidence: 0 })).settings, { minConfidence: 0, drafts: true });
    assert.deepEqual(toServerSettings(reader({ minConfidence: null })).settings, { drafts: true });
    const { rejected } = toServerSettings(reader({ minConfidence: '0.5', maxAlternatives: 2.5, namesRule: 1 }));
    assert.deepEqual(rejected.sort(), ['maxAlternatives', 'minConfidence', 'namesRule']);
  });

  it('trims strings', () => {
    assert.equal(toServerSettings(reader({ model: '  ~/ckpt  ' })).settings.model, '~/ckpt');
  });

  it('passes every key of the settings table in docs/PROTOCOL.md', () => {
    const protocol = readFileSync(path.join(__dirname, '..', '..', '..', '..', 'docs', 'PROTOCOL.md'), 'utf8');
    const table = protocol.split('\n## Settings')[1].split('\n## ')[0];
    const documented = table
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .flatMap((line) => [...line.split('|')[1].matchAll(/`(\w+)`/g)].map((m) => m[1]));
    assert.ok(documented.includes('adapt') && documented.includes('kvCache'), 'the table was read');
    assert.deepEqual(documented.filter((key) => !(key in SERVER_SETTING_KINDS)), []);
  });

  it('ignores keys the server does not know', () => {
    const { settings } = toServerSettings(reader({ 'server.path': '/bin/x', languages: ['python'] }));
    assert.deepEqual(settings, { drafts: true });
  });
});

describe('configurationChangeParams', () => {
  it('wraps the settings in the diffusionLsp section', () => {
    assert.deepEqual(configurationChangeParams({ steps: 4 }), { settings: { diffusionLsp: { steps: 4 } } });
  });

  it('sends null for a setting the user removed, so the server restores its default', () => {
    assert.deepEqual(configurationChangeParams({ steps: 4 }, { steps: 8, minConfidence: 0, drafts: true }), {
      settings: { diffusionLsp: { steps: 4, minConfidence: null, drafts: null } },
    });
  });
});

describe('package.json', () => {
  const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const properties = manifest.contributes.configuration.properties as Record<string, { type: unknown }>;

  it('declares a setting for every server key, with a matching type', () => {
    for (const [key, kind] of Object.entries(SERVER_SETTING_KINDS)) {
      const property = properties[`diffusionLsp.${key}`];
      assert.ok(property, `diffusionLsp.${key} missing`);
      const types = ([] as unknown[]).concat(property.type);
      assert.ok(types.includes(kind), `diffusionLsp.${key} has type ${String(property.type)}, expected ${kind}`);
    }
  });

  it('shows the server default of every setting in docs/PROTOCOL.md (but those the client chooses)', () => {
    const protocol = readFileSync(path.join(__dirname, '..', '..', '..', '..', 'docs', 'PROTOCOL.md'), 'utf8');
    const table = protocol.split('\n## Settings')[1].split('\n## ')[0];
    const shown: string[] = [];
    for (const line of table.split('\n').filter((l) => l.startsWith('| `'))) {
      const cells = line.split('|');
      const keys = [...cells[1].matchAll(/`(\w+)`/g)].map((m) => m[1]);
      const defaults = cells[3].split(' / ').map((d) => JSON.parse(d.trim().replace(/`/g, '')));
      keys.forEach((key, i) => {
        if (!(key in CLIENT_DEFAULTS)) {
          const expected = defaults[Math.min(i, defaults.length - 1)];
          const property = properties[`diffusionLsp.${key}`] as { default?: unknown };
          assert.deepEqual(property.default, expected, `diffusionLsp.${key}`);
          shown.push(key);
        }
      });
    }
    assert.ok(shown.includes('steps') && shown.includes('suffixTokens'), 'the table was read');
  });

  it('bounds every numeric setting as docs/PROTOCOL.md does, so the Settings editor flags what the server refuses', () => {
    const protocol = readFileSync(path.join(__dirname, '..', '..', '..', '..', 'docs', 'PROTOCOL.md'), 'utf8');
    const table = protocol.split('\n## Settings')[1].split('\n## ')[0];
    const checked: string[] = [];
    for (const line of table.split('\n').filter((l) => l.startsWith('| `'))) {
      const cells = line.split('|');
      const type = cells[2];
      const range = /(\d+(?:\.\d+)?)\.\.(\d+(?:\.\d+)?)/.exec(type) ?? /\[(\d+), (\d+)\]/.exec(type);
      const atLeast = />= (\d+(?:\.\d+)?)/.exec(type);
      if (!range && !atLeast) {
        continue;
      }
      for (const key of [...cells[1].matchAll(/`(\w+)`/g)].map((m) => m[1])) {
        const property = properties[`diffusionLsp.${key}`] as { minimum?: number; maximum?: number };
        const expected = range ? [Number(range[1]), Number(range[2])] : [Number(atLeast![1]), undefined];
        assert.deepEqual([property.minimum, property.maximum], expected, `diffusionLsp.${key} (${type.trim()})`);
        checked.push(key);
      }
    }
    assert.ok(checked.includes('threads') && checked.includes('engineTimeout') && checked.includes('minConfidence'), checked.join());
  });

  it('contributes every command the extension registers', () => {
    const commands = (manifest.contributes.commands as { command: string }[]).map((c) => c.command).sort();
    assert.deepEqual(commands, [
      'diffusionLsp.completeBody',
      'diffusionLsp.fillHoles',
      'diffusionLsp.fixSyntax',
      'diffusionLsp.restart',
      'diffusionLsp.rewriteSelection',
      'diffusionLsp.rewriteSelectionWithInstruction',
      'diffusionLsp.showLog',
    ]);
  });

  it('names the rewrite for what it does: the instruction variant only when the backend takes instructions', () => {
    const commands = manifest.contributes.commands as { command: string; title: string }[];
    const title = (id: string) => commands.find((c) => c.command === id)?.title;
    assert.equal(title('diffusionLsp.rewriteSelection'), 'Rewrite Selection');
    assert.equal(title('diffusionLsp.rewriteSelectionWithInstruction'), 'Rewrite Selection with Instruction…');
    const menus = manifest.contributes.menus as Record<string, { command: string; when: string }[]>;
    const keys = manifest.contributes.keybindings as { command: string; when: string }[];
    for (const entries of [menus.commandPalette, menus['editor/context'], keys]) {
      const plain = entries.filter((e) => e.command === 'diffusionLsp.rewriteSelection');
      const asks = entries.filter((e) => e.command === 'diffusionLsp.rewriteSelectionWithInstruction');
      assert.equal(plain.length, 1);
      assert.equal(asks.length, 1);
      const plainWhen = plain[0].when.split(' && ');
      const asksWhen = asks[0].when.split(' && ');
      assert.ok(plainWhen.includes(`!${INSTRUCTIONS_CONTEXT}`), plain[0].when);
      assert.ok(asksWhen.includes(INSTRUCTIONS_CONTEXT), asks[0].when);
    }
  });

  it('activates for every default language', () => {
    const languages = properties['diffusionLsp.languages'] as unknown as { default: string[] };
    for (const language of languages.default) {
      assert.ok(manifest.activationEvents.includes(`onLanguage:${language}`), language);
    }
  });
});
