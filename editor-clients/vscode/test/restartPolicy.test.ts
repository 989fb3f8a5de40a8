import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { connectionLost, RestartPolicy } from '../src/restartPolicy';

describe('RestartPolicy', () => {
  it('restarts a dead server a bounded number of times, then stops and says how to go on', () => {
    const policy = new RestartPolicy(3, 60_000);
    const decisions = [0, 1000, 2000, 3000].map((t) => policy.died(t));
    assert.deepEqual(
      decisions.map((d) => [d.restart, d.attempt]),
      [
        [true, 1],
        [true, 2],
        [true, 3],
        [false, 3],
      ],
    );
    assert.match(decisions[0].message, /restarting it \(attempt 1 of 3\)/);
    assert.match(decisions[3].message, /not restarted again.*Restart Server/);
  });

  it('forgets crashes older than its window, and a manual restart starts afresh', () => {
    const policy = new RestartPolicy(1, 60_000);
    assert.ok(policy.died(0).restart);
    assert.ok(!policy.died(30_000).restart);
    assert.ok(policy.died(61_000).restart);
    policy.reset();
    assert.ok(policy.died(61_500).restart);
  });

  it('never restarts with a budget of 0', () => {
    const decision = new RestartPolicy(0).died(0);
    assert.equal(decision.restart, false);
    assert.match(decision.message, /not restarted automatically/);
  });
});

describe('connectionLost', () => {
  it('knows the errors of a server that went away, and nothing else', () => {
    // What vscode-languageclient 9 rejects start() with when the server exits while starting.
    assert.ok(connectionLost({ code: -32099, message: 'Cannot call write after a stream was destroyed' }));
    assert.ok(connectionLost({ code: -32097, message: 'Pending response rejected since connection got disposed' }));
    assert.ok(connectionLost({ code: -32096, message: 'Client is not running' }));
    // A spawn failure (no close follows) and a server's own error answer are not.
    assert.ok(!connectionLost(new Error('Launching server using command x failed. Error: spawn x EACCES')));
    assert.ok(!connectionLost({ code: -32603, message: 'Internal error' }));
    assert.ok(!connectionLost(undefined));
  });
});
