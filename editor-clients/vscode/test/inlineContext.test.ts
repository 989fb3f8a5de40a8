import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { protocolInlineContext } from '../src/inlineContext';

describe('protocolInlineContext', () => {
  it('maps VS Code trigger kinds to the protocol ones', () => {
    assert.deepEqual(protocolInlineContext({ triggerKind: 0 }), { triggerKind: 1 });
    assert.deepEqual(protocolInlineContext({ triggerKind: 1 }), { triggerKind: 2 });
  });

  it('turns the selected completion range into a plain protocol range', () => {
    class FancyPosition {
      constructor(
        readonly line: number,
        readonly character: number,
      ) {}
      toJSON() {
        return [this.line, this.character];
      }
    }
    const context = {
      triggerKind: 1,
      selectedCompletionInfo: { range: { start: new FancyPosition(2, 4), end: new FancyPosition(2, 7) }, text: 'foo' },
    };
    assert.equal(
      JSON.stringify(protocolInlineContext(context)),
      JSON.stringify({
        triggerKind: 2,
        selectedCompletionInfo: { range: { start: { line: 2, character: 4 }, end: { line: 2, character: 7 } }, text: 'foo' },
      }),
    );
  });
});
