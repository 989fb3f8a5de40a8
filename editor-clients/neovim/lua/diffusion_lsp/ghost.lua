-- The plugin's own ghost text for textDocument/inlineCompletion (Neovim without
-- vim.lsp.inline_completion): requests while typing (debounced, the previous request
-- cancelled), shows the first item as virtual text (the others are alternatives to cycle
-- through), keeps it while the user types what it says, and accepts it whole, line by line or
-- word by word.

local api = vim.api
local compat = require('diffusion_lsp.compat')
local position = require('diffusion_lsp.position')
local render = require('diffusion_lsp.render')

local M = {}

M.ns = api.nvim_create_namespace('diffusion_lsp_ghost')
M.HL = 'DiffusionGhost'
local METHOD = 'textDocument/inlineCompletion'
local TRIGGER = { invoked = 1, automatic = 2 }

local opts = { auto_trigger = true, debounce_ms = 120, before_request = nil }
-- Called with bufnr whenever a suggestion is shown or the request ends (drafts clear then).
local listeners = {}

-- bufnr -> { client_id, timer, request = {client, id}, suggestion, own_tick, seen_tick,
--           items = { {range, text}, ... } (the answer's distinct items, best first), index }
-- suggestion = { range = {start = {r, c}, ['end'] = {r, c}}, text, tail, anchor = {r, c} }
local states = {}

function M.configure(options)
  opts = vim.tbl_extend('force', opts, options or {})
end

function M.on_change(listener)
  listeners[#listeners + 1] = listener
end

local function emit(bufnr, event)
  for _, listener in ipairs(listeners) do
    listener(bufnr, event)
  end
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_exec_autocmds('User', { pattern = 'DiffusionLspSuggestion', modeline = false })
  end
end

local function cursor_of(bufnr)
  local win = api.nvim_get_current_win()
  if api.nvim_win_get_buf(win) ~= bufnr then
    return nil
  end
  local cursor = api.nvim_win_get_cursor(win)
  return { cursor[1] - 1, cursor[2] }
end

local function line_text(bufnr, row)
  return api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
end

local function stop_timer(st)
  if st.timer then
    st.timer:stop()
    st.timer:close()
    st.timer = nil
  end
end

local function cancel_request(st)
  if st.request then
    pcall(compat.cancel_request, st.request.client, st.request.id)
    st.request = nil
  end
end

--- The suggestion shown in `bufnr` ({range, text}), or nil.
function M.get(bufnr)
  local st = states[bufnr or api.nvim_get_current_buf()]
  return st and st.suggestion
end

function M.visible(bufnr)
  return M.get(bufnr) ~= nil
end

--- True while a request for `bufnr` is in flight.
function M.pending(bufnr)
  local st = states[bufnr or api.nvim_get_current_buf()]
  return st ~= nil and st.request ~= nil
end

local function paint(bufnr, suggestion)
  render.show(bufnr, M.ns, suggestion.range, render.text_lines(suggestion.text, M.HL))
end

local on_text_changed -- defined below, with the other event handlers

--- Brings the suggestion up to date with changes no TextChangedI reported yet: keys typed ahead
--- of the accept key (TextChangedI waits for the typeahead to drain) or while the completion menu
--- was open (TextChangedP instead). Returns the suggestion still shown, or nil.
local function current(bufnr, st)
  if st.suggestion then
    local tick = api.nvim_buf_get_changedtick(bufnr)
    if tick ~= st.seen_tick and tick ~= st.own_tick then
      on_text_changed(bufnr)
    end
  end
  return st.suggestion
end

--- A fill that ends in a line break where the rest of the line is blank (a block fill on an
--- empty line) would leave a stray empty line: the break (and any blank lines after it) is
--- dropped and the blank rest of the line replaced instead. Returns the range and text to show
--- and insert.
function M.normalize(bufnr, range, text)
  if not text:find('\n%s*$') then
    return range, text
  end
  local er, ec = range['end'][1], range['end'][2]
  local rest = line_text(bufnr, er):sub(ec + 1)
  if rest:find('^%s*$') == nil then
    return range, text -- the break pushes the rest of the line down: keep it
  end
  local trimmed = text:gsub('\r?\n%s*$', '') -- the break(s), and blank lines after them
  return { start = vim.deepcopy(range.start), ['end'] = { er, ec + #rest } }, trimmed
end

--- Shows `text` as the suggestion replacing `range` (0-based rows, byte columns). Its line
--- breaks may be any of LSP's (the server writes a CRLF document's as \r\n): a buffer line holds
--- no break, so each becomes a plain line split, never a \r left in the text.
function M.show(bufnr, range, text)
  local st = states[bufnr]
  if not st or text == '' then
    return
  end
  text = text:gsub('\r\n?', '\n')
  range, text = M.normalize(bufnr, range, text)
  if text == '' then
    return -- nothing but line breaks: nothing to show
  end
  local er, ec = range['end'][1], range['end'][2]
  st.suggestion = {
    range = vim.deepcopy(range),
    text = text,
    tail = line_text(bufnr, er):sub(ec + 1),
    anchor = cursor_of(bufnr) or { er, ec },
  }
  st.seen_tick = api.nvim_buf_get_changedtick(bufnr)
  paint(bufnr, st.suggestion)
  emit(bufnr, 'show')
end

--- Hides the suggestion and stops any pending request.
function M.dismiss(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local st = states[bufnr]
  if not st then
    return false
  end
  local had = st.suggestion ~= nil
  stop_timer(st)
  cancel_request(st)
  st.suggestion = nil
  st.items, st.index, st.items_anchor = nil, nil, nil
  render.clear(bufnr, M.ns)
  emit(bufnr, 'dismiss')
  return had
end

local function on_result(bufnr, err, result, sent)
  local st = states[bufnr]
  emit(bufnr, 'result')
  if err then
    st.last_error = err.message or tostring(err)
    if sent.invoked then
      vim.notify('diffusion-lsp: ' .. st.last_error, vim.log.levels.WARN)
    end
    return
  end
  st.last_error = nil
  local cursor = cursor_of(bufnr)
  if api.nvim_buf_get_changedtick(bufnr) ~= sent.tick or not cursor
    or cursor[1] ~= sent.row or cursor[2] ~= sent.col then
    return -- the buffer or cursor moved on; a newer request follows
  end
  local items, elsewhere = M.items_from_result(bufnr, result, sent)
  if #items == 0 then
    if elsewhere > 0 then
      st.last_error = "the server's answer is for another place: its copy of this buffer differs from it "
        .. '(a change it could not read, such as bytes that are not UTF-8, or a carriage return inside a line); '
        .. 'nothing was shown'
      if sent.invoked then
        vim.notify('diffusion-lsp: ' .. st.last_error, vim.log.levels.WARN)
      end
    elseif sent.invoked then
      vim.notify('diffusion-lsp: no suggestion here', vim.log.levels.INFO)
    end
    return
  end
  M.show(bufnr, items[1].range, items[1].text)
  if st.suggestion then
    st.items, st.index, st.items_anchor = items, 1, { sent.row, sent.col }
  end
end

M._on_result = on_result -- for the tests

--- True when (row, col) lies in `range` (ends included).
local function contains(range, row, col)
  local s, e = range.start, range['end']
  return (s[1] < row or (s[1] == row and s[2] <= col)) and (row < e[1] or (row == e[1] and col <= e[2]))
end

--- The answer's items as {range, text} (buffer positions), best first, empty and repeated
--- texts left out, and so is an item whose range does not hold the cursor the request was sent
--- for: the server's copy of the buffer differs from it (a change it could not read, a line
--- break Neovim does not count), and the text would land somewhere else. Also returns how many
--- items were left out for that.
function M.items_from_result(bufnr, result, sent)
  local out, seen, elsewhere = {}, {}, 0
  local list = type(result) == 'table' and (result.items or result) or {}
  for _, item in ipairs(list) do
    local text = type(item) == 'table' and item.insertText
    if type(text) == 'table' then
      text = text.value -- a snippet: shown and inserted as plain text
    end
    if type(text) == 'string' and text ~= '' then
      local range = item.range and position.range_from_lsp(bufnr, item.range, sent.encoding)
        or { start = { sent.row, sent.col }, ['end'] = { sent.row, sent.col } }
      local key = ('%d:%d:%d:%d:%s'):format(range.start[1], range.start[2], range['end'][1], range['end'][2], text)
      if not contains(range, sent.row, sent.col) then
        elsewhere = elsewhere + 1
      elseif not seen[key] then
        seen[key] = true
        out[#out + 1] = { range = range, text = text }
      end
    end
  end
  return out, elsewhere
end

--- Sets the alternatives of the shown suggestion (for tests and other front ends).
function M.set_items(bufnr, items)
  local st = states[bufnr]
  if st and #items > 0 then
    M.show(bufnr, items[1].range, items[1].text)
    if st.suggestion then
      st.items, st.index, st.items_anchor = vim.deepcopy(items), 1, vim.deepcopy(st.suggestion.anchor)
    end
  end
end

--- Shows the next (`delta` 1) or previous (-1) alternative of the answer, wrapping around;
--- what the user typed since the answer came must still match it. Returns false when there is
--- no other alternative to show.
function M.cycle(bufnr, delta)
  bufnr = bufnr or api.nvim_get_current_buf()
  local st = states[bufnr]
  local s = st and current(bufnr, st)
  if not s or not st.items or #st.items < 2 then
    return false
  end
  local cursor = cursor_of(bufnr) or s.anchor
  local base = st.items_anchor or s.anchor
  local shift = cursor[1] == base[1] and cursor[2] - base[2] or 0
  local n = #st.items
  for step = 1, n - 1 do
    local index = (st.index - 1 + delta * step) % n + 1
    local item = st.items[index]
    local range = vim.deepcopy(item.range)
    local fits = true
    if shift ~= 0 then
      -- the typed text is in the buffer now, inside the item's range, and must start it
      fits = range.start[1] == cursor[1] and range['end'][1] == cursor[1]
      if fits then
        range['end'][2] = range['end'][2] + shift
        local typed = line_text(bufnr, cursor[1]):sub(range.start[2] + 1, cursor[2])
        fits = #typed < #item.text and vim.startswith(item.text, typed)
      end
    end
    if fits then
      local items, anchor = st.items, st.items_anchor
      M.show(bufnr, range, item.text)
      if st.suggestion then
        st.items, st.index, st.items_anchor = items, index, anchor
        emit(bufnr, 'cycle')
        return true
      end
    end
  end
  return false
end

--- The position in the list of alternatives of what is shown: index, count (nil when none).
function M.alternative(bufnr)
  local st = states[bufnr or api.nvim_get_current_buf()]
  if st and st.suggestion and st.items then
    return st.index, #st.items
  end
end

--- Sends textDocument/inlineCompletion at the cursor (`invoked`: the user asked for it).
function M.request(bufnr, invoked)
  bufnr = bufnr or api.nvim_get_current_buf()
  local st = states[bufnr]
  local client = st and vim.lsp.get_client_by_id(st.client_id)
  local cursor = cursor_of(bufnr)
  if not client or compat.is_stopped(client) or not cursor then
    return false
  end
  local stray = position.stray_cr(bufnr)
  if stray then
    M.dismiss(bufnr)
    st.last_error = position.stray_cr_message(stray)
    if invoked then
      vim.notify('diffusion-lsp: ' .. st.last_error, vim.log.levels.WARN)
    end
    return false
  end
  M.dismiss(bufnr)
  if opts.before_request then
    opts.before_request(bufnr) -- the server must have the text the request is about
  end
  local encoding = client.offset_encoding or 'utf-16'
  local sent = {
    tick = api.nvim_buf_get_changedtick(bufnr),
    row = cursor[1],
    col = cursor[2],
    encoding = encoding,
    invoked = invoked,
  }
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = position.to_lsp(bufnr, cursor[1], cursor[2], encoding),
    context = { triggerKind = invoked and TRIGGER.invoked or TRIGGER.automatic },
  }
  local request = { client = client }
  local ok, id = compat.request(client, METHOD, params, function(err, result)
    if st.request ~= request then
      return -- cancelled or superseded
    end
    st.request = nil
    on_result(bufnr, err, result, sent)
  end, bufnr)
  if ok and id then
    request.id = id
    st.request = request
  end
  return ok
end

--- Requests after `debounce_ms` without further typing.
function M.schedule(bufnr)
  local st = states[bufnr]
  if not st then
    return
  end
  stop_timer(st)
  st.timer = vim.loop.new_timer()
  st.timer:start(opts.debounce_ms, 0, vim.schedule_wrap(function()
    stop_timer(st)
    if states[bufnr] == st and api.nvim_get_mode().mode:sub(1, 1) == 'i' then
      M.request(bufnr, false)
    end
  end))
end

--- Replaces `range` with `text`, moves the cursor after it; returns the end position.
local function apply(bufnr, st, range, text)
  local lines = vim.split(text, '\n', { plain = true })
  local sr, sc = range.start[1], range.start[2]
  api.nvim_buf_set_text(bufnr, sr, sc, range['end'][1], range['end'][2], lines)
  st.own_tick = api.nvim_buf_get_changedtick(bufnr)
  st.seen_tick = st.own_tick
  local er = sr + #lines - 1
  local ec = (#lines == 1 and sc or 0) + #lines[#lines]
  local win = api.nvim_get_current_win()
  if api.nvim_win_get_buf(win) == bufnr then
    api.nvim_win_set_cursor(win, { er + 1, ec })
  end
  return { er, ec }
end

--- Inserts the whole suggestion. Returns false when none is shown.
function M.accept(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local st = states[bufnr]
  local suggestion = st and current(bufnr, st)
  if not suggestion then
    return false
  end
  M.dismiss(bufnr)
  apply(bufnr, st, suggestion.range, suggestion.text)
  emit(bufnr, 'accept')
  return true
end

--- Inserts the first `chunk` bytes of the suggestion; the rest stays shown after it (the
--- alternatives are gone: the answer is being taken).
local function accept_part(bufnr, st, chunk, event)
  local suggestion = st.suggestion
  if #chunk >= #suggestion.text then
    return M.accept(bufnr)
  end
  render.clear(bufnr, M.ns)
  local at = apply(bufnr, st, suggestion.range, chunk)
  st.suggestion, st.items, st.index, st.items_anchor = nil, nil, nil, nil
  M.show(bufnr, { start = at, ['end'] = at }, suggestion.text:sub(#chunk + 1))
  emit(bufnr, event)
  return true
end

--- Inserts the suggestion up to the end of its current line (or, when it starts with a line
--- break, the break and the next line); the rest stays shown. Returns false when none is shown.
function M.accept_line(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local st = states[bufnr]
  if not (st and current(bufnr, st)) then
    return false
  end
  local text = st.suggestion.text
  local stop = text:find('\n', text:sub(1, 1) == '\n' and 2 or 1, true)
  return accept_part(bufnr, st, stop and text:sub(1, stop - 1) or text, 'accept_line')
end

--- The suggestion's next word: a line break and the indentation after it, spaces, then a run of
--- word characters (letters, digits, _, any non-ASCII) or of other non-blank characters.
function M.next_word(text)
  local lead = text:match('^\r?\n?[ \t]*') or ''
  local rest = text:sub(#lead + 1)
  local word = rest:match('^[%w_\128-\255]+') or rest:match('^[^%w_\128-\255%s]+') or ''
  return lead .. word
end

--- Inserts the suggestion's next word (see next_word); the rest stays shown. Returns false
--- when none is shown.
function M.accept_word(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local st = states[bufnr]
  if not (st and current(bufnr, st)) then
    return false
  end
  local chunk = M.next_word(st.suggestion.text)
  if chunk == '' then
    chunk = st.suggestion.text:sub(1, 1)
  end
  return accept_part(bufnr, st, chunk, 'accept_word')
end

--- After a change in insert mode: keep the suggestion if the user typed what it says
--- (or deleted back within it), else drop it and ask again.
function on_text_changed(bufnr)
  local st = states[bufnr]
  local tick = api.nvim_buf_get_changedtick(bufnr)
  if st.own_tick == tick then
    return
  end
  st.seen_tick = tick
  local s = st.suggestion
  local cursor = cursor_of(bufnr)
  if s and cursor and cursor[1] == s.anchor[1] and s.range.start[1] == s.anchor[1]
    and s.range['end'][1] == s.anchor[1] and cursor[2] >= s.range.start[2] then
    local line = line_text(bufnr, cursor[1])
    local typed = line:sub(s.range.start[2] + 1, cursor[2])
    local shift = cursor[2] - s.anchor[2]
    local new_end = s.range['end'][2] + shift
    if #typed < #s.text and vim.startswith(s.text, typed) and new_end >= cursor[2]
      and line:sub(new_end + 1) == s.tail then
      s.range['end'][2] = new_end
      s.anchor = cursor
      paint(bufnr, s)
      return
    end
  end
  M.dismiss(bufnr)
  if opts.auto_trigger then
    M.schedule(bufnr)
  end
end

local function on_cursor_moved(bufnr)
  local st = states[bufnr]
  local s = st.suggestion
  if not s or api.nvim_buf_get_changedtick(bufnr) ~= st.seen_tick then
    return -- a text change is handled by on_text_changed
  end
  local cursor = cursor_of(bufnr)
  if not cursor or cursor[1] ~= s.anchor[1] or cursor[2] ~= s.anchor[2] then
    M.dismiss(bufnr)
  end
end

function M.attach(bufnr, client_id)
  if states[bufnr] then
    states[bufnr].client_id = client_id
    return
  end
  states[bufnr] = { client_id = client_id }
  local group = api.nvim_create_augroup('diffusion_lsp_ghost_' .. bufnr, { clear = true })
  api.nvim_create_autocmd({ 'TextChangedI', 'TextChangedP' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      on_text_changed(bufnr)
    end,
  })
  api.nvim_create_autocmd('CursorMovedI', {
    group = group,
    buffer = bufnr,
    callback = function()
      on_cursor_moved(bufnr)
    end,
  })
  api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.dismiss(bufnr)
    end,
  })
  api.nvim_create_autocmd('BufWipeout', {
    group = group,
    buffer = bufnr,
    callback = function()
      M.detach(bufnr)
    end,
  })
end

function M.detach(bufnr)
  local st = states[bufnr]
  if not st then
    return
  end
  M.dismiss(bufnr)
  states[bufnr] = nil
  pcall(api.nvim_del_augroup_by_name, 'diffusion_lsp_ghost_' .. bufnr)
end

--- Buffers the plugin tracks, for the draft handler.
function M.buffers()
  return vim.tbl_keys(states)
end

function M.client_of(bufnr)
  local st = states[bufnr]
  return st and st.client_id
end

return M
