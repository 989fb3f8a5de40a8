import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { describeAdapt, isServerStatus, StatusModel } from '../src/status';

describe('StatusModel', () => {
  it('takes rewrite instructions only when the ready status says instructions: true', () => {
    const status = new StatusModel();
    assert.equal(status.takesInstructions, false);
    status.serverStatus({ state: 'ready', model: 'embedded', message: '', instructions: false });
    assert.equal(status.takesInstructions, false);
    status.serverStatus({ state: 'ready', model: 'embedded', message: '' });
    assert.equal(status.takesInstructions, false, 'absent means no');
    status.serverStatus({ state: 'ready', model: '/dgemma', message: '', instructions: true });
    assert.equal(status.takesInstructions, true);
    status.serverStatus({ state: 'loading', model: '/dgemma', message: '' });
    assert.equal(status.takesInstructions, false, 'not while loading');
    assert.equal(isServerStatus({ state: 'ready', model: 'm', message: '', instructions: 'yes' }), false);
  });

  it('shows the last suggestion\'s fillConfidence in the ready tooltip, nothing when unknown', () => {
    const status = new StatusModel();
    status.serverStatus({ state: 'ready', model: 'embedded', message: '' });
    status.suggestion(0.4249);
    assert.equal(status.fillConfidence, 0.4249);
    assert.equal(status.view().tooltip, 'Ready (embedded)\nLast suggestion: 42% likely right\nClick to show the log.');
    status.suggestion(0.001);
    assert.match(status.view().tooltip, /Last suggestion: <1% likely right/);
    status.suggestion(null);
    assert.equal(status.view().tooltip, 'Ready (embedded)\nClick to show the log.');
    status.suggestion(0.9);
    status.stopped();
    assert.equal(status.fillConfidence, null, 'forgotten when the server stops');
  });

  it('shows the workspace adaptation and its held-out figures in the ready tooltip', () => {
    const status = new StatusModel();
    status.serverStatus({ state: 'ready', model: 'embedded', message: '',
      adapt: { state: 'adopted', before: 0.04, after: 0.075, holes: 200 } });
    assert.equal(status.view().tooltip,
      'Ready (embedded)\nAdapted to this workspace: held-out lines 4.0% → 7.5% exact\nClick to show the log.');
    assert.equal(describeAdapt({ state: 'rejected', before: 0.05, after: 0.045 }),
      'Workspace adaptation not used: held-out lines 5.0% → 4.5% exact');
    assert.equal(describeAdapt({ state: 'training', before: 0.05 }),
      'Adapting to this workspace (held-out lines 5.0% exact before)');
    status.serverStatus({ state: 'ready', model: 'embedded', message: '' });
    assert.equal(status.view().tooltip, 'Ready (embedded)\nClick to show the log.', 'setting off: nothing shown');
  });

  it('goes starting -> loading -> ready', () => {
    const status = new StatusModel();
    assert.equal(status.current, 'starting');
    assert.match(status.view().text, /loading~spin/);
    status.running();
    assert.equal(status.current, 'loading');
    status.serverStatus({ state: 'loading', model: 'embedded', message: 'Loading weights' });
    assert.match(status.view().tooltip, /Loading the model \(embedded\)\nLoading weights/);
    status.serverStatus({ state: 'ready', model: 'embedded', message: '' });
    assert.equal(status.current, 'ready');
    assert.deepEqual(status.view(), {
      text: '$(sparkle) Diffusion',
      tooltip: 'Ready (embedded)\nClick to show the log.',
      severity: 'normal',
    });
  });

  it('does not fall back to loading when the client reports running after the server said ready', () => {
    const status = new StatusModel();
    status.serverStatus({ state: 'ready', model: 'm', message: '' });
    status.running();
    assert.equal(status.current, 'ready');
  });

  it('shows a server error with its message in red', () => {
    const status = new StatusModel();
    status.serverStatus({ state: 'error', model: '/ckpt', message: 'no config.json' });
    const view = status.view();
    assert.equal(view.severity, 'error');
    assert.match(view.text, /\$\(error\)/);
    assert.match(view.tooltip, /no config\.json/);
  });

  it('keeps an error visible when the process then stops', () => {
    const status = new StatusModel();
    status.failed('spawn EACCES');
    status.stopped();
    assert.equal(status.current, 'error');
    assert.match(status.view().tooltip, /spawn EACCES/);
  });

  it('shows a server that died in red with what happens next, and its restart clears it', () => {
    const status = new StatusModel();
    status.serverStatus({ state: 'ready', model: 'm', message: '' });
    status.died('The server died; restarting it (attempt 1 of 3).');
    status.stopped();
    assert.equal(status.current, 'error');
    assert.equal(status.view().severity, 'error');
    assert.match(status.view().tooltip, /died; restarting it \(attempt 1 of 3\)/);
    status.starting();
    status.running();
    assert.equal(status.current, 'loading');
  });

  it('shows a plain stop as a warning, and a restart clears it', () => {
    const status = new StatusModel();
    status.serverStatus({ state: 'ready', model: 'm', message: '' });
    status.stopped();
    assert.equal(status.view().severity, 'warning');
    status.starting();
    status.running();
    assert.equal(status.current, 'loading');
  });

  it('says when the server is not installed', () => {
    const status = new StatusModel();
    status.notInstalled('diffusion-lsp was not found');
    status.stopped();
    assert.equal(status.current, 'notInstalled');
    assert.match(status.view().tooltip, /Not installed\ndiffusion-lsp was not found/);
  });
});

describe('isServerStatus', () => {
  it('accepts the documented shape', () => {
    assert.ok(isServerStatus({ state: 'ready', model: 'embedded', message: '' }));
  });
  it('rejects other states and shapes', () => {
    assert.ok(!isServerStatus({ state: 'done', model: 'x', message: '' }));
    assert.ok(!isServerStatus({ state: 'ready', model: 3 }));
    assert.ok(!isServerStatus(null));
    assert.ok(!isServerStatus('ready'));
  });
});
