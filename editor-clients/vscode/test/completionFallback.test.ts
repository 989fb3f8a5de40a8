import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { wantsCompletionItems } from '../src/completionFallback';

describe('wantsCompletionItems', () => {
  it('asks for no completion item while inline suggestions show the fill as ghost text', () => {
    assert.equal(wantsCompletionItems(true), false);
  });

  it("takes an unset or malformed setting as VS Code's default (on)", () => {
    assert.equal(wantsCompletionItems(undefined), false);
    assert.equal(wantsCompletionItems('false'), false);
    assert.equal(wantsCompletionItems(null), false);
  });

  it('asks for it when inline suggestions are off: the item is then the only way to see the fill', () => {
    assert.equal(wantsCompletionItems(false), true);
  });
});
