import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { kindMatches, pickAction, rewriteArgument } from '../src/actions';

const offered = [
  { title: 'Rewrite selection', kind: 'refactor.rewrite' },
  { title: 'Fill 3 holes', kind: 'refactor.rewrite' },
  { title: 'Complete body', kind: 'refactor.rewrite' },
  { title: 'Fix syntax error', kind: 'quickfix' },
  { title: 'Organize imports', kind: 'source.organizeImports' },
];

describe('pickAction', () => {
  it('finds each server action by kind and title', () => {
    assert.equal(pickAction(offered, 'rewriteSelection')?.title, 'Rewrite selection');
    assert.equal(pickAction(offered, 'fillHoles')?.title, 'Fill 3 holes');
    assert.equal(pickAction(offered, 'completeBody')?.title, 'Complete body');
    assert.equal(pickAction(offered, 'fixSyntax')?.title, 'Fix syntax error');
  });

  it('accepts a single hole and a sub-kind', () => {
    assert.equal(pickAction([{ title: 'Fill 1 hole', kind: 'refactor.rewrite.diffusion' }], 'fillHoles')?.title, 'Fill 1 hole');
  });

  it('does not take an action of another kind with a similar title', () => {
    assert.equal(pickAction([{ title: 'Fix syntax error', kind: 'refactor.rewrite' }], 'fixSyntax'), undefined);
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
