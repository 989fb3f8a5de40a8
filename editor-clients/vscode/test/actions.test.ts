import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { kindMatches, notServedReason, pickAction, rewriteArgument, staleDocuments } from '../src/actions';

// As the server sends them today: plain kinds and data.action (titles deliberately misleading).
const today = [
  { title: 'Fill 3 holes', kind: 'refactor.rewrite', data: { action: 'rewriteSelection' } },
  { title: 'Rewrite selection', kind: 'refactor.rewrite', data: { action: 'fillHoles' } },
  { title: 'x', kind: 'refactor.rewrite', data: { action: 'completeBody' } },
  { title: 'y', kind: 'quickfix', data: { action: 'fixSyntax' } },
  { title: 'Organize imports', kind: 'source.organizeImports' },
];

describe('pickAction', () => {
  it("finds each server action by its data.action, whatever the title", () => {
    assert.equal(pickAction(today, 'rewriteSelection')?.title, 'Fill 3 holes');
    assert.equal(pickAction(today, 'fillHoles')?.title, 'Rewrite selection');
    assert.equal(pickAction(today, 'completeBody')?.title, 'x');
    assert.equal(pickAction(today, 'fixSyntax')?.title, 'y');
  });

  it('reads the action from the diffusion.runAction argument when there is no data', () => {
    const commanded = [
      { title: 'z', kind: 'refactor.rewrite', command: { command: 'diffusion.runAction', arguments: [{ action: 'completeBody' }] } },
    ];
    assert.equal(pickAction(commanded, 'completeBody')?.title, 'z');
    assert.equal(pickAction(commanded, 'fillHoles'), undefined);
  });

  it('falls back to the specific kinds the server will send', () => {
    const kinds = [
      { title: 'a', kind: 'refactor.rewrite.rewriteSelection' },
      { title: 'b', kind: 'refactor.rewrite.fillHoles' },
      { title: 'c', kind: 'refactor.rewrite.completeBody' },
      { title: 'd', kind: 'quickfix' },
    ];
    assert.equal(pickAction(kinds, 'rewriteSelection')?.title, 'a');
    assert.equal(pickAction(kinds, 'fillHoles')?.title, 'b');
    assert.equal(pickAction(kinds, 'completeBody')?.title, 'c');
    assert.equal(pickAction(kinds, 'fixSyntax')?.title, 'd');
  });

  it('never matches by title alone, and data naming another action wins over the kind', () => {
    assert.equal(pickAction([{ title: 'Fill 1 hole', kind: 'refactor.rewrite' }], 'fillHoles'), undefined);
    assert.equal(pickAction([{ title: 'f', kind: 'quickfix', data: { action: 'other' } }], 'fixSyntax'), undefined);
  });

  it('is undefined when nothing matches', () => {
    assert.equal(pickAction([], 'completeBody'), undefined);
  });
});

describe('kindMatches', () => {
  it('matches equal kinds and sub-kinds only', () => {
    assert.ok(kindMatches('refactor.rewrite', 'refactor.rewrite'));
    assert.ok(kindMatches('refactor.rewrite.fill', 'refactor.rewrite'));
    assert.ok(!kindMatches('refactor.rewriteX', 'refactor.rewrite'));
    assert.ok(!kindMatches('refactor', 'refactor.rewrite'));
    assert.ok(!kindMatches(undefined, 'refactor.rewrite'));
  });
});

describe('rewriteArgument', () => {
  const range = { start: { line: 1, character: 0 }, end: { line: 4, character: 2 } };
  it('builds the documented argument with the instruction', () => {
    assert.deepEqual(rewriteArgument('file:///a.py', 3, range, '  use a loop '), {
      uri: 'file:///a.py',
      version: 3,
      range,
      instruction: 'use a loop',
    });
  });
  it('leaves out a blank instruction', () => {
    assert.deepEqual(rewriteArgument('file:///a.py', 3, range, '   '), { uri: 'file:///a.py', version: 3, range });
    assert.deepEqual(rewriteArgument('file:///a.py', 3, range, undefined), { uri: 'file:///a.py', version: 3, range });
  });
});

describe('staleDocuments', () => {
  const edit = (version: number | null) => ({
    documentChanges: [{ textDocument: { uri: 'file:///a.py', version }, edits: [{ range: {}, newText: 'x' }] }],
  });
  const open = (uri: string) => (uri === 'file:///a.py' ? 7 : undefined);

  it('names a document the user has edited since the edit was made for it', () => {
    assert.deepEqual(staleDocuments(edit(6), open), ['file:///a.py']);
  });

  it('passes an edit for the version the document is at', () => {
    assert.deepEqual(staleDocuments(edit(7), open), []);
  });

  it('passes edits without a version, for closed documents, resource operations and plain changes', () => {
    assert.deepEqual(staleDocuments(edit(null), open), []);
    assert.deepEqual(staleDocuments({ documentChanges: [{ textDocument: { uri: 'file:///b.py', version: 1 }, edits: [] }] }, open), []);
    assert.deepEqual(staleDocuments({ documentChanges: [{ kind: 'create', uri: 'file:///c.py' }] }, open), []);
    assert.deepEqual(staleDocuments({ changes: { 'file:///a.py': [] } }, open), []);
    assert.deepEqual(staleDocuments(undefined, open), []);
  });
});

describe('notServedReason', () => {
  const languages = ['python', 'rust'];
  it('serves files and untitled documents of the configured languages', () => {
    assert.equal(notServedReason('python', 'file', languages), undefined);
    assert.equal(notServedReason('rust', 'untitled', languages), undefined);
  });

  it('names the language the server is not started for, and the setting', () => {
    assert.match(notServedReason('markdown', 'file', languages) ?? '', /not started for markdown.*diffusionLsp\.languages/);
  });

  it('says the server does not see a notebook cell or another scheme, whatever its language', () => {
    assert.match(notServedReason('python', 'vscode-notebook-cell', languages) ?? '', /notebook cell/);
    assert.match(notServedReason('python', 'git', languages) ?? '', /git: document/);
  });
});
