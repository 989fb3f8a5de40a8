-- Plugin logic without a server: rendering, positions, options, drafts, actions, and the
-- ghost-text state machine and keys driven with synthetic suggestions.

local here = debug.getinfo(1, 'S').source:sub(2)
local root = vim.fn.fnamemodify(here, ':p:h:h')
vim.opt.rtp:append(root)
package.path = root .. '/tests/?.lua;' .. package.path

local H = require('helpers')
local api = vim.api
local actions = require('diffusion_lsp.actions')
local config = require('diffusion_lsp.config')
local draft = require('diffusion_lsp.draft')
local ghost = require('diffusion_lsp.ghost')
local position = require('diffusion_lsp.position')
local render = require('diffusion_lsp.render')

local ns = api.nvim_create_namespace('diffusion_lsp_test')

local function at(row, col)
  return { start = { row, col }, ['end'] = { row, col } }
end

local function scratch(lines)
  vim.cmd('enew!')
  local bufnr = api.nvim_get_current_buf()
  vim.bo[bufnr].buftype = 'nofile'
  api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  return bufnr
end

local function only_mark(bufnr, namespace)
  local marks = H.marks(bufnr, namespace)
  H.eq(1, #marks, 'number of extmarks')
  return marks[1]
end

local function text_of(chunks)
  local parts = {}
  for _, chunk in ipairs(chunks) do
    parts[#parts + 1] = chunk[1]
  end
  return table.concat(parts)
end

-- render -------------------------------------------------------------------------------

H.test('render: insertion at the end of a line overlays the first line, the rest as virtual lines', function()
  local bufnr = scratch({ 'def f(x):', '    return ' })
  render.show(bufnr, ns, { start = { 1, 11 }, ['end'] = { 1, 11 } }, render.text_lines('x + 1\nprint(x)', 'DiffusionGhost'))
  local mark = only_mark(bufnr, ns)
  H.eq({ 1, 11 }, { mark[2], mark[3] }, 'extmark position')
  if render.has_inline then
    return
  end
  H.eq('overlay', mark[4].virt_text_pos, 'virt_text_pos')
  H.eq({ { 'x + 1', 'DiffusionGhost' } }, mark[4].virt_text, 'first line')
  H.eq({ { { 'print(x)', 'DiffusionGhost' } } }, mark[4].virt_lines, 'other lines')
end)

H.test('render: insertion mid-line repeats the rest of the line after the ghost text', function()
  local bufnr = scratch({ 'print()' })
  render.show(bufnr, ns, { start = { 0, 6 }, ['end'] = { 0, 6 } }, render.text_lines('"hi"', 'G'))
  local mark = only_mark(bufnr, ns)
  if render.has_inline then
    H.eq('inline', mark[4].virt_text_pos, 'virt_text_pos')
    return
  end
  H.eq({ { '"hi"', 'G' }, { ')', 'Normal' } }, mark[4].virt_text, 'overlay')
end)

H.test('render: multi-line insertion mid-line moves the rest of the line to the last virtual line', function()
  local bufnr = scratch({ 'x = f(yyy)' })
  render.show(bufnr, ns, { start = { 0, 6 }, ['end'] = { 0, 6 } }, render.text_lines('a,\n  b', 'G'))
  local mark = only_mark(bufnr, ns)
  H.eq({ { 'a,', 'G' }, { '  ', 'Normal' } }, mark[4].virt_text, 'first line covers the old tail')
  H.eq({ { { '  b', 'G' }, { 'yyy)', 'Normal' } } }, mark[4].virt_lines, 'tail on the last line')
end)

H.test('render: text already typed is not redrawn, replaced text is covered', function()
  local bufnr = scratch({ 'retu = 1' })
  -- The item replaces "retu = 1" (start of line) with "return 1".
  render.show(bufnr, ns, { start = { 0, 0 }, ['end'] = { 0, 8 } }, render.text_lines('return 1', 'G'))
  local mark = only_mark(bufnr, ns)
  H.eq(4, mark[3], 'overlay starts after the common prefix "retu"')
  H.eq('rn 1', text_of(mark[4].virt_text), 'overlay text')
end)

H.test('render: a shorter replacement is padded so no old text shows through', function()
  local bufnr = scratch({ 'abcdef' })
  render.show(bufnr, ns, { start = { 0, 0 }, ['end'] = { 0, 6 } }, render.text_lines('xy', 'G'))
  local mark = only_mark(bufnr, ns)
  H.eq('xy    ', text_of(mark[4].virt_text), 'padded overlay')
end)

H.test('render: tabs expand to the buffer tabstop and multibyte text keeps its columns', function()
  local bufnr = scratch({ 'é = 1', '' })
  vim.bo[bufnr].tabstop = 4
  render.show(bufnr, ns, { start = { 0, #'é = 1' }, ['end'] = { 0, #'é = 1' } }, render.text_lines('\t# ü\n\tz', 'G'))
  local mark = only_mark(bufnr, ns)
  H.eq('   # ü', text_of(mark[4].virt_text), 'tab from display column 5 to 8')
  H.eq('    z', text_of(mark[4].virt_lines[1]), 'tab at column 0')
  H.eq({ 'a', 'b' }, { render._expand_tabs({ { 'a', 'X' } }, 0, 8)[1][1], 'b' }, 'no tab, no change')
  H.eq(2, render._common_prefix('éa', 'éb'), 'common prefix in bytes')
  H.eq(0, render._common_prefix('é', '\xc3\xa8'), 'no split inside a character')
end)

H.test('render: empty lines and an empty first line are drawn', function()
  local bufnr = scratch({ 'x' })
  render.show(bufnr, ns, { start = { 0, 1 }, ['end'] = { 0, 1 } }, render.text_lines('\n\ny', 'G'))
  local mark = only_mark(bufnr, ns)
  H.eq(2, #mark[4].virt_lines, 'virtual lines')
  H.eq('y', text_of(mark[4].virt_lines[2]), 'last line')
  render.clear(bufnr, ns)
  H.eq(0, #H.marks(bufnr, ns), 'cleared')
end)

-- positions ----------------------------------------------------------------------------

H.test('position: byte columns and UTF-16 / UTF-32 characters convert both ways', function()
  local bufnr = scratch({ 'a😀b = "é"', '' })
  local col_b = #'a😀'
  H.eq({ line = 0, character = 3 }, position.to_lsp(bufnr, 0, col_b, 'utf-16'), 'utf-16')
  H.eq({ line = 0, character = 2 }, position.to_lsp(bufnr, 0, col_b, 'utf-32'), 'utf-32')
  H.eq({ line = 0, character = col_b }, position.to_lsp(bufnr, 0, col_b, 'utf-8'), 'utf-8')
  H.eq({ 0, col_b }, { position.from_lsp(bufnr, { line = 0, character = 3 }, 'utf-16') }, 'from utf-16')
  H.eq({ 0, col_b }, { position.from_lsp(bufnr, { line = 0, character = 2 }, 'utf-32') }, 'from utf-32')
  local line = api.nvim_buf_get_lines(bufnr, 0, 1, false)[1]
  H.eq({ 0, #line }, { position.from_lsp(bufnr, { line = 0, character = 99 }, 'utf-16') }, 'clamped')
  H.eq({ 1, 0 }, { position.from_lsp(bufnr, { line = 1, character = 0 }, 'utf-16') }, 'empty line')
end)

-- options ------------------------------------------------------------------------------

H.test('position: a carriage return LSP counts as a line break and Neovim does not is found', function()
  local bufnr = scratch({ 'a = 1\r', 'b = "x\ry"', 'c = 3' })
  H.eq(1, position.stray_cr(bufnr), 'unix: inside a line (one at its end goes out as \\r\\n, one break)')
  api.nvim_buf_set_lines(bufnr, 1, 2, false, { 'b = 2' })
  H.eq(nil, position.stray_cr(bufnr), 'unix: only at line ends')
  vim.bo[bufnr].fileformat = 'dos'
  H.eq(0, position.stray_cr(bufnr), 'dos: anywhere (the line goes out as "a = 1\\r\\r\\n")')
  vim.bo[bufnr].fileformat = 'unix'
end)

H.test('config: user options merge over the defaults, settings become camelCase', function()
  local opts = config.merge({ cmd = '/x/diffusion-lsp', keys = { accept = '<C-y>' }, filetypes = { 'python' },
    settings = { max_hole_tokens = 32, steps = 8 } })
  H.eq({ '/x/diffusion-lsp' }, opts.cmd, 'cmd string becomes a list')
  H.eq('<C-y>', opts.keys.accept, 'overridden key')
  H.eq('<S-Tab>', opts.keys.accept_line, 'default key kept')
  H.eq({ 'python' }, opts.filetypes, 'lists replace')
  H.eq({ maxHoleTokens = 32, steps = 8, drafts = true }, config.server_settings(opts), 'server settings')
  H.eq(false, config.server_settings(config.merge({ drafts = false })).drafts, 'drafts option')
  H.eq(false, config.server_settings(config.merge({ settings = { drafts = false } })).drafts, 'drafts setting wins')
  H.eq({ minConfidence = 0.3, namesRule = false, maxAlternatives = 5, drafts = true },
    config.server_settings(config.merge({ settings = { min_confidence = 0.3, names_rule = false, maxAlternatives = 5 } })),
    'the trust settings pass through')
  H.eq(vim.NIL, config.server_settings(config.merge({ settings = { minConfidence = vim.NIL } })).minConfidence,
    'vim.NIL sends null (the calibrated bar)')
end)

H.test('config: the command resolves on PATH, then in .venv, else reports where it looked', function()
  H.eq({ 'sh', '-c' }, config.resolve_cmd({ 'sh', '-c' }, '/'), 'on PATH')
  -- a name that is surely not on $PATH, so the .venv lookup is what finds it
  local dir = H.workspace({ ['.venv/bin/diffusion-lsp-venv-only'] = '#!/bin/sh' })
  vim.fn.setfperm(dir .. '/.venv/bin/diffusion-lsp-venv-only', 'rwxr-xr-x')
  H.eq({ dir .. '/.venv/bin/diffusion-lsp-venv-only', '-v' },
    config.resolve_cmd({ 'diffusion-lsp-venv-only', '-v' }, dir), 'in .venv')
  local cmd, looked = config.resolve_cmd({ 'no-such-diffusion-lsp' }, '/nowhere', '/checkout')
  H.eq(nil, cmd, 'not found')
  H.eq({ 'no-such-diffusion-lsp (on $PATH)', '/nowhere/.venv/bin/no-such-diffusion-lsp',
    '/nowhere/venv/bin/no-such-diffusion-lsp', '/checkout/.venv/bin/no-such-diffusion-lsp' }, looked,
    'places looked at')
end)

H.test("config: by default the server is found in the .venv of the plugin's own checkout", function()
  -- the plugin is <checkout>/editor-clients/neovim; scripts/setup.sh makes <checkout>/.venv
  H.eq(vim.fn.fnamemodify(root, ':h:h'), config.checkout, 'checkout of the plugin')
  local checkout = H.workspace({ ['.venv/bin/diffusion-lsp-checkout-only'] = '#!/bin/sh' })
  vim.fn.setfperm(checkout .. '/.venv/bin/diffusion-lsp-checkout-only', 'rwxr-xr-x')
  H.eq({ checkout .. '/.venv/bin/diffusion-lsp-checkout-only' },
    config.resolve_cmd({ 'diffusion-lsp-checkout-only' }, '/elsewhere', checkout), 'found from any working directory')
  H.eq(config.defaults.cmd, config.merge({}).cmd, 'default command')
end)

H.test('config: the root is the nearest folder above the file with a project marker, else none', function()
  local dir = H.workspace({ ['proj/.git/HEAD'] = 'ref: refs/heads/main', ['proj/b.py'] = 'x = 1',
    ['proj/pkg/pyproject.toml'] = '[project]', ['proj/pkg/src/a.py'] = 'y = 2',
    ['proj/web/package.json'] = '{}', ['proj/web/src/ü é.ts'] = 'let z = 3;', ['loose/c.py'] = '' })
  dir = vim.fn.resolve(dir)
  H.eq(dir .. '/proj/pkg', config.project_root(dir .. '/proj/pkg/src/a.py'), 'the nearest package')
  H.eq(dir .. '/proj/web', config.project_root(dir .. '/proj/web/src/ü é.ts'), 'a path with spaces and accents')
  H.eq(dir .. '/proj', config.project_root(dir .. '/proj/b.py'), 'the repository')
  H.eq(dir .. '/proj', config.project_root(dir .. '/proj/new-file.py'), 'a file not saved yet')
  H.eq(nil, config.project_root(dir .. '/loose/c.py'), 'no marker above (the working directory is used)')
  H.eq(nil, config.project_root(''), 'an unnamed buffer')
  H.eq(nil, config.project_root('fugitive://' .. dir .. '/proj/.git//0/b.py'), 'a URI')
  -- the server's folder: the working directory where the user works in a project, else the file's project
  H.eq(dir .. '/proj', config.root_for(dir .. '/proj/pkg/src/a.py', dir .. '/proj'), 'a subpackage of the project')
  H.eq(dir .. '/proj/web', config.root_for(dir .. '/proj/web/src/ü é.ts', dir .. '/proj/pkg'), 'a file elsewhere')
  H.eq(dir .. '/proj/pkg', config.root_for(dir .. '/proj/pkg/src/a.py', dir), 'a working directory that is no project')
  H.eq(dir .. '/proj', config.root_for(dir .. '/proj/b.py', dir .. '/'), 'a working directory with its slash')
  H.eq(dir .. '/loose', config.root_for(dir .. '/loose/c.py', dir .. '/loose'), 'no project: the working directory')
  H.eq(dir, config.root_for('', dir), 'an unnamed buffer')
  vim.loop.fs_symlink(dir .. '/proj', dir .. '/link')   -- the working directory through a link: the same project
  H.eq(dir .. '/link', config.root_for(dir .. '/proj/pkg/src/a.py', dir .. '/link'), 'a linked working directory')
end)

-- drafts -------------------------------------------------------------------------------

H.test('draft: tokens become shaded chunks split at line breaks', function()
  H.eq('high', draft.bucket({ text = 'x', confidence = 0.8 }), '0.8')
  H.eq('medium', draft.bucket({ text = 'x', confidence = 0.4 }), '0.4')
  H.eq('low', draft.bucket({ text = 'x', confidence = 0.39 }), '0.39')
  H.eq('masked', draft.bucket({ text = '▒', confidence = 0.9 }), 'mask glyph')
  H.eq('masked', draft.bucket({ text = 'x', confidence = 0 }), 'zero')
  local lines = draft.lines({ text = '', tokens = {
    { text = 'return', confidence = 0.97 }, { text = ' a', confidence = 0.81 },
    { text = ' +\n', confidence = 0.55 }, { text = '  ▒', confidence = 0 }, { text = '\r\n', confidence = 0.9 },
  } })
  H.eq({
    { { 'return a', 'DiffusionDraftHigh' }, { ' +', 'DiffusionDraftMedium' } },
    { { '  ▒', 'DiffusionDraftMasked' } },
    {},
  }, lines, 'lines')
  H.eq({ { { 'x = ', 'DiffusionDraftMedium' }, { '▒▒', 'DiffusionDraftMasked' } } },
    draft.lines({ text = 'x = ▒▒' }), 'text without tokens')
end)

H.test('draft: the handler paints the current draft, skips stale ones, clears on done', function()
  local bufnr = scratch({ 'def f():', '    ' })
  local saved = draft.buffers
  draft.buffers = function()
    return { bufnr }
  end
  local uri = vim.uri_from_bufnr(bufnr)
  local version = 5
  vim.lsp.util.buf_versions[bufnr] = version
  local function send(id, step, done, text)
    draft.handler(nil, { uri = uri, version = version, id = id, step = step, done = done,
      range = { start = { line = 1, character = 4 }, ['end'] = { line = 1, character = 4 } },
      text = text, tokens = { { text = text, confidence = 0.5 } } }, { client_id = -1 })
  end
  send('7', 1, false, 'pass ▒')
  local mark = only_mark(bufnr, draft.ns)
  H.eq({ 1, 4 }, { mark[2], mark[3] }, 'at the range')
  send('7', 3, false, 'return 1')
  H.eq('return 1', text_of(only_mark(bufnr, draft.ns)[4].virt_text), 'newer step shown')
  send('7', 2, false, 'older step')
  H.eq('return 1', text_of(only_mark(bufnr, draft.ns)[4].virt_text), 'older step ignored')
  send('6', 9, false, 'older request')
  H.eq('return 1', text_of(only_mark(bufnr, draft.ns)[4].virt_text), 'older request ignored')
  H.ok(draft.visible(bufnr), 'visible')
  send('7', 4, true, 'return 1')
  H.eq(0, #H.marks(bufnr, draft.ns), 'cleared on done')
  send('7', 5, false, 'late')
  H.eq(0, #H.marks(bufnr, draft.ns), 'nothing after done')
  draft.handler(nil, { uri = uri, version = (version or 0) + 1000, id = '8', step = 1, done = false,
    range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } }, text = 'x' },
    { client_id = -1 })
  H.eq(0, #H.marks(bufnr, draft.ns), 'other document version ignored')
  draft.buffers = saved
end)

H.test('draft: only a final draft with a suggestion sets the last suggestion\'s confidence', function()
  local bufnr = scratch({ 'def f():', '    ' })
  local saved = draft.buffers
  draft.buffers = function()
    return { bufnr }
  end
  local status = require('diffusion_lsp.status')
  status.handler(nil, { state = 'ready', model = 'embedded', message = '' }, { client_id = 9100 })
  local uri = vim.uri_from_bufnr(bufnr)
  vim.lsp.util.buf_versions[bufnr] = 3
  local function send(id, step, text, confidence)
    draft.handler(nil, { uri = uri, version = 3, id = id, step = step, done = true, fillConfidence = confidence,
      range = { start = { line = 1, character = 4 }, ['end'] = { line = 1, character = 4 } }, text = text,
      tokens = {} }, { client_id = 9100 })
  end
  send('20', 4, 'return 1', 0.42)
  H.eq(0.42, status.get(9100).confidence, 'an answered suggestion')
  send('21', 2, '') -- the next request was cancelled: its final draft only clears what was painted
  H.eq(0.42, status.get(9100).confidence, 'kept after a request ended without a suggestion')
  send('22', 5, 'return 2', 0.1)
  H.eq(0.1, status.get(9100).confidence, 'the next suggestion')
  draft.buffers = saved
end)

H.test('draft: drawn where the final text lands: one-line fills cut at their end, trailing breaks dropped, a regenerated fragment in place', function()
  local bufnr = scratch({ 'def f(path):', '    return su', '', 'for w in ws:', '    ', 'x = 1' })
  local function place(range, text, kind)
    local r, tokens = draft.place(bufnr, range, { { text = text, confidence = 0.5 } }, kind)
    local parts = {}
    for _, t in ipairs(tokens) do
      parts[#parts + 1] = t.text
    end
    return r, table.concat(parts)
  end
  -- One-line hole (code before the cursor): the draft is cut where the server cuts the fill.
  local r, text = place(at(1, 13), 'm(path)\n    ▒▒▒▒')
  H.eq('m(path)', text, 'cut at the line break')
  H.eq(at(1, 13), r, 'at the cursor')
  -- The typed fragment "su" regenerated: the draft starts with it, so it starts where it does.
  r, text = place(at(1, 13), 'sum(path)')
  H.eq({ start = { 1, 11 }, ['end'] = { 1, 13 } }, r, 'starts at the fragment')
  H.eq('sum(path)', text, 'text')
  render.show(bufnr, ns, r, draft.lines({ tokens = { { text = text, confidence = 0.5 } } }))
  local mark = only_mark(bufnr, ns)
  H.eq(13, mark[3], 'drawn from the cursor: the fragment is already on screen')
  H.eq('m(path)', text_of(mark[4].virt_text), 'what is drawn')
  render.clear(bufnr, ns)
  -- A continuation that does not repeat the fragment stays at the cursor.
  r = place(at(1, 13), 'itable(path)')
  H.eq(at(1, 13), r, 'continuation')
  -- Block hole (blank line after a ':' header): several lines kept, a trailing break dropped.
  r, text = place(at(4, 4), 'w = 1\n    n += 1\n')
  H.eq('w = 1\n    n += 1', text, 'block draft')
  H.ok(draft.multiline(bufnr, at(4, 4)), 'block')
  H.ok(not draft.multiline(bufnr, at(2, 0)), 'blank line after code that opens nothing: one line')
  H.ok(draft.multiline(bufnr, at(2, 0), 'block'), "the server's kind wins")
  H.ok(not draft.multiline(bufnr, at(4, 4), 'line'), "the server's kind wins (line)")
end)

H.test('draft: a later draft replaces the earlier one, an empty one clears it, and so does an empty answer', function()
  local bufnr = scratch({ 'def f(x):', '    return ' })
  ghost.detach(bufnr)
  ghost.attach(bufnr, -1)
  local saved = draft.buffers
  draft.buffers = function()
    return { bufnr }
  end
  ghost.on_change(function(b, event)
    if event == 'result' then
      draft.clear(b)
    end
  end)
  local uri = vim.uri_from_bufnr(bufnr)
  vim.lsp.util.buf_versions[bufnr] = 3
  local function send(step, text)
    draft.handler(nil, { uri = uri, version = 3, id = '40', step = step, done = false,
      range = { start = { line = 1, character = 11 }, ['end'] = { line = 1, character = 11 } },
      text = text, tokens = { { text = text, confidence = 0.5 } } }, { client_id = -1 })
  end
  send(8, 'x +▒\n')
  local mark = only_mark(bufnr, draft.ns)
  H.eq(nil, mark[4].virt_lines, 'the first length: no extra virtual line for its trailing break')
  send(9, 'x + 1\n    ▒▒▒▒')
  mark = only_mark(bufnr, draft.ns)
  H.eq(nil, mark[4].virt_lines, 'the second length replaces it, one line, no virtual line at column 0')
  H.eq('x + 1', text_of(mark[4].virt_text):gsub('%s+$', ''), 'its text')
  send(10, '')
  H.eq(0, #H.marks(bufnr, draft.ns), 'an empty draft clears')
  send(11, 'x')
  H.ok(draft.visible(bufnr), 'painted again')
  -- The request ends with no item: nothing is shown, the draft goes.
  api.nvim_win_set_cursor(0, { 2, 11 })
  H.feed('A')
  local st_result = ghost.items_from_result(bufnr, { items = {} }, { row = 1, col = 11, encoding = 'utf-16' })
  H.eq(0, #st_result, 'no items')
  ghost._on_result(bufnr, nil, { items = {} }, { tick = api.nvim_buf_get_changedtick(bufnr), row = 1, col = 11,
    encoding = 'utf-16' })
  H.eq(0, #H.marks(bufnr, draft.ns), 'no draft left after an empty answer')
  H.ok(not ghost.visible(bufnr), 'no ghost')
  H.feed('<Esc>')
  draft.buffers = saved
end)

-- actions ------------------------------------------------------------------------------

H.test('actions: each command finds its server action by data.action, else by kind, never by title', function()
  -- As the server sends them today: plain kinds, data.action (titles deliberately misleading).
  local today = {
    { title = 'Fill 3 holes', kind = 'refactor.rewrite', data = { action = 'rewriteSelection' } },
    { title = 'Rewrite selection', kind = 'refactor.rewrite', data = { action = 'fillHoles' } },
    { title = 'x', kind = 'refactor.rewrite', data = { action = 'completeBody' } },
    { title = 'y', kind = 'quickfix', data = { action = 'fixSyntax' } },
  }
  H.eq('Fill 3 holes', actions.pick(today, 'rewrite').title, 'rewrite by data')
  H.eq('Rewrite selection', actions.pick(today, 'fill_holes').title, 'fill by data')
  H.eq('x', actions.pick(today, 'complete_body').title, 'body by data')
  H.eq('y', actions.pick(today, 'fix_syntax').title, 'fix by data')
  -- Without resolve support the data is the argument of diffusion.runAction.
  local commanded = { { title = 'z', kind = 'refactor.rewrite',
    command = { command = 'diffusion.runAction', title = 'z', arguments = { { action = 'completeBody' } } } } }
  H.eq('z', actions.pick(commanded, 'complete_body').title, 'by the command argument')
  H.eq(nil, actions.pick(commanded, 'fill_holes'), 'another action in the argument')
  -- The kinds the server will send, without data.
  local kinds = {
    { title = 'a', kind = 'refactor.rewrite.rewriteSelection' },
    { title = 'b', kind = 'refactor.rewrite.fillHoles' },
    { title = 'c', kind = 'refactor.rewrite.completeBody' },
    { title = 'd', kind = 'quickfix' },
  }
  H.eq('a', actions.pick(kinds, 'rewrite').title, 'rewrite by kind')
  H.eq('b', actions.pick(kinds, 'fill_holes').title, 'fill by kind')
  H.eq('c', actions.pick(kinds, 'complete_body').title, 'body by kind')
  H.eq('d', actions.pick(kinds, 'fix_syntax').title, 'fix by kind')
  H.eq(nil, actions.pick({ { title = 'Fill 1 hole', kind = 'refactor.rewrite' } }, 'fill_holes'), 'a title alone is not enough')
  H.eq(nil, actions.pick({ { title = 'f', kind = 'quickfix', data = { action = 'other' } } }, 'fix_syntax'),
    'data naming another action wins over the kind')
  H.eq(nil, actions.pick(nil, 'rewrite'), 'no actions')
end)

H.test('actions: command ranges cover whole lines, or the exact characterwise selection', function()
  local bufnr = scratch({ 'one', 'twö', 'three' })
  H.eq({ start = { 0, 0 }, ['end'] = { 2, 0 } }, actions.command_range(bufnr, 1, 2), 'lines 1-2')
  H.eq({ start = { 1, 0 }, ['end'] = { 2, 5 } }, actions.command_range(bufnr, 2, 3), 'to the end of the buffer')
  api.nvim_win_set_cursor(0, { 1, 1 })
  H.feed('vj$<Esc>')
  H.eq({ start = { 0, 1 }, ['end'] = { 1, #'twö' } }, actions.command_range(bufnr, 1, 2), 'characterwise, multibyte last')
  local range = { start = { line = 0, character = 0 }, ['end'] = { line = 1, character = 0 } }
  H.eq({ uri = 'file:///a.py', version = 3, range = range, instruction = 'use a loop' },
    actions.rewrite_argument('file:///a.py', 3, range, '  use a loop '), 'with instruction')
  H.eq({ uri = 'file:///a.py', version = 3, range = range }, actions.rewrite_argument('file:///a.py', 3, range, ' '), 'blank')
end)

-- ghost text ---------------------------------------------------------------------------

local dl = require('diffusion_lsp')
dl.options = config.merge({})

local function ghost_buffer(lines)
  local bufnr = scratch(lines)
  ghost.detach(bufnr)
  ghost.attach(bufnr, -1) -- no client: requests are not sent, suggestions are synthetic
  return bufnr
end


H.test('ghost: accept inserts the suggestion where it belongs and puts the cursor after it', function()
  local bufnr = ghost_buffer({ 'def f(x):', '    return ', 'print(f(1))' })
  api.nvim_win_set_cursor(0, { 2, 11 })
  H.feed('A')
  ghost.show(bufnr, at(1, 11), 'x + 1\n# done')
  H.ok(ghost.visible(bufnr), 'visible')
  local mark = only_mark(bufnr, ghost.ns)
  H.eq({ 1, 11 }, { mark[2], mark[3] }, 'at the cursor')
  H.ok(ghost.accept(bufnr), 'accepted')
  H.eq({ 'def f(x):', '    return x + 1', '# done', 'print(f(1))' }, H.lines(bufnr), 'buffer')
  H.eq({ 3, 6 }, api.nvim_win_get_cursor(0), 'cursor after the text')
  H.feed('<Esc>')
  H.eq(0, #H.marks(bufnr, ghost.ns), 'ghost gone')
  H.eq(false, ghost.accept(bufnr), 'nothing left to accept')
end)

H.test('ghost: accept_line takes one line at a time and keeps the rest shown', function()
  local bufnr = ghost_buffer({ 'x = [', ']' })
  api.nvim_win_set_cursor(0, { 1, 5 })
  ghost.show(bufnr, at(0, 5), '1,\n    2,\n    3,')
  H.ok(ghost.accept_line(bufnr), 'first line')
  H.eq({ 'x = [1,', ']' }, H.lines(bufnr), 'after the first line')
  H.eq('\n    2,\n    3,', ghost.get(bufnr).text, 'rest')
  H.ok(ghost.accept_line(bufnr), 'second line')
  H.eq({ 'x = [1,', '    2,', ']' }, H.lines(bufnr), 'after the second line')
  H.ok(ghost.accept(bufnr), 'the rest')
  H.eq({ 'x = [1,', '    2,', '    3,', ']' }, H.lines(bufnr), 'all of it, as accept would have')
end)

H.test('ghost: a replacing item replaces exactly its range', function()
  local bufnr = ghost_buffer({ 'value = compute(1)  # keep' })
  api.nvim_win_set_cursor(0, { 1, 8 })
  ghost.show(bufnr, { start = { 0, 8 }, ['end'] = { 0, 18 } }, 'compute(2)')
  ghost.accept(bufnr)
  H.eq({ 'value = compute(2)  # keep' }, H.lines(bufnr), 'buffer')
end)

H.test('ghost: keys in insert mode accept, accept a line, dismiss, and fall through', function()
  local bufnr = ghost_buffer({ 'total = ', '' })
  dl.attached[bufnr] = -1
  vim.bo[bufnr].expandtab = false
  -- The mappings as on_attach makes them.
  for _, map in ipairs(api.nvim_buf_get_keymap(bufnr, 'i')) do
    pcall(vim.keymap.del, 'i', map.lhs, { buffer = bufnr })
  end
  local keys = dl.options.keys
  for lhs, fn in pairs({ [keys.accept] = ghost.accept, [keys.accept_line] = ghost.accept_line,
    [keys.dismiss] = ghost.dismiss }) do
    vim.keymap.set('i', lhs, function()
      if not fn(bufnr) then
        api.nvim_feedkeys(api.nvim_replace_termcodes(lhs, true, false, true), 'n', false)
      end
    end, { buffer = bufnr })
  end
  api.nvim_win_set_cursor(0, { 1, 8 })
  H.feed('A')
  ghost.show(bufnr, at(0, 8), 'a + b')
  H.feed('<Tab>')
  H.eq({ 'total = a + b', '' }, H.lines(bufnr), 'Tab accepted')
  H.feed('<Tab>')
  H.eq({ 'total = a + b\t', '' }, H.lines(bufnr), 'Tab with nothing shown types a tab')
  ghost.show(bufnr, at(0, #'total = a + b\t'), '# one\n# two')
  H.feed('<S-Tab>')
  H.eq({ 'total = a + b\t# one', '' }, H.lines(bufnr), 'S-Tab took one line')
  H.ok(ghost.visible(bufnr), 'rest still shown')
  H.feed('<C-]>')
  H.ok(not ghost.visible(bufnr), 'C-] dismissed')
  H.eq(0, #H.marks(bufnr, ghost.ns), 'no extmark left')
  H.feed('<Esc>')
  H.eq({ 'total = a + b\t# one', '' }, H.lines(bufnr), 'dismiss left the buffer alone')
end)

H.test('ghost: an item whose range does not hold the cursor is for another text: not shown, a warning says why', function()
  local bufnr = ghost_buffer({ 'def f():', '    s = "\255\254" + ', '    return s' })
  api.nvim_win_set_cursor(0, { 2, 15 })
  H.feed('A')
  local sent = { tick = api.nvim_buf_get_changedtick(bufnr), row = 1, col = 15, encoding = 'utf-16', invoked = true }
  local at_9 = { start = { line = 1, character = 9 }, ['end'] = { line = 1, character = 9 } }
  local items, elsewhere = ghost.items_from_result(bufnr, { items = {
    { insertText = 'qsize(s)', range = at_9 },
    { insertText = 'x', range = { start = { line = 1, character = 15 }, ['end'] = { line = 1, character = 15 } } },
    { insertText = 'y' },
  } }, sent)
  H.eq({ 'x', 'y' }, vim.tbl_map(function(i) return i.text end, items), 'the items at the cursor are kept')
  H.eq(1, elsewhere, 'one item for another place')
  local warned
  local notify = vim.notify
  vim.notify = function(message)
    warned = message
  end
  ghost._on_result(bufnr, nil, { items = { { insertText = 'qsize(s)', range = at_9 } } }, sent)
  vim.notify = notify
  H.ok(not ghost.visible(bufnr), 'nothing shown')
  H.ok(warned and warned:find('another place', 1, true), 'the warning says why: ' .. tostring(warned))
  H.eq({ 'def f():', '    s = "\255\254" + ', '    return s' }, H.lines(bufnr), 'buffer untouched')
  -- A regenerated fragment before the cursor, and a range that replaces text after it, hold it.
  api.nvim_buf_set_lines(bufnr, 0, -1, false, { '    ret', 'v = compute(1)' })
  items = ghost.items_from_result(bufnr, { items = {
    { insertText = 'return x', range = { start = { line = 0, character = 4 }, ['end'] = { line = 0, character = 7 } } },
  } }, { row = 0, col = 7, encoding = 'utf-16' })
  H.eq(1, #items, 'fragment kept')
  items = ghost.items_from_result(bufnr, { items = {
    { insertText = 'compute(2)', range = { start = { line = 1, character = 4 }, ['end'] = { line = 1, character = 14 } } },
  } }, { row = 1, col = 4, encoding = 'utf-16' })
  H.eq(1, #items, 'replacement kept')
  H.feed('<Esc>')
end)

H.test('ghost: keys typed ahead of Tab, or while the completion menu is open, count before accepting', function()
  -- TextChangedI waits until no typed key is pending, and the completion menu fires TextChangedP
  -- instead: Tab used to insert the suggestion at the position it was shown for, before what was
  -- typed since ("x = len(y)le", "fox(1)ob").
  local bufnr = ghost_buffer({ 'x = ' })
  dl._on_attach({ id = -1, name = 'diffusion-lsp' }, bufnr) -- the plugin's own insert-mode keys
  vim.bo[bufnr].expandtab = false
  api.nvim_win_set_cursor(0, { 1, 4 })
  H.feed('A')
  ghost.show(bufnr, at(0, 4), 'len(y)')
  H.feed('le<Tab>') -- one burst: the Tab mapping runs before any TextChangedI
  H.eq({ 'x = len(y)' }, H.lines(bufnr), 'typed the start of the suggestion, then Tab')
  H.eq({ 1, #'x = len(y)' }, api.nvim_win_get_cursor(0), 'cursor after the text')
  H.feed('<Esc>')
  api.nvim_buf_set_lines(bufnr, 0, -1, false, { 'x = ' })
  api.nvim_win_set_cursor(0, { 1, 4 })
  H.feed('A')
  ghost.show(bufnr, at(0, 4), 'len(y)')
  H.feed('q<Tab>')
  H.eq({ 'x = q\t' }, H.lines(bufnr), 'typed something else: Tab is a Tab, the suggestion is gone')
  H.ok(not ghost.visible(bufnr), 'dismissed')
  H.feed('<Esc>')
  -- The completion menu open (completeopt noinsert: it stays open while typing filters it).
  local saved = vim.o.completeopt
  vim.o.completeopt = 'menu,menuone,noinsert'
  api.nvim_buf_set_lines(bufnr, 0, -1, false, { 'foobar = 1', 'foobaz = 2', 'fo' })
  api.nvim_win_set_cursor(0, { 3, 2 })
  H.feed('A')
  ghost.show(bufnr, at(2, 2), 'x(1)')
  H.feed('<C-n>')
  H.feed('o')
  H.feed('b')
  H.eq(1, vim.fn.pumvisible(), 'the menu is open')
  H.feed('<Tab>')
  H.eq({ 'foobar = 1', 'foobaz = 2', 'foob\t' }, H.lines(bufnr), 'nothing inserted before the typed text')
  H.feed('<Esc>')
  api.nvim_buf_set_lines(bufnr, 0, -1, false, { 'foobar = 1', 'foobaz = 2', 'fo' })
  api.nvim_win_set_cursor(0, { 3, 2 })
  H.feed('A')
  ghost.show(bufnr, at(2, 2), 'obar + 1')
  H.feed('<C-n>')
  H.feed('o')
  H.feed('b')
  H.ok(ghost.visible(bufnr), 'typed what it says with the menu open: still shown')
  H.feed('<Tab>')
  H.eq({ 'foobar = 1', 'foobaz = 2', 'foobar + 1' }, H.lines(bufnr), 'accepted after what was typed')
  H.feed('<Esc>')
  vim.o.completeopt = saved
end)

H.test('ghost: typing what the suggestion says keeps it, typing something else drops it', function()
  local bufnr = ghost_buffer({ 'name = ' })
  ghost.configure({ auto_trigger = false })
  api.nvim_win_set_cursor(0, { 1, 7 })
  H.feed('A')
  ghost.show(bufnr, at(0, 7), '"diffusion"')
  H.feed('"di')
  H.ok(ghost.visible(bufnr), 'still shown after typing its start')
  H.eq(1, #H.marks(bufnr, ghost.ns), 'one extmark')
  H.ok(ghost.accept(bufnr), 'accept the rest')
  H.eq({ 'name = "diffusion"' }, H.lines(bufnr), 'typed part not doubled')
  ghost.show(bufnr, at(0, #'name = "diffusion"'), ' # a name')
  H.feed('x')
  H.ok(not ghost.visible(bufnr), 'dropped after a different character')
  H.feed('<Esc>')
  ghost.configure({ auto_trigger = true })
end)

H.test('ghost: moving the cursor or leaving insert mode dismisses', function()
  local bufnr = ghost_buffer({ 'a = 1', 'b = ' })
  api.nvim_win_set_cursor(0, { 2, 4 })
  H.feed('A')
  ghost.show(bufnr, at(1, 4), '2')
  H.feed('<Up>')
  H.ok(not ghost.visible(bufnr), 'cursor moved away')
  H.feed('<Down><End>')
  ghost.show(bufnr, at(1, 4), '2')
  H.feed('<Esc>')
  H.ok(not ghost.visible(bufnr), 'insert mode left')
end)

H.test('ghost: a block fill ending in a line break adds no empty line, the cursor ends after its text', function()
  local bufnr = ghost_buffer({ 'for word in words:', '    ', 'return counts' })
  api.nvim_win_set_cursor(0, { 2, 4 })
  H.feed('A')
  ghost.show(bufnr, at(1, 4), 'counts[word] += 1\n')
  local mark = only_mark(bufnr, ghost.ns)
  H.eq(nil, mark[4].virt_lines, 'no empty virtual line drawn')
  H.ok(ghost.accept(bufnr), 'accepted')
  H.eq({ 'for word in words:', '    counts[word] += 1', 'return counts' }, H.lines(bufnr), 'no stray empty line')
  H.eq({ 2, #'    counts[word] += 1' }, api.nvim_win_get_cursor(0), 'cursor at the end of the inserted text')
  -- The blank rest of the line goes too, and a break that pushes code down is kept.
  bufnr = ghost_buffer({ 'if x:', '  ', 'y = 1' })
  api.nvim_win_set_cursor(0, { 2, 1 })
  ghost.show(bufnr, at(1, 1), ' pass\n')
  ghost.accept(bufnr)
  H.eq({ 'if x:', '  pass', 'y = 1' }, H.lines(bufnr), 'blank rest replaced')
  bufnr = ghost_buffer({ 'if y:', '  ' })
  api.nvim_win_set_cursor(0, { 2, 2 })
  ghost.show(bufnr, at(1, 2), 'z()\n  ')
  H.eq('z()', ghost.get(bufnr).text, 'indentation after the last break goes too')
  ghost.dismiss(bufnr)
  ghost.show(bufnr, at(1, 2), '\n\n')
  H.ok(not ghost.visible(bufnr), 'nothing but line breaks is not shown')
  H.eq(0, #H.marks(bufnr, ghost.ns), 'and nothing drawn')
  bufnr = ghost_buffer({ 'y = 1' })
  api.nvim_win_set_cursor(0, { 1, 0 })
  ghost.show(bufnr, at(0, 0), 'x = 0\n')
  ghost.accept(bufnr)
  H.eq({ 'x = 0', 'y = 1' }, H.lines(bufnr), 'a line break before code is kept')
  H.feed('<Esc>')
end)

H.test('ghost: a CRLF document\'s fill (\\r\\n breaks, as the server writes them) goes in as lines, no \\r in the buffer', function()
  -- The server answers a CRLF document in its own line endings; the item goes through the same
  -- path as a real answer (items_from_result, show), then whole, line by line and word by word.
  local source = { 'def f(x):', '\ty = "😀"', '\tif x:', '\t\t', '\treturn y' }
  local answer = { items = { { insertText = 'cx = 0\r\n\t\tcx = 1\r\n\r\n\t\tcx = 2\r\n',
    range = { start = { line = 3, character = 2 }, ['end'] = { line = 3, character = 2 } } } } }
  local expected = { 'def f(x):', '\ty = "😀"', '\tif x:', '\t\tcx = 0', '\t\tcx = 1', '', '\t\tcx = 2', '\treturn y' }
  for _, how in ipairs({ 'accept', 'accept_line', 'accept_word' }) do
    local bufnr = ghost_buffer(source)
    vim.bo[bufnr].fileformat = 'dos'
    api.nvim_win_set_cursor(0, { 4, 2 })
    H.feed('A')
    ghost._on_result(bufnr, nil, answer, { tick = api.nvim_buf_get_changedtick(bufnr), row = 3, col = 2,
      encoding = 'utf-16' })
    H.ok(ghost.visible(bufnr), how .. ': shown')
    H.eq(nil, ghost.get(bufnr).text:find('\r'), how .. ': no \\r in the suggestion')
    for _ = 1, 20 do
      if not ghost[how](bufnr) then
        break
      end
    end
    H.eq(expected, H.lines(bufnr), how .. ': buffer')
    H.feed('<Esc>')
  end
end)

H.test('ghost: accept_word takes the next word (with its line break and indentation), the rest stays', function()
  H.eq('foo', ghost.next_word('foo.bar'), 'a word')
  H.eq('.', ghost.next_word('.bar'), 'punctuation')
  H.eq(' (', ghost.next_word(' (x)'), 'space then punctuation run')
  H.eq('\n    return', ghost.next_word('\n    return x'), 'line break and indentation')
  H.eq('naïve_x', ghost.next_word('naïve_x = 1'), 'non-ASCII letters are word characters')
  local bufnr = ghost_buffer({ 'total = ', '' })
  api.nvim_win_set_cursor(0, { 1, 8 })
  H.feed('A')
  ghost.show(bufnr, at(0, 8), 'sum(values) + 1')
  H.ok(ghost.accept_word(bufnr), 'one word')
  H.eq({ 'total = sum', '' }, H.lines(bufnr), 'after one word')
  H.eq('(values) + 1', ghost.get(bufnr).text, 'rest shown')
  H.eq({ 1, #'total = sum' }, api.nvim_win_get_cursor(0), 'cursor after the word')
  ghost.accept_word(bufnr)
  ghost.accept_word(bufnr)
  H.eq({ 'total = sum(values', '' }, H.lines(bufnr), 'word by word')
  H.ok(ghost.accept(bufnr), 'the rest')
  H.eq({ 'total = sum(values) + 1', '' }, H.lines(bufnr), 'all of it')
  H.feed('<Esc>')
end)

H.test('ghost: the answer\'s items are alternatives; next / previous cycle them, typed text still matching', function()
  local bufnr = ghost_buffer({ 'name = ' })
  ghost.configure({ auto_trigger = false })
  api.nvim_win_set_cursor(0, { 1, 7 })
  H.feed('A')
  local items = ghost.items_from_result(bufnr, { items = {
    { insertText = '"alpha"', range = { start = { line = 0, character = 7 }, ['end'] = { line = 0, character = 7 } } },
    { insertText = '"alpha"', range = { start = { line = 0, character = 7 }, ['end'] = { line = 0, character = 7 } } },
    { insertText = '' },
    { insertText = '"beta"' },
    { insertText = 'None' },
  } }, { row = 0, col = 7, encoding = 'utf-16' })
  H.eq({ '"alpha"', '"beta"', 'None' }, vim.tbl_map(function(i) return i.text end, items), 'distinct, non-empty, in order')
  ghost.set_items(bufnr, items)
  H.eq('"alpha"', ghost.get(bufnr).text, 'the best first')
  H.eq({ 1, 3 }, { ghost.alternative(bufnr) }, 'first of three')
  H.ok(ghost.cycle(bufnr, 1), 'next')
  H.eq('"beta"', ghost.get(bufnr).text, 'second')
  H.eq(1, #H.marks(bufnr, ghost.ns), 'one ghost extmark: the alternative replaced the first')
  H.ok(ghost.cycle(bufnr, 1), 'next')
  H.eq('None', ghost.get(bufnr).text, 'third')
  H.ok(ghost.cycle(bufnr, 1), 'next wraps')
  H.eq('"alpha"', ghost.get(bufnr).text, 'back to the first')
  H.ok(ghost.cycle(bufnr, -1), 'previous wraps')
  H.eq('None', ghost.get(bufnr).text, 'the last')
  -- After typing '"', only the alternatives that start with it remain.
  ghost.cycle(bufnr, 1)
  H.feed('"')
  H.ok(ghost.visible(bufnr), 'kept while typing it')
  H.ok(ghost.cycle(bufnr, 1), 'next after typing')
  H.eq('"beta"', ghost.get(bufnr).text, 'None skipped: it does not start with the typed quote')
  H.ok(ghost.accept(bufnr), 'accept')
  H.eq({ 'name = "beta"' }, H.lines(bufnr), 'typed quote not doubled')
  ghost.show(bufnr, at(0, #'name = "beta"'), ' # x')
  H.eq(false, ghost.cycle(bufnr, 1), 'a single suggestion has no alternative')
  H.feed('<Esc>')
  ghost.configure({ auto_trigger = true })
end)

H.test('ghost: the alternative keys are mapped in insert mode and fall through when there is nothing', function()
  local bufnr = ghost_buffer({ 'x = ' })
  dl.options = config.merge({ keys = { next = '<C-j>', prev = '<C-k>', accept_word = '<C-l>' } })
  dl._on_attach({ id = -1 }, bufnr)
  api.nvim_win_set_cursor(0, { 1, 4 })
  H.feed('A')
  ghost.set_items(bufnr, { { range = at(0, 4), text = '1' }, { range = at(0, 4), text = '2' } })
  H.feed('<C-j>')
  H.eq('2', ghost.get(bufnr).text, 'next key')
  H.feed('<C-k>')
  H.eq('1', ghost.get(bufnr).text, 'previous key')
  ghost.set_items(bufnr, { { range = at(0, 4), text = 'abc + d' } })
  H.feed('<C-l>')
  H.eq({ 'x = abc' }, H.lines(bufnr), 'accept-word key')
  H.feed('<Esc>')
  dl.options = config.merge({})
end)

H.test('status: :DiffusionStatus prints one clean line', function()
  local status = require('diffusion_lsp.status')
  H.eq('diffusion-lsp: ready (model embedded)',
    status.describe({ state = 'ready', model = 'embedded', message = 'embedded ready' }), 'no repeated words')
  H.eq('diffusion-lsp: loading (model /m)', status.describe({ state = 'loading', model = '/m', message = 'loading /m' }), 'loading')
  H.eq('diffusion-lsp: error (model /m): no config.json in /m',
    status.describe({ state = 'error', model = '/m', message = 'no config.json in /m' }), 'an error keeps its message')
  H.eq('diffusion-lsp: not attached to this buffer', status.describe(nil), 'no server')
  status.starting(9001)
  status.exited(9001, 0, 9, true, 'restarting in 1.0 s (attempt 1 of 3)')
  H.eq('failed', status.get(9001).state, 'a dead server is failed')
  H.eq('diffusion ✗', status.statusline(9001), 'statusline mark')
  H.eq('diffusion-lsp: failed: the server died (killed by signal 9); restarting in 1.0 s (attempt 1 of 3)',
    status.describe(status.get(9001)), 'says why and what next')
  status.exited(9002, 0, 0, false)
  H.eq('diffusion ■', status.statusline(9002), 'stopped on request')
end)

H.test('status: :DiffusionStatus shows the workspace adaptation and its held-out figures', function()
  local status = require('diffusion_lsp.status')
  status.handler(nil, { state = 'ready', model = 'embedded', message = '',
    adapt = { state = 'adopted', before = 0.04, after = 0.075, holes = 200 } }, { client_id = 9020 })
  H.eq('diffusion-lsp: ready (model embedded); adapted to this workspace: held-out lines 4.0% -> 7.5% exact',
    status.describe(status.get(9020)), 'adopted')
  H.eq('workspace adaptation not used: held-out lines 5.0% -> 4.5% exact',
    status.describe_adapt({ state = 'rejected', before = 0.05, after = 0.045 }), 'rejected')
  status.handler(nil, { state = 'ready', model = 'embedded', message = '' }, { client_id = 9020 })
  H.eq('diffusion-lsp: ready (model embedded)', status.describe(status.get(9020)), 'setting off: nothing')
end)

H.test('status: rewrite instructions only when ready says so; the last fillConfidence in :DiffusionStatus', function()
  local status = require('diffusion_lsp.status')
  H.eq(false, status.takes_instructions(9010), 'unknown client')
  status.handler(nil, { state = 'ready', model = 'embedded', message = 'embedded ready', instructions = false }, { client_id = 9010 })
  H.eq(false, status.takes_instructions(9010), 'instructions: false')
  status.handler(nil, { state = 'ready', model = 'embedded', message = '' }, { client_id = 9010 })
  H.eq(false, status.takes_instructions(9010), 'absent means no')
  status.handler(nil, { state = 'ready', model = '/dg', message = '', instructions = true }, { client_id = 9011 })
  H.eq(true, status.takes_instructions(9011), 'instructions: true')
  status.handler(nil, { state = 'loading', model = '/dg', message = '', instructions = true }, { client_id = 9011 })
  H.eq(false, status.takes_instructions(9011), 'not while loading')
  status.suggestion(9010, 0.4249)
  H.eq('diffusion-lsp: ready (model embedded); last suggestion 42% likely right', status.describe(status.get(9010)), 'with confidence')
  status.suggestion(9010, 0.001)
  H.eq('diffusion-lsp: ready (model embedded); last suggestion <1% likely right', status.describe(status.get(9010)), 'tiny')
  status.suggestion(9010, vim.NIL)
  H.eq('diffusion-lsp: ready (model embedded)', status.describe(status.get(9010)), 'unknown confidence: nothing shown')
end)

H.test('highlight: ghost text has its own group, not the comment colour, and the user can override it', function()
  local highlight = require('diffusion_lsp.highlight')
  vim.cmd('highlight clear')
  vim.cmd('highlight Normal guifg=#d0d0d0 guibg=#1c1c1c')
  vim.cmd('highlight Comment guifg=#5f875f')
  pcall(vim.cmd, 'highlight clear DiffusionGhost')
  highlight.define()
  local ghost_hl = api.nvim_get_hl_by_name('DiffusionGhost', true)
  local comment = api.nvim_get_hl_by_name('Comment', true)
  H.ok(ghost_hl.foreground, 'a colour of its own (not a link)')
  H.ok(ghost_hl.foreground ~= comment.foreground, 'not the comment colour')
  H.eq(highlight._blend(0xd0d0d0, 0x1c1c1c, highlight.GHOST_SHARE), ghost_hl.foreground, 'Normal dimmed toward the background')
  H.eq(ghost_hl.foreground, api.nvim_get_hl_by_name('DiffusionDraftHigh', true).foreground, 'sure draft tokens look like it')
  vim.cmd('highlight DiffusionGhost guifg=#ff0000')
  highlight.define()
  H.eq(0xff0000, api.nvim_get_hl_by_name('DiffusionGhost', true).foreground, "the user's colour is kept")
  H.eq(0xff0000, api.nvim_get_hl_by_name('DiffusionDraftHigh', true).foreground, 'draft shades follow it')
  vim.cmd('highlight DiffusionDraftLow guifg=#00ff00')
  highlight.define()
  H.eq(0x00ff00, api.nvim_get_hl_by_name('DiffusionDraftLow', true).foreground, "the user's shade is kept")
  H.eq('DiffusionGhost', ghost.HL, 'the ghost text uses it')
end)

H.test('native inline completion is used where vim.lsp.inline_completion exists', function()
  local saved = vim.lsp.inline_completion
  local calls = {}
  vim.lsp.inline_completion = {
    enable = function(enable, filter)
      calls[#calls + 1] = { 'enable', enable, filter.bufnr, filter.client_id }
    end,
    get = function()
      calls[#calls + 1] = { 'get' }
      return true
    end,
  }
  local ok, err = pcall(function()
    H.ok(dl.uses_native(), 'auto picks the built-in one')
    dl.options = config.merge({ ghost_text = 'plugin' })
    H.ok(not dl.uses_native(), "'plugin' forces the plugin's")
    dl.options = config.merge({})
    local bufnr = scratch({ 'x = ' })
    dl._on_attach({ id = 42 }, bufnr)
    H.eq({ 'enable', true, bufnr, 42 }, calls[1], 'enabled for the buffer and client')
    api.nvim_win_set_cursor(0, { 1, 4 })
    H.feed('A<Tab>')
    H.eq({ 'get' }, calls[2], 'Tab accepts through vim.lsp.inline_completion.get()')
    H.eq({ 'x = ' }, H.lines(bufnr), 'no Tab typed when get() accepted')
    H.feed('<Esc>')
  end)
  vim.lsp.inline_completion = saved
  H.ok(not dl.uses_native(), 'plugin ghost text without the API')
  if not ok then
    error(err, 0)
  end
end)

H.test('setup: a missing server is reported once, naming the setting', function()
  local messages = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    messages[#messages + 1] = { msg, level }
  end
  vim.cmd('filetype on')
  dl.setup({ cmd = { '/nonexistent/diffusion-lsp' }, filetypes = { 'python' } })
  local dir = H.workspace({ ['a.py'] = 'x = 1', ['b.py'] = 'y = 2' })
  vim.cmd('edit ' .. dir .. '/a.py')
  vim.cmd('edit ' .. dir .. '/b.py')
  vim.notify = notify
  H.eq(1, #messages, 'one message')
  H.ok(messages[1][1]:find('not found', 1, true), 'says not found')
  H.ok(messages[1][1]:find('cmd =', 1, true), 'names the option')
  H.eq(vim.log.levels.ERROR, messages[1][2], 'level')
end)

H.test('setup: a server that dies as it starts is told twice in all, and no buffer opened later starts it again', function()
  -- A broken install: the server prints a traceback and exits 1 (a real process, no model). The plugin
  -- told every attempt (besides Neovim's own "Client N quit" line each time), and once it had given up,
  -- each Python buffer opened afterwards started the broken server again, with two more messages.
  local dir = H.workspace({ ['a.py'] = 'x = 1', ['b.py'] = 'y = 2', ['c.py'] = 'z = 3' })
  local starts = dir .. '/starts.log'
  local server = dir .. '/diffusion-lsp'
  vim.fn.writefile({ '#!/bin/sh', 'echo start >> "' .. starts .. '"',
    'echo "ImportError: no module named torch" >&2', 'exit 1' }, server)
  vim.fn.setfperm(server, 'rwxr-xr-x')
  local spawned = function()
    return vim.fn.filereadable(starts) == 1 and #vim.fn.readfile(starts) or 0
  end
  local messages = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    if tostring(msg):find('^diffusion%-lsp') then
      messages[#messages + 1] = { msg, level }
    end
  end
  local ok, err = pcall(function()
    vim.cmd('filetype on')
    dl.setup({ cmd = { server }, filetypes = { 'python' }, restart = { retries = 2, delay_ms = 50 } })
    vim.cmd('edit ' .. dir .. '/a.py')
    H.ok(H.wait(20000, function()
      return dl.statusline():find('✗', 1, true) and #messages >= 2
    end), 'shown as failed: ' .. dl.statusline())
    H.sleep(500) -- a further restart would have begun by now
    H.eq(3, spawned(), 'started once and restarted twice')
    H.eq(2, #messages, 'told twice (the first failure, giving up): ' .. vim.inspect(messages))
    H.ok(messages[2][1]:find('not restarted after 2 attempts', 1, true), 'giving up: ' .. messages[2][1])
    H.eq(vim.log.levels.ERROR, messages[2][2], 'giving up is an error')
    vim.cmd('edit ' .. dir .. '/b.py')
    H.sleep(500)
    H.eq(3, spawned(), 'a buffer opened after giving up starts no server')
    H.eq(2, #messages, 'and tells nothing more')
    H.ok(dl.statusline():find('✗', 1, true), 'its statusline shows the failure: ' .. dl.statusline())
    vim.cmd('DiffusionRestart')
    H.ok(H.wait(20000, function()
      return spawned() > 3
    end), ':DiffusionRestart starts it again')
    H.ok(H.wait(20000, function()
      return dl.statusline():find('not restarted', 1, true) or #messages >= 4
    end), 'a new series: ' .. vim.inspect(messages))
  end)
  vim.notify = notify
  dl.stop()
  if not ok then
    error(err, 0)
  end
end)

H.run(60000)
