import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { distinctItems, normalizeItem } from '../src/inlineItems';

const at = (line: number, character: number) => ({ start: { line, character }, end: { line, character } });

describe('normalizeItem', () => {
  it('drops a block fill\'s trailing line break on a blank line (no stray empty line)', () => {
    const fixed = normalizeItem({ text: 'counts[word] += 1\n', range: at(3, 8) }, '        ', { line: 3, character: 8 });
    assert.deepEqual(fixed, { text: 'counts[word] += 1', range: at(3, 8) });
  });

  it('drops blank lines after it too, and replaces the blank rest of the line', () => {
    const fixed = normalizeItem({ text: 'pass\n\n  ', range: at(1, 2) }, '    ', { line: 1, character: 2 });
    assert.deepEqual(fixed, { text: 'pass', range: { start: { line: 1, character: 2 }, end: { line: 1, character: 4 } } });
  });

  it('keeps a line break that pushes code down', () => {
    const item = { text: 'x = 0\n', range: at(0, 0) };
    assert.equal(normalizeItem(item, 'y = 1', { line: 0, character: 0 }), item);
  });

  it('leaves other fills alone, and uses the cursor for an item without a range', () => {
    const item = { text: 'a + b', range: at(0, 4) };
    assert.equal(normalizeItem(item, 'x = ', { line: 0, character: 4 }), item);
    assert.deepEqual(normalizeItem({ text: 'y\n', range: undefined }, 'x', { line: 0, character: 1 }), {
      text: 'y',
      range: at(0, 1),
    });
  });
});

describe('distinctItems', () => {
  it('keeps every alternative once, in the server\'s order, without empty ones', () => {
    const items = [
      { text: '"alpha"', range: at(0, 7) },
      { text: '"alpha"', range: at(0, 7) },
      { text: '', range: at(0, 7) },
      { text: '"beta"', range: at(0, 7) },
      { text: '"alpha"', range: at(0, 6) },
    ];
    assert.deepEqual(distinctItems(items), [0, 3, 4]);
  });
});
