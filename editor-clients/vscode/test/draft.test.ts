import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { bucketOf, Draft, DraftBoard, draftSegments, isDraft, isFinalSuggestion, meanConfidence } from '../src/draft';

const NBSP = '\u00a0';

function draft(overrides: Partial<Draft> = {}): Draft {
  return {
    uri: 'file:///a.py',
    version: 7,
    id: '3',
    step: 4,
    done: false,
    range: { start: { line: 3, character: 4 }, end: { line: 3, character: 4 } },
    text: 'return a + ▒▒',
    tokens: [
      { text: 'return', confidence: 0.97 },
      { text: ' a', confidence: 0.81 },
      { text: ' +', confidence: 0.55 },
      { text: '▒', confidence: 0.0 },
    ],
    ...overrides,
  };
}

describe('bucketOf', () => {
  const cases: [string, number, string][] = [
    ['x', 0.95, 'high'],
    ['x', 0.8, 'high'],
    ['x', 0.79, 'medium'],
    ['x', 0.4, 'medium'],
    ['x', 0.39, 'low'],
    ['x', 0.01, 'low'],
    ['x', 0, 'masked'],
    ['▒', 0.5, 'masked'],
  ];
  for (const [text, confidence, bucket] of cases) {
    it(`${JSON.stringify(text)} at ${confidence} is ${bucket}`, () => {
      assert.equal(bucketOf({ text, confidence }), bucket);
    });
  }
});

describe('draftSegments', () => {
  it('shades the protocol example token by token', () => {
    assert.deepEqual(draftSegments(draft()), [
      { text: `return${NBSP}a`, bucket: 'high' },
      { text: `${NBSP}+`, bucket: 'medium' },
      { text: '▒', bucket: 'masked' },
    ]);
  });

  it('merges neighbours of one bucket', () => {
    const segments = draftSegments(draft({ tokens: [{ text: 'a', confidence: 0.9 }, { text: 'b', confidence: 0.99 }] }));
    assert.deepEqual(segments, [{ text: 'ab', bucket: 'high' }]);
  });

  it('flattens line breaks and drops the indentation after them, even across tokens', () => {
    const segments = draftSegments(
      draft({
        tokens: [
          { text: 'if x:', confidence: 0.9 },
          { text: '\n', confidence: 0.9 },
          { text: '    ', confidence: 0.9 },
          { text: '  return', confidence: 0.3 },
        ],
      }),
    );
    assert.deepEqual(segments, [
      { text: `if${NBSP}x:${NBSP}⏎${NBSP}`, bucket: 'high' },
      { text: 'return', bucket: 'low' },
    ]);
  });

  it('handles CRLF, tabs and emoji', () => {
    const segments = draftSegments(draft({ tokens: [{ text: 'a\r\n\tb\t😀', confidence: 0.9 }] }));
    assert.deepEqual(segments, [{ text: `a${NBSP}⏎${NBSP}b${NBSP}${NBSP}😀`, bucket: 'high' }]);
  });

  it('falls back to the text when tokens are absent', () => {
    assert.deepEqual(draftSegments(draft({ tokens: undefined, text: 'x = ▒▒' })), [
      { text: `x${NBSP}=${NBSP}`, bucket: 'medium' },
      { text: '▒▒', bucket: 'masked' },
    ]);
  });

  it('is empty for an empty draft', () => {
    assert.deepEqual(draftSegments(draft({ tokens: [], text: '' })), []);
  });

  it('clips long drafts with an ellipsis, counting code points', () => {
    const segments = draftSegments(draft({ tokens: [{ text: '😀'.repeat(50), confidence: 0.9 }] }), 10);
    assert.deepEqual(segments, [{ text: '😀'.repeat(10) + '…', bucket: 'high' }]);
  });
});

describe('meanConfidence', () => {
  it('averages the unmasked tokens', () => {
    assert.ok(Math.abs((meanConfidence(draft()) ?? 0) - (0.97 + 0.81 + 0.55) / 3) < 1e-9);
  });
  it('is undefined when everything is masked', () => {
    assert.equal(meanConfidence(draft({ tokens: [{ text: '▒', confidence: 0 }] })), undefined);
  });
});

describe('isDraft', () => {
  it('accepts the protocol example', () => {
    assert.ok(isDraft(draft()));
    assert.ok(isDraft({ ...draft(), tokens: undefined }));
  });
  it('rejects malformed params', () => {
    assert.ok(!isDraft({ ...draft(), range: { start: { line: 1 } } }));
    assert.ok(!isDraft({ ...draft(), tokens: [{ text: 1, confidence: 0 }] }));
    assert.ok(!isDraft({ ...draft(), done: 'no' }));
    assert.ok(!isDraft(undefined));
  });
});

describe('DraftBoard', () => {
  it('shows drafts of the current version in step order and clears on done', () => {
    const board = new DraftBoard();
    assert.equal(board.receive(draft({ step: 1 }), 7).kind, 'show');
    assert.equal(board.receive(draft({ step: 3 }), 7).kind, 'show');
    assert.equal(board.receive(draft({ step: 2 }), 7).kind, 'ignore');
    assert.deepEqual(board.receive(draft({ step: 4, done: true }), 7), { kind: 'clear', uri: 'file:///a.py' });
    assert.equal(board.receive(draft({ step: 5 }), 7).kind, 'ignore');
  });

  it('ignores drafts for another document version', () => {
    assert.equal(new DraftBoard().receive(draft({ version: 6 }), 7).kind, 'ignore');
  });

  it('shows a draft of a document it cannot see the version of', () => {
    assert.equal(new DraftBoard().receive(draft(), undefined).kind, 'show');
  });

  it('lets a newer request take over and ignores the older one', () => {
    const board = new DraftBoard();
    board.receive(draft({ id: '3', step: 5 }), 7);
    assert.equal(board.receive(draft({ id: '4', step: 1 }), 7).kind, 'show');
    assert.equal(board.receive(draft({ id: '3', step: 6 }), 7).kind, 'ignore');
  });

  it('keeps documents apart and forgets on change', () => {
    const board = new DraftBoard();
    board.receive(draft({ step: 5 }), 7);
    assert.equal(board.receive(draft({ uri: 'file:///b.py', step: 1 }), 7).kind, 'show');
    board.forget('file:///a.py');
    assert.equal(board.receive(draft({ step: 1 }), 7).kind, 'show');
  });

  it('forgets every request when the server stops: a new one numbers its requests from 1 again', () => {
    const board = new DraftBoard();
    board.receive(draft({ id: '40', step: 3, done: true }), 7);
    board.receive(draft({ uri: 'file:///b.py', id: '41', step: 2 }), 7);
    board.forgetAll();
    assert.equal(board.receive(draft({ id: '1', step: 1 }), 7).kind, 'show');
    assert.equal(board.receive(draft({ uri: 'file:///b.py', id: '2', step: 1 }), 7).kind, 'show');
  });
});

describe('isFinalSuggestion', () => {
  it('is the final draft of an answered request only', () => {
    assert.equal(isFinalSuggestion(draft({ done: true, text: 'return a', fillConfidence: 0.4 })), true);
    assert.equal(isFinalSuggestion(draft({ done: false })), false, 'still denoising');
    // nothing found, or the request ended without an answer (cancelled, superseded, the document changed):
    // the final draft only clears what was painted, and the last suggestion's confidence stays
    assert.equal(isFinalSuggestion(draft({ done: true, text: '', tokens: [] })), false);
  });

  it('is not a code action\'s final draft, which has no estimate and keeps the last suggestion\'s', () => {
    // as the server sends it: the final text of the action's first hole, no fillConfidence
    const action = draft({ id: 'action-4', action: 'rewriteSelection', done: true, text: '    y = x + 1\n' });
    assert.equal(isFinalSuggestion(action), false);
  });
});
