-- End to end against the real diffusion-lsp on its embedded model: the plugin starts the
-- server, ghost text appears at the cursor, the keys accept / accept a line / dismiss it,
-- typing triggers requests, drafts are painted and cleared, code actions run.
-- The embedded model is small and a suggestion may be any text, so the tests check
-- structure (where, how much, what was inserted), never the words.

local here = debug.getinfo(1, 'S').source:sub(2)
local root = vim.fn.fnamemodify(here, ':p:h:h')
vim.opt.rtp:append(root)
package.path = root .. '/tests/?.lua;' .. package.path

local H = require('helpers')
local api = vim.api
local actions = require('diffusion_lsp.actions')
local compat = require('diffusion_lsp.compat')
local draft = require('diffusion_lsp.draft')
local ghost = require('diffusion_lsp.ghost')
local status = require('diffusion_lsp.status')
local sync = require('diffusion_lsp.sync')

local SERVER = H.server()
local SOURCE = table.concat({
  'import os',
  '',
  '',
  'def read_lines(path):',
  '    with open(path) as handle:',
  '        return ',
  '',
  '',
  'def main():',
  '    for name in os.listdir("."):',
  '        print(name)',
}, '\n')
local ROW = 5 -- "        return " (0-based)

-- Record drafts as the server sends them, and what the plugin painted for each.
local drafts = {}
local paint_draft = draft.handler
draft.handler = function(err, params, ctx)
  paint_draft(err, params, ctx)
  local bufnr = vim.uri_to_bufnr(params.uri)
  local groups = {}
  for _, mark in ipairs(H.marks(bufnr, draft.ns)) do
    for _, chunk in ipairs(mark[4].virt_text or {}) do
      groups[chunk[2]] = true
    end
  end
  drafts[#drafts + 1] = { done = params.done, painted = draft.visible(bufnr), groups = groups, id = params.id,
    fill_confidence = params.fillConfidence }
end

-- The server's own answers to textDocument/inlineCompletion, as they arrived.
local answers = {}
local send_request = compat.request
compat.request = function(c, method, params, handler, buf)
  if method ~= 'textDocument/inlineCompletion' then
    return send_request(c, method, params, handler, buf)
  end
  return send_request(c, method, params, function(err, result, ...)
    answers[#answers + 1] = { err = err, result = result }
    return handler(err, result, ...)
  end, buf)
end

local events = {}
ghost.on_change(function(_, event)
  events[#events + 1] = event
end)

vim.notify = function(message)
  H.out('     notify: ' .. tostring(message))
end
vim.cmd('filetype on')
local dl = require('diffusion_lsp')
local bufnr, client

local function reset_buffer()
  H.feed('<Esc>')
  api.nvim_buf_set_lines(bufnr, 0, -1, false, vim.split(SOURCE, '\n', { plain = true }))
  api.nvim_win_set_cursor(0, { ROW + 1, 0 })
  H.feed('A') -- insert mode at the end of "        return "
end

--- Presses the trigger key and waits for the answer; returns the suggestion in `buf` (default: the test buffer)
--- or nil.
local function trigger(buf)
  local before = #events
  H.feed('<M-\\>')
  H.wait(20000, function()
    for i = before + 1, #events do
      if events[i] == 'result' then
        return true
      end
    end
  end)
  return ghost.get(buf or bufnr)
end

local function suggestion_or_fail()
  for _ = 1, 3 do
    local s = trigger()
    if s then
      return s
    end
  end
  error('the server proposed nothing in three requests (validate is off, so it should)')
end

--- The buffer lines after replacing `range` with `text`.
local function replaced(lines, range, text)
  local sr, sc, er, ec = range.start[1], range.start[2], range['end'][1], range['end'][2]
  local joined = lines[sr + 1]:sub(1, sc) .. text .. lines[er + 1]:sub(ec + 1)
  local out = {}
  for i = 1, sr do
    out[#out + 1] = lines[i]
  end
  for _, line in ipairs(vim.split(joined, '\n', { plain = true })) do
    out[#out + 1] = line
  end
  for i = er + 2, #lines do
    out[#out + 1] = lines[i]
  end
  return out
end

--- The workspace lines' state of client `c`'s server once it has counted its folders (its last state after 60 s).
local function counted(c, buf)
  local lines
  for _ = 1, 120 do   -- the project's source files are counted once the model is ready
    local answer = c.request_sync('diffusion/stats', vim.empty_dict(), 10000, buf)
    lines = answer and answer.result and answer.result.workspaceLines
    if lines and lines.state == 'ready' then
      break
    end
    vim.wait(500)
  end
  return lines
end

--- The diffusion-lsp client attached to `buf` once it is initialized (nil after 20 s).
local function attached(buf)
  return H.wait(20000, function()
    return sync.clients_of(buf)[1]
  end)
end

H.test('the server starts for a Python buffer and its model becomes ready', function()
  if not SERVER then
    error('diffusion-lsp not found: set $DIFFUSION_LSP or install it into ../../.venv')
  end
  dl.setup({ cmd = { SERVER }, debounce_ms = 60 })
  local dir = H.workspace({ ['example.py'] = SOURCE })
  vim.cmd('edit ' .. dir .. '/example.py')
  bufnr = api.nvim_get_current_buf()
  client = H.ok(attached(bufnr), 'client attached')
  local state = H.wait(300000, function() -- ends at the status: a bound for a hang only
    local entry = status.get(client.id)
    return entry and (entry.state == 'ready' or entry.state == 'error') and entry
  end)
  H.ok(state, 'a diffusion/status arrived')
  H.eq('ready', state.state, 'model state (' .. tostring(state.message) .. ')')
  H.ok(dl.statusline():find('✓', 1, true), 'statusline shows ready')
end)

H.test('with default settings an inline completion request round-trips without error', function()
  reset_buffer()
  local s = trigger()
  H.ok(not ghost.pending(bufnr), 'request finished')
  if s then
    H.eq(ROW, s.range.start[1], 'suggestion row')
  end
end)

H.test('settings pushed with workspace/didChangeConfiguration take effect', function()
  -- The embedded model is weak: without syntax validation it always proposes something,
  -- which the following tests need; they check the client, not the model's precision, so
  -- minConfidence 0: no fill is withheld.
  compat.notify(client, 'workspace/didChangeConfiguration',
    { settings = { diffusionLsp = { drafts = true, validate = false, draftIntervalMs = 0, minConfidence = 0 } } })
  H.sleep(200)
  reset_buffer()
  H.ok(suggestion_or_fail(), 'a suggestion')
end)

H.test('the trigger key shows ghost text at the cursor', function()
  reset_buffer()
  local s = suggestion_or_fail()
  local cursor = api.nvim_win_get_cursor(0)
  H.eq({ ROW + 1, #'        return ' }, cursor, 'cursor')
  local marks = H.marks(bufnr, ghost.ns)
  H.eq(1, #marks, 'one ghost extmark')
  H.eq(ROW, marks[1][2], 'extmark row')
  H.eq(cursor[2], marks[1][3], 'extmark column')
  local lines = vim.split(s.text, '\n', { plain = true })
  local shown = {}
  for _, chunk in ipairs(marks[1][4].virt_text) do
    if chunk[2] == ghost.HL then
      shown[#shown + 1] = chunk[1]
    end
  end
  H.eq(lines[1]:gsub('\t', ''), table.concat(shown):gsub('\t', ''), 'first line shown')
  H.eq(#lines - 1, #(marks[1][4].virt_lines or {}), 'other lines as virtual lines')
end)

H.test('Tab inserts exactly the suggested text at its range', function()
  reset_buffer()
  local s = suggestion_or_fail()
  local expected = replaced(H.lines(bufnr), s.range, s.text)
  H.feed('<Tab>')
  H.eq(expected, H.lines(bufnr), 'buffer after accepting')
  H.ok(not ghost.visible(bufnr), 'ghost gone')
  H.eq(0, #H.marks(bufnr, ghost.ns), 'no extmark left')
  local text_lines = vim.split(s.text, '\n', { plain = true })
  local row = s.range.start[1] + #text_lines
  local col = (#text_lines == 1 and s.range.start[2] or 0) + #text_lines[#text_lines]
  H.eq({ row, col }, api.nvim_win_get_cursor(0), 'cursor after the inserted text')
end)

H.test('Tab on a block fill adds no stray empty line and leaves the cursor at the end of the text', function()
  H.feed('<Esc>')
  local source = { 'def word_count(text):', '    counts = {}', '    for word in text.split():', '        ',
    '    return counts' }
  api.nvim_buf_set_lines(bufnr, 0, -1, false, source)
  api.nvim_win_set_cursor(0, { 4, 8 })
  H.feed('A')
  local s = suggestion_or_fail()
  H.out('     block fill: ' .. vim.inspect(s.text))
  H.ok(not s.text:find('\n%s*$'), 'the shown suggestion does not end in a line break')
  local expected = replaced(source, s.range, s.text)
  H.feed('<Tab>')
  local after = H.lines(bufnr)
  H.eq(expected, after, 'buffer after accepting')
  local inserted = vim.split(s.text, '\n', { plain = true })
  H.eq(#source + #inserted - 1, #after, 'line count: no extra line')
  H.eq('    return counts', after[#after], 'the code after the hole follows the fill directly')
  H.ok(after[#after - 1]:find('%S'), 'no empty line before it')
  local row = s.range.start[1] + #inserted
  local col = (#inserted == 1 and s.range.start[2] or 0) + #inserted[#inserted]
  H.eq({ row, col }, api.nvim_win_get_cursor(0), 'cursor at the end of the inserted text')
  H.feed('<Esc>')
end)

H.test('in a CRLF buffer the fill goes in as clean lines, as the server wrote it, no \\r left', function()
  -- The server sees the buffer with \r\n breaks (fileformat=dos) and answers in them; the
  -- expected buffer is the server's own edit applied to its text (lines joined with \r\n),
  -- split at \r\n again.
  H.feed('<Esc>')
  local source = { 'def f(x):', '\ty = "😀"', '\tif x:', '\t\t', '\treturn y' }
  vim.bo[bufnr].fileformat = 'dos'
  vim.bo[bufnr].expandtab = false
  api.nvim_buf_set_lines(bufnr, 0, -1, false, source)
  api.nvim_win_set_cursor(0, { 4, 2 })
  H.feed('A')
  local s = suggestion_or_fail()
  local answer = answers[#answers].result
  local item = (answer.items or answer)[1]
  H.out('     server text: ' .. vim.inspect(item.insertText))
  H.eq({ line = 3, character = 2 }, item.range.start, 'the item starts at the cursor')
  H.eq(item.range.start, item.range['end'], 'an insertion')
  local text = item.insertText:gsub('\r?\n%s*$', '') -- the block fill's last break (blank rest of line)
  local expected = vim.split(table.concat(source, '\r\n', 1, 3) .. '\r\n\t\t' .. text .. '\r\n\treturn y', '\r\n',
    { plain = true })
  H.feed('<Tab>')
  local after = H.lines(bufnr)
  for _, line in ipairs(after) do
    H.ok(not line:find('\r'), 'no \\r in ' .. vim.inspect(line))
  end
  H.eq(expected, after, 'buffer after accepting')
  H.ok(s, 'shown')
  H.feed('<Esc>')
  vim.bo[bufnr].fileformat = 'unix'
  vim.bo[bufnr].expandtab = true
end)

H.test('when the server\'s copy of the buffer differs from it, nothing lands anywhere but at the cursor', function()
  -- A buffer whose text the server cannot see as Neovim does: bytes that are not UTF-8 (the
  -- message with them is not JSON the server can read, so it keeps the text it had). The server's
  -- answer is then for another place; the plugin used to insert it there
  -- ('    s = "qsize(s)\255\254" + '). In its own buffer, wiped after: the server's copy stays wrong.
  H.feed('<Esc>')
  local dir = vim.fn.fnamemodify(api.nvim_buf_get_name(bufnr), ':h')
  for _, case in ipairs({
    { name = 'not_utf8.py', lines = { 'def f():', '    s = "\255\254" + ', '    return s' } },
  }) do
    vim.cmd('edit ' .. dir .. '/' .. case.name)
    local buf = api.nvim_get_current_buf()
    vim.bo[buf].expandtab = false
    H.ok(H.wait(20000, function()
      return ghost.client_of(buf) ~= nil
    end), case.name .. ': attached')
    api.nvim_buf_set_lines(buf, 0, -1, false, case.lines)
    local col = #case.lines[2]
    api.nvim_win_set_cursor(0, { 2, col })
    H.feed('a')
    local asked = #answers
    for _ = 1, 3 do
      local before = #events
      H.feed('<M-\\>')
      H.wait(20000, function()
        for i = before + 1, #events do
          if events[i] == 'result' then
            return true
          end
        end
      end)
      local answer = answers[#answers] and answers[#answers].result
      if answer and #(answer.items or answer) > 0 then
        break
      end
    end
    H.ok(#answers > asked, case.name .. ': the server answered')
    local s = ghost.get(buf)
    if s then -- the server saw the text as Neovim does: its fill must start by the cursor
      H.ok(s.range.start[1] == 1 and s.range.start[2] <= col and s.range['end'][2] >= col,
        case.name .. ': the shown fill holds the cursor ' .. vim.inspect(s.range))
    end
    H.feed('<Tab>')
    local after = H.lines(buf)
    H.eq(case.lines[1], after[1], case.name .. ': line above')
    H.eq(case.lines[2], after[2]:sub(1, col), case.name .. ': the text before the cursor is untouched')
    H.eq(case.lines[3], after[#after], case.name .. ': line below')
    H.feed('<Esc>')
    vim.cmd('bwipeout!')
  end
  vim.cmd('buffer ' .. bufnr)
end)

H.test('a carriage return inside a line: no suggestion, no action, a warning, the buffer untouched', function()
  -- LSP counts the \r as a line break, Neovim does not: every line below it means another line to
  -- the server. "Fill holes" used to replace '    return t' with the fill of the '...' above it.
  H.feed('<Esc>')
  local dir = vim.fn.fnamemodify(api.nvim_buf_get_name(bufnr), ':h')
  vim.cmd('edit ' .. dir .. '/stray_cr.py')
  local buf = api.nvim_get_current_buf()
  H.ok(H.wait(20000, function()
    return ghost.client_of(buf) ~= nil
  end), 'attached')
  local source = { 'def a(s):', '    t = "x\ry"', '    def inner():', '        ...', '    return t', '', 'print(a(1))' }
  api.nvim_buf_set_lines(buf, 0, -1, false, source)
  local messages, notify = {}, vim.notify
  vim.notify = function(message)
    messages[#messages + 1] = message
  end
  local done, failure = false, nil
  local ok, err = pcall(function()
    actions.run(client, buf, 'fill_holes', { start = { 0, 0 }, ['end'] = { #source - 1, #source[#source] } }, function(e)
      done, failure = true, e
    end)
    H.wait(30000, function()
      return done
    end)
    H.sleep(200) -- an edit the server sent would have arrived by now
    api.nvim_win_set_cursor(0, { 5, 12 })
    H.feed('a')
    H.feed('<M-\\>', 200)
    H.ok(not ghost.visible(buf), 'no suggestion shown')
    H.feed('<Esc>')
  end)
  vim.notify = notify
  H.ok(ok, tostring(err))
  H.eq(source, H.lines(buf), 'the buffer untouched')
  H.ok(failure and tostring(failure):find('line 2 holds a carriage return', 1, true), 'fill holes refused: ' .. tostring(failure))
  H.ok(#messages >= 2 and messages[#messages]:find('carriage return', 1, true), 'the trigger key warns: '
    .. vim.inspect(messages))
  vim.cmd('bwipeout!')
  vim.cmd('buffer ' .. bufnr)
  -- A \r at the end of a line (a file with mixed line endings) goes out as \r\n, one break: served.
  H.eq(nil, require('diffusion_lsp.position').stray_cr(bufnr), 'the main buffer has none')
end)

H.test('C-] dismisses the suggestion and leaves the buffer alone', function()
  reset_buffer()
  suggestion_or_fail()
  local before = H.lines(bufnr)
  H.feed('<C-]>')
  H.ok(not ghost.visible(bufnr), 'dismissed')
  H.eq(0, #H.marks(bufnr, ghost.ns), 'no extmark left')
  H.eq(before, H.lines(bufnr), 'buffer unchanged')
end)

H.test('S-Tab inserts one line of the suggestion and keeps the rest shown', function()
  reset_buffer()
  local s = suggestion_or_fail()
  local full = replaced(H.lines(bufnr), s.range, s.text)
  H.out('     suggestion: ' .. vim.inspect(s.text))
  local newline = s.text:find('\n', s.text:sub(1, 1) == '\n' and 2 or 1, true)
  local first = newline and s.text:sub(1, newline - 1) or s.text
  H.feed('<S-Tab>')
  H.eq(replaced(vim.split(SOURCE, '\n', { plain = true }), s.range, first), H.lines(bufnr), 'one line inserted')
  if newline then
    H.ok(ghost.visible(bufnr), 'the rest is still shown')
    H.eq(s.text:sub(#first + 1), ghost.get(bufnr).text, 'the rest')
    H.feed('<Tab>')
    H.eq(full, H.lines(bufnr), 'line by line ends where accepting at once would')
  else
    H.ok(not ghost.visible(bufnr), 'a one-line suggestion is accepted whole')
  end
end)

H.test('typing requests a suggestion by itself after the debounce', function()
  reset_buffer()
  local before = #events
  H.feed('x')
  local answered = H.wait(20000, function()
    for i = before + 1, #events do
      if events[i] == 'result' then
        return true
      end
    end
  end)
  H.ok(answered, 'an automatic request was sent and answered')
end)

H.test('drafts are painted with confidence shades while the suggestion develops, then cleared', function()
  reset_buffer()
  drafts = {}
  suggestion_or_fail()
  H.ok(#drafts > 0, 'drafts arrived')
  local painted, groups = 0, {}
  for _, d in ipairs(drafts) do
    if not d.done and d.painted then
      painted = painted + 1
      for group in pairs(d.groups) do
        groups[group] = true
      end
    end
  end
  H.ok(painted > 0, ('a draft was painted (%d drafts, %d painted)'):format(#drafts, painted))
  for group in pairs(groups) do
    H.ok(group:find('^DiffusionDraft') or group == 'Normal', 'shade group ' .. group)
  end
  H.ok(drafts[#drafts].done, 'the last draft is final')
  local confidence = drafts[#drafts].fill_confidence
  H.out('     final draft fillConfidence: ' .. tostring(confidence))
  if type(confidence) == 'number' then
    H.eq(confidence, status.get(client.id).confidence, 'the final draft\'s fillConfidence is kept')
    H.ok(dl.status_line():find('% likely right', 1, true), ':DiffusionStatus shows it: ' .. dl.status_line())
  end
  H.eq(0, #H.marks(bufnr, draft.ns), 'no draft left once the suggestion is shown')
  H.ok(not draft.visible(bufnr), 'draft state cleared')
end)

H.test('rewrite with an instruction and the code-action commands run against the server', function()
  H.feed('<Esc>')
  local likely = status.get(client.id).confidence
  H.out('     the last suggestion\'s fillConfidence: ' .. tostring(likely))
  local caps = client.server_capabilities or {}
  local commands = caps.executeCommandProvider and caps.executeCommandProvider.commands or {}
  if not caps.codeActionProvider or not vim.tbl_contains(commands, actions.REWRITE_COMMAND) then
    H.skip('the server offers no code actions / diffusion.rewriteSelection yet')
  end
  api.nvim_buf_set_lines(bufnr, 0, -1, false, { 'def double(xs):', '    out = []', '    for x in xs:',
    '        out.append(2 * x)', '    return out', '', 'print(double([1]))' })
  local done, failure = false, nil
  actions.rewrite(client, bufnr, { start = { 1, 0 }, ['end'] = { 4, 14 } }, 'use a list comprehension', function(err)
    done, failure = true, err
  end)
  H.ok(H.wait(30000, function()
    return done
  end), 'rewrite answered')
  H.eq(nil, failure, 'rewrite error')
  local lines = H.lines(bufnr)
  H.eq('def double(xs):', lines[1], 'line before the range kept')
  H.eq('print(double([1]))', lines[#lines], 'line after the range kept')

  -- :DiffusionRewrite without an argument asks for an instruction only when the ready status
  -- said the backend follows one; the embedded model does not (instructions: false).
  H.eq(false, status.takes_instructions(client.id), 'the embedded model takes no instruction')
  api.nvim_buf_set_lines(bufnr, 0, -1, false, { 'def double(xs):', '    out = []', '    for x in xs:',
    '        out.append(2 * x)', '    return out', '', 'print(double([1]))' })
  local asked, input = 0, vim.ui.input
  vim.ui.input = function(_, on_confirm)
    asked = asked + 1
    on_confirm('use a list comprehension')
  end
  local answered, rewrite = false, actions.rewrite
  actions.rewrite = function(c, b, r, instruction, cb)
    H.eq(nil, instruction, 'no instruction sent')
    return rewrite(c, b, r, instruction, function(err)
      answered = true
      if cb then
        cb(err)
      end
    end)
  end
  local ok, err = pcall(vim.cmd, '2,5DiffusionRewrite')
  vim.ui.input = input
  H.ok(ok, tostring(err))
  H.ok(H.wait(30000, function()
    return answered
  end), ':DiffusionRewrite answered')
  actions.rewrite = rewrite
  H.eq(0, asked, ':DiffusionRewrite asked for no instruction')
  H.eq('print(double([1]))', H.lines(bufnr)[#H.lines(bufnr)], 'line after the range kept')

  api.nvim_buf_set_lines(bufnr, 0, -1, false, { 'def area(w, h):', '    ...', '', 'print(area(2, 3))' })
  local picked
  done = false
  actions.run(client, bufnr, 'fill_holes', { start = { 0, 0 }, ['end'] = { 3, 17 } }, function(err, action)
    done, failure, picked = true, err, action
  end)
  H.ok(H.wait(30000, function()
    return done
  end), 'fill holes answered')
  H.eq(nil, failure, 'fill holes error')
  H.ok(picked, 'the server offered "Fill 1 hole" for a ... body')
  H.eq('print(area(2, 3))', H.lines(bufnr)[#H.lines(bufnr)], 'code after the hole kept')
  -- The actions' drafts ended with final drafts carrying text and no fillConfidence (an action's edit
  -- has no estimate): the last suggestion's estimate is kept.
  local finals = vim.tbl_filter(function(d)
    return d.done and tostring(d.id):find('^action%-') ~= nil
  end, drafts)
  H.ok(#finals > 0, 'the actions sent final drafts')
  if type(likely) == 'number' then
    H.eq(likely, status.get(client.id).confidence, 'the last suggestion\'s fillConfidence is kept after the actions')
  end
end)


--- The diffusion-lsp client of the buffer once it is initialized and its model ready.
local function ready_client(other_than)
  local found = H.wait(120000, function()
    for _, c in ipairs(sync.clients_of(bufnr)) do
      if c.id ~= other_than then
        local entry = status.get(c.id)
        if entry and entry.state == 'ready' then
          return c
        end
      end
    end
  end)
  return H.ok(found, 'a ready diffusion-lsp client')
end

--- The fill-holes action the server offers for the whole buffer, resolved: its text edits.
local function fill_holes_edits(c, buf)
  local bufnr = buf or bufnr
  local lines = H.lines(bufnr)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = { line = 0, character = 0 }, ['end'] = { line = #lines - 1, character = #lines[#lines] } },
    context = { diagnostics = {}, only = { 'refactor.rewrite' }, triggerKind = 1 },
  }
  local done, err, result
  compat.request(c, 'textDocument/codeAction', params, function(e, r)
    done, err, result = true, e, r
  end, bufnr)
  H.ok(H.wait(30000, function()
    return done
  end), 'codeAction answered')
  H.eq(nil, err, 'codeAction error')
  local action = actions.pick(result, 'fill_holes')
  if not action then
    return {}, nil
  end
  local title = action.title
  if not action.edit then
    done = false
    compat.request(c, 'codeAction/resolve', action, function(e, r)
      done, err, action = true, e, r
    end, bufnr)
    H.ok(H.wait(60000, function()
      return done
    end), 'codeAction/resolve answered')
    H.eq(nil, err, 'resolve error')
  end
  local edits = {}
  local edit = action.edit or {}
  for _, change in ipairs(edit.documentChanges or {}) do
    vim.list_extend(edits, change.edits or {})
  end
  for _, list in pairs(edit.changes or {}) do
    vim.list_extend(edits, list)
  end
  return edits, title
end

local function rows_of(edits)
  local rows = {}
  for _, e in ipairs(edits) do
    rows[#rows + 1] = e.range.start.line
  end
  table.sort(rows)
  return rows
end

-- The holes the server finds in its copy of the buffer (the action's title counts them) and the rows it fills:
-- each filled row is a hole's; a stub body is the cursor's line there (engine/oneline.py), which the model may
-- leave unfilled (it writes `...` again), so the count says which text the server has, the rows where.
local function check_holes(c, buf, rows, what)
  local edits, title = fill_holes_edits(c, buf)
  H.eq(#rows == 1 and 'Fill 1 hole' or ('Fill ' .. #rows .. ' holes'), title, what .. ': the holes counted')
  local wanted = {}
  for _, r in ipairs(rows) do
    wanted[r] = true
  end
  for _, r in ipairs(rows_of(edits)) do
    H.ok(wanted[r], what .. ': a fill on row ' .. r .. ', not a hole of ' .. vim.inspect(rows))
  end
end

local RESTART_SOURCE = {
  'def area(w, h):',
  '    return w * h',
  '',
  '',
  'def perimeter(w, h):',
  '    return 2 * (w + h)',
  '',
  '',
  'def describe(value):',
  '    return value.decode(value)',
  '',
  '',
  'print(area(2, 3), perimeter(2, 3))',
}

H.test('a rewrite that arrives after the user edited the buffer is refused, not applied to the wrong lines', function()
  -- The user adds two lines above the selection while the model works; their didChange is still
  -- on its way when the server sends the edit (held here until the edit has arrived: Neovim 0.7
  -- holds didChange up to 150 ms while typing, and a message can always be in flight). An
  -- unversioned edit (what the server sends a client that does not announce documentChanges, as
  -- Neovim 0.7 does not) went onto the old line numbers: 'def print(float(xs):s:'.
  H.feed('<Esc>')
  local caps = client.server_capabilities or {}
  local commands = caps.executeCommandProvider and caps.executeCommandProvider.commands or {}
  if not vim.tbl_contains(commands, actions.REWRITE_COMMAND) then
    H.skip('the server offers no diffusion.rewriteSelection')
  end
  local source = { 'def double(xs):', '    out = []', '    for x in xs:', '        out.append(2 * x)', '    return out',
    '', 'print(double([1]))' }
  api.nvim_buf_set_lines(bufnr, 0, -1, false, source)
  local held, send, holding = {}, client.notify, false
  client.notify = function(method, params)
    if holding and method == 'textDocument/didChange' then
      held[#held + 1] = params
      return true
    end
    return send(method, params)
  end
  local edits, apply_edit = {}, vim.lsp.handlers['workspace/applyEdit']
  vim.lsp.handlers['workspace/applyEdit'] = function(err, params, ctx)
    edits[#edits + 1] = params.edit
    return apply_edit(err, params, ctx)
  end
  local done, failure = false, nil
  local ok, err = pcall(function()
    actions.rewrite(client, bufnr, { start = { 1, 0 }, ['end'] = { 4, 14 } }, nil, function(e)
      done, failure = true, e
    end) -- the request sends the text as it is now first (Neovim flushes before a request)
    holding = true
    api.nvim_buf_set_lines(bufnr, 0, 0, false, { '# a line the user added', '# and another' })
    H.ok(H.wait(30000, function()
      return done
    end), 'rewrite answered')
  end)
  holding = false
  client.notify = send
  vim.lsp.handlers['workspace/applyEdit'] = apply_edit
  for _, params in ipairs(held) do
    send('textDocument/didChange', params)
  end
  H.ok(ok, tostring(err))
  H.eq(nil, failure, 'rewrite error')
  H.eq(1, #edits, 'the server sent its edit')
  local expected = { '# a line the user added', '# and another' }
  vim.list_extend(expected, source)
  H.eq(expected, H.lines(bufnr), 'the buffer as the user left it')
  H.ok(edits[1].documentChanges and edits[1].documentChanges[1].textDocument.version,
    'the edit names the version it was made for: ' .. vim.inspect(edits[1]))
end)

H.test('kill -9, an edit while the server is down, :DiffusionRestart: the new server fills the current text', function()
  H.feed('<Esc>')
  dl.options.restart = { retries = 0 } -- this test restarts by hand
  api.nvim_buf_set_lines(bufnr, 0, -1, false, RESTART_SOURCE)
  H.sleep(400)
  local old = client
  local pid = old.rpc.pid
  H.ok(pid, 'server pid')
  vim.loop.kill(pid, 'sigkill')
  H.ok(H.wait(20000, function()
    local entry = status.get(old.id)
    return entry and entry.state == 'failed'
  end), 'the dead server is shown as failed')
  H.eq('diffusion ✗', dl.statusline(), 'statusline while the server is down')
  H.ok(dl.status_line():find('died', 1, true), 'status line says it died: ' .. dl.status_line())
  -- While it is down: `cc` on line 2 (area's body), as the user did.
  api.nvim_win_set_cursor(0, { 2, 0 })
  H.feed('cc...<Esc>') -- autoindent keeps the line's indentation
  H.eq('    ...', H.lines(bufnr)[2], 'edited while down')
  vim.cmd('DiffusionRestart')
  client = ready_client(old.id)
  compat.notify(client, 'workspace/didChangeConfiguration',
    { settings = { diffusionLsp = { drafts = true, validate = false, draftIntervalMs = 0, minConfidence = 0 } } })
  -- After the restart: `cc` on line 6 (perimeter's body).
  api.nvim_win_set_cursor(0, { 6, 0 })
  H.feed('cc...<Esc>') -- autoindent keeps the line's indentation
  H.sleep(400)
  -- The server sees both stubs: the one made while it was down (didOpen on restart) and the one
  -- made after (didChange, which Neovim's own tracking no longer sends for this buffer).
  check_holes(client, nil, { 1, 5 }, 'the holes the restarted server fills')
  -- And a fill at the cursor on a line retyped after the restart is computed on that line.
  api.nvim_win_set_cursor(0, { 10, 0 })
  H.feed('ccreturn "".join(str(v) for v in ')
  local cursor = api.nvim_win_get_cursor(0)
  local s = trigger()
  if s then
    H.eq(cursor[1] - 1, s.range['end'][1], 'suggestion row')
    H.eq(cursor[2], s.range['end'][2], 'the suggestion ends at the cursor (the server has the typed line)')
    H.ok(s.range.start[2] >= #'    return "".join(str(v) for ', 'the suggestion does not start before the typed text')
  end
  H.feed('<Esc>')
  api.nvim_buf_set_lines(bufnr, 9, 10, false, { '    return str(value)' })
end)

H.test('a server that dies by itself is shown as failed and restarted, every buffer re-synced', function()
  H.feed('<Esc>')
  dl.options.restart = { retries = 2, delay_ms = 200 }
  -- A second Python buffer, loaded but not shown, attached to the same server.
  local other_path = vim.fn.fnamemodify(api.nvim_buf_get_name(bufnr), ':h') .. '/other.py'
  vim.fn.writefile({ 'def other():', '    return 1' }, other_path)
  local other = vim.fn.bufadd(other_path)
  vim.fn.bufload(other)
  vim.bo[other].filetype = 'python'
  H.ok(H.wait(20000, function()
    for _, c in ipairs(compat.clients(other)) do
      if c.id == client.id then
        return true
      end
    end
  end), 'the second buffer is attached')
  local old = client
  vim.loop.kill(old.rpc.pid, 'sigkill')
  H.ok(H.wait(20000, function()
    local entry = status.get(old.id)
    return entry and entry.state == 'failed'
  end), 'shown as failed')
  H.ok(status.get(old.id).message:find('restarting', 1, true), 'says it restarts: ' .. status.get(old.id).message)
  -- Edited before the restart comes (both buffers).
  api.nvim_buf_set_lines(bufnr, 13, 13, false, { '', '', 'def volume(w, h, d):', '    ...' })
  api.nvim_buf_set_lines(other, 1, 2, false, { '    ...' })
  client = ready_client(old.id)
  H.ok(dl.statusline():find('✓', 1, true), 'ready again: ' .. dl.statusline())
  compat.notify(client, 'workspace/didChangeConfiguration',
    { settings = { diffusionLsp = { drafts = true, validate = false, draftIntervalMs = 0, minConfidence = 0 } } })
  H.sleep(200)
  check_holes(client, nil, { 1, 5, 16 }, 'the restarted server has the current text')
  check_holes(client, other, { 1 }, 'and the hidden buffer edited while it was down')
end)

H.test('after a restart the new server\'s drafts are painted, though its request ids start again', function()
  -- The plugin kept the last draft's request id per buffer and ignored drafts of "older" ones; a new
  -- server numbers its requests from 1 again, so its drafts went unpainted in every buffer that had
  -- shown one, until its ids caught up with the old server's.
  reset_buffer()
  drafts = {}
  trigger()
  local before = 0
  for _, d in ipairs(drafts) do
    before = math.max(before, tonumber(d.id) or 0)
  end
  H.ok(before >= 1, 'the old server\'s drafts came: ' .. vim.inspect(drafts))
  H.feed('<Esc>')
  local old = client
  vim.cmd('DiffusionRestart')
  client = ready_client(old.id)
  compat.notify(client, 'workspace/didChangeConfiguration',
    { settings = { diffusionLsp = { drafts = true, validate = false, draftIntervalMs = 0, minConfidence = 0 } } })
  H.sleep(200)
  reset_buffer()
  drafts = {}
  trigger()
  local painted = 0
  for _, d in ipairs(drafts) do
    if not d.done and d.painted then
      painted = painted + 1
    end
  end
  H.ok(#drafts > 0 and tonumber(drafts[1].id) <= before, 'the new server\'s first ids are the old one\'s again: '
    .. vim.inspect(drafts[1]))
  H.ok(painted > 0, ('a draft of the new server was painted (%d drafts, %d painted)'):format(#drafts, painted))
  H.eq(0, #H.marks(bufnr, draft.ns), 'and cleared once the suggestion is shown')
end)

H.test("a file of a project outside the working directory gets that project's server and lines", function()
  local dir = vim.fn.resolve(H.workspace({ ['proj/.git/HEAD'] = 'ref: refs/heads/main',
    ['proj/src/app.py'] = SOURCE, ['proj/src/util.py'] = 'def helper(x):\n    return x + 1\n',
    ['proj/README.md'] = '# not a source file' }))
  vim.cmd('edit ' .. dir .. '/proj/src/app.py')
  local buf = api.nvim_get_current_buf()
  local other = H.ok(attached(buf), 'client attached')
  H.eq(dir .. '/proj', other.config.root_dir, 'the project (its .git), not the working directory')
  H.ok(other.id ~= client.id, 'a server of its own')
  H.ok(H.wait(300000, function()
    local entry = status.get(other.id)
    return entry and entry.state == 'ready'
  end), 'its model became ready')
  local lines = counted(other, buf)
  H.eq({ state = 'ready', folders = 1, files = 2 }, { state = lines.state, folders = lines.folders, files = lines.files },
    "the workspace counted: the project's two Python files")
  vim.lsp.stop_client(other.id)
  vim.cmd('bwipeout!')
end)

H.test('a C file is served by default: its project (CMakeLists.txt) counts its C files, whose line fills a typed one',
  function()
  local dir = vim.fn.resolve(H.workspace({ ['cproj/CMakeLists.txt'] = 'project(z C)',
    ['cproj/src/a.c'] = 'static int setup(struct ctx *ctx) {\n    struct opts opts = {0};\n'
      .. '    zorblax_register_quux_handler(ctx, &opts);\n    return 0;\n}',
    ['cproj/src/main.c'] = 'int start(struct ctx *ctx, struct opts opts) {\n    zorblax_reg\n'
      .. '    return restart(ctx);\n}',
    ['cproj/notes.txt'] = 'zorblax_register_other(ctx);' }))
  vim.cmd('edit ' .. dir .. '/cproj/src/main.c')
  local buf = api.nvim_get_current_buf()
  H.eq('c', vim.bo[buf].filetype, 'filetype')
  local c = H.ok(attached(buf), 'client attached to a C buffer with the default filetypes')
  H.eq(dir .. '/cproj', c.config.root_dir, 'the project (its CMakeLists.txt), not the working directory')
  H.ok(H.wait(300000, function()
    local entry = status.get(c.id)
    return entry and entry.state == 'ready'
  end), 'its model became ready')
  local lines = counted(c, buf)
  H.eq({ state = 'ready', files = 2 }, { state = lines.state, files = lines.files }, 'the two C files, not the notes')
  H.feed('<Esc>')
  api.nvim_win_set_cursor(0, { 2, 0 })
  H.feed('A')   -- insert mode at the end of "    zorblax_reg"
  local s = H.ok(trigger(buf), 'a suggestion')
  H.eq('ister_quux_handler(ctx, &opts);', s.text, "the line another C file of the project has")
  H.feed('<Esc>')
  vim.lsp.stop_client(c.id)
  vim.cmd('bwipeout!')
end)

H.run(900000) -- a hang guard: the waits above end at their events
