-- The new-user trial: headless Neovim 0.7.2, the project's plugin set up as the README says, the
-- real server on its embedded model. For each case of cases.json (make_cases.py): open the file,
-- put the cursor where a user would be (a line cut near its middle), type the next characters in
-- insert mode, wait for the ghost text (auto trigger), press <Tab>, and record what was shown and
-- what the buffer became; code-action cases run vim.lsp.buf.code_action() and pick the first
-- action. Writes results.json next to cases.json.
--   nvim --headless -u NONE -i NONE -n -c "luafile benchmarks/newuser_trial/trial.lua" (env: TRIAL_DIR,
--   TRIAL_MIN_CONFIDENCE: unset = the server's default bar, else a number)
local root = vim.fn.getcwd()
vim.opt.rtp:append(root .. '/editor-clients/neovim')
package.path = root .. '/editor-clients/neovim/tests/?.lua;' .. package.path
local H = require('helpers')
local api = vim.api
local ghost = require('diffusion_lsp.ghost')
local status = require('diffusion_lsp.status')
local sync = require('diffusion_lsp.sync')
local dir = vim.env.TRIAL_DIR
local cases = vim.fn.json_decode(table.concat(vim.fn.readfile(dir .. '/cases.json'), '\n'))
local results = {}
local notes = {}
vim.notify = function(message, level)
  notes[#notes + 1] = tostring(message)
end
local events = {}
ghost.on_change(function(_, event)
  events[#events + 1] = event
end)
vim.cmd('filetype on')
local settings = { model = 'embedded' }
if vim.env.TRIAL_MIN_CONFIDENCE and vim.env.TRIAL_MIN_CONFIDENCE ~= '' then
  settings.min_confidence = tonumber(vim.env.TRIAL_MIN_CONFIDENCE)
end
local dl = require('diffusion_lsp')
-- the cases' folder is the user's project: the server's workspace, as the working directory a user starts Neovim in
-- would be (the plugin's default root; this script runs from the checkout, whose own files are no user's project)
dl.setup({ cmd = { vim.env.DIFFUSION_LSP }, settings = settings, root_dir = function() return dir .. '/ws' end })

local function wait_ready(bufnr)
  local client = H.wait(30000, function()
    return sync.clients_of(bufnr)[1]
  end)
  H.ok(client, 'client attached')
  H.ok(H.wait(300000, function()
    local e = status.get(client.id)
    return e and e.state == 'ready'
  end), 'ready')
  -- and its count of the project's lines (a few files: about a second), so every case sees them
  local counted = false
  for _ = 1, 120 do
    local answer = client.request_sync('diffusion/stats', vim.empty_dict(), 10000, bufnr)
    local lines = answer and answer.result and answer.result.workspaceLines
    counted = lines ~= nil and lines.state ~= 'indexing' and lines.folders > 0
    if counted then
      break
    end
    vim.wait(1000)
  end
  H.ok(counted, 'workspace counted')
  return client
end

local function messages()
  return vim.api.nvim_exec('messages', true)
end

H.test('trial', function()
  for i, case in ipairs(cases) do
    H.feed('<Esc>')
    vim.cmd('silent! %bwipeout!')
    vim.cmd('messages clear')
    notes = {}
    vim.cmd('edit ' .. dir .. '/ws/' .. case.file)
    local bufnr = api.nvim_get_current_buf()
    wait_ready(bufnr)
    local r = { i = i, file = case.file, source = case.source, row = case.row + 1, col = case.col, typed = case.typed,
      kind = case.kind, expected = case.expected, original = case.line }
    local started = vim.loop.now()
    if case.kind == 'line' then
      local line = api.nvim_buf_get_lines(bufnr, case.row, case.row + 1, false)[1]
      local tail = case.tail or ''
      api.nvim_buf_set_lines(bufnr, case.row, case.row + 1, false, { line:sub(1, case.col) .. tail })
      if tail == '' then
        api.nvim_win_set_cursor(0, { case.row + 1, 0 })
        H.feed('A', 100)
      else
        api.nvim_win_set_cursor(0, { case.row + 1, case.col })
        H.feed('i', 100)
      end
      local before = vim.deepcopy(H.lines(bufnr))
      before[case.row + 1] = line:sub(1, case.col) .. case.typed .. tail
      for ch in case.typed:gmatch('.') do
        H.feed(ch, 40)
      end
      local mark = #events
      local s = H.wait(60000, function()
        local sug = ghost.get(bufnr)
        if sug then
          return sug
        end
        for j = mark + 1, #events do
          if events[j] == 'result' then
            return 'none'
          end
        end
      end)
      if s == 'none' then
        -- a result without a suggestion: give a following request (debounce) a moment
        s = H.wait(3000, function() return ghost.get(bufnr) end)
      end
      r.ms = vim.loop.now() - started
      r.typed_ok = vim.deep_equal(before, H.lines(bufnr))
      if s then
        r.shown = s.text
        r.range = { s.range.start[1], s.range.start[2], s.range['end'][1], s.range['end'][2] }
        local marks = H.marks(bufnr, ghost.ns)
        r.ghost_marks = #marks
        -- what the user sees: the extmark's inline/overlay text and its virtual lines
        local seen = {}
        for _, m in ipairs(marks) do
          local chunks = {}
          for _, chunk in ipairs(m[4].virt_text or {}) do chunks[#chunks + 1] = chunk[1] end
          seen[#seen + 1] = { row = m[2], col = m[3], pos = m[4].virt_text_pos, text = table.concat(chunks),
            lines = #(m[4].virt_lines or {}) }
        end
        r.seen = seen
        r.line_at_cursor = api.nvim_get_current_line()
        H.feed('<Tab>', 150)
        local after = H.lines(bufnr)
        r.marks_left = #H.marks(bufnr, ghost.ns)
        r.mode = api.nvim_get_mode().mode
        -- lines changed relative to `before`
        local first, last_b, last_a = 1, #before, #after
        while first <= last_b and first <= last_a and before[first] == after[first] do first = first + 1 end
        while last_b >= first and last_a >= first and before[last_b] == after[last_a] do
          last_b, last_a = last_b - 1, last_a - 1
        end
        r.changed_from = first
        r.removed = vim.list_slice(before, first, last_b)
        r.inserted = vim.list_slice(after, first, last_a)
        r.cursor = api.nvim_win_get_cursor(0)
        local cr = false
        for _, l in ipairs(after) do if l:find('\r', 1, true) then cr = true end end
        r.cr = cr
      end
    else
      api.nvim_win_set_cursor(0, { case.row + 1, case.col })
      local before = vim.deepcopy(H.lines(bufnr))
      local listed
      local orig_select = vim.ui.select
      vim.ui.select = function(items, opts, on_choice)
        listed = {}
        for _, item in ipairs(items) do
          local action = item.action or item[2] or item
          listed[#listed + 1] = action.title or vim.inspect(item):sub(1, 80)
        end
        on_choice(items[1], 1)
      end
      vim.lsp.buf.code_action()
      H.wait(90000, function()
        -- done: the edit arrived, or the server said why there is none (window/showMessage)
        return listed ~= nil and (not vim.deep_equal(before, H.lines(bufnr)) or messages():find('diffusion-lsp: ', 1, true))
      end)
      H.sleep(300)
      vim.ui.select = orig_select
      r.ms = vim.loop.now() - started
      r.listed = listed
      local after = H.lines(bufnr)
      local first, last_b, last_a = 1, #before, #after
      while first <= last_b and first <= last_a and before[first] == after[first] do first = first + 1 end
      while last_b >= first and last_a >= first and before[last_b] == after[last_a] do
        last_b, last_a = last_b - 1, last_a - 1
      end
      r.changed_from = first
      r.removed = vim.list_slice(before, first, last_b)
      r.inserted = vim.list_slice(after, first, last_a)
    end
    r.messages = messages()
    r.notes = notes
    results[#results + 1] = r
    H.out(('%2d %-22s %5d ms shown=%s'):format(i, case.file, r.ms, vim.inspect(r.shown or r.inserted)))
    H.feed('<Esc>')
    vim.cmd('silent! edit!')
  end
  vim.fn.writefile({ vim.fn.json_encode(results) }, dir .. '/results' .. (vim.env.TRIAL_TAG or '') .. '.json')
end)

H.run(3600000)
