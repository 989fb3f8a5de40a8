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
end)

H.test('config: the command resolves on PATH, then in .venv, else reports where it looked', function()
  H.eq({ 'sh', '-c' }, config.resolve_cmd({ 'sh', '-c' }, '/'), 'on PATH')
  -- a name that is surely not on $PATH, so the .venv lookup is what finds it
  local dir = H.workspace({ ['.venv/bin/diffusion-lsp-venv-only'] = '#!/bin/sh' })
  vim.fn.setfperm(dir .. '/.venv/bin/diffusion-lsp-venv-only', 'rwxr-xr-x')
  H.eq({ dir .. '/.venv/bin/diffusion-lsp-venv-only', '-v' },
    config.resolve_cmd({ 'diffusion-lsp-venv-only', '-v' }, dir), 'in .venv')
  local cmd, looked = config.resolve_cmd({ 'no-such-diffusion-lsp' }, '/nowhere')
  H.eq(nil, cmd, 'not found')
  H.eq({ 'no-such-diffusion-lsp (on $PATH)', '/nowhere/.venv/bin/no-such-diffusion-lsp',
    '/nowhere/venv/bin/no-such-diffusion-lsp' }, looked, 'places looked at')
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

-- actions ------------------------------------------------------------------------------

H.test('actions: each command finds its server action by kind and title', function()
  local offered = {
    { title = 'Rewrite selection', kind = 'refactor.rewrite' },
    { title = 'Fill 3 holes', kind = 'refactor.rewrite' },
    { title = 'Complete body', kind = 'refactor.rewrite' },
    { title = 'Fix syntax error', kind = 'quickfix' },
  }
  H.eq('Rewrite selection', actions.pick(offered, 'rewrite').title, 'rewrite')
  H.eq('Fill 3 holes', actions.pick(offered, 'fill_holes').title, 'fill')
  H.eq('Complete body', actions.pick(offered, 'complete_body').title, 'body')
  H.eq('Fix syntax error', actions.pick(offered, 'fix_syntax').title, 'fix')
  H.eq('Fill 1 hole', actions.pick({ { title = 'Fill 1 hole', kind = 'refactor.rewrite.x' } }, 'fill_holes').title, 'one hole')
  H.eq(nil, actions.pick({ { title = 'Fix syntax error', kind = 'refactor.rewrite' } }, 'fix_syntax'), 'wrong kind')
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

local function at(row, col)
  return { start = { row, col }, ['end'] = { row, col } }
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

H.run(60000)
