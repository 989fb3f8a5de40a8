-- Paints `diffusion/draft` notifications: the suggestion as it develops, each token shaded
-- by its confidence (DiffusionDraftHigh / Medium / Low / Masked), cleared when the final
-- draft arrives, the request ends, or the buffer changes.

local api = vim.api
local position = require('diffusion_lsp.position')
local render = require('diffusion_lsp.render')

local M = {}

M.ns = api.nvim_create_namespace('diffusion_lsp_draft')
M.MASK = '▒'
M.BOUNDS = { low = 0.4, medium = 0.8 }
M.HL = {
  high = 'DiffusionDraftHigh',
  medium = 'DiffusionDraftMedium',
  low = 'DiffusionDraftLow',
  masked = 'DiffusionDraftMasked',
}
-- A draft nobody finished (the request was cancelled) goes after this long.
local STALE_MS = 3000

-- bufnr -> { id, step, timer }
local shown = {}
-- Hooks set by init.lua: the buffers to consider, whether a suggestion is already shown.
M.buffers = function()
  return {}
end
M.busy = function(_)
  return false
end

function M.bucket(token)
  if token.text:find(M.MASK, 1, true) or token.confidence <= 0 then
    return 'masked'
  elseif token.confidence < M.BOUNDS.low then
    return 'low'
  elseif token.confidence < M.BOUNDS.medium then
    return 'medium'
  end
  return 'high'
end

--- The draft's tokens, or its text cut into masked / unmasked runs when it has none.
local function tokens_of(draft)
  if type(draft.tokens) == 'table' and #draft.tokens > 0 then
    return draft.tokens
  end
  local tokens = {}
  local text = draft.text or ''
  local i = 1
  while i <= #text do
    local s, e = text:find(M.MASK, i, true)
    if s == i then
      tokens[#tokens + 1] = { text = M.MASK, confidence = 0 }
      i = e + 1
    else
      local stop = (s or #text + 1) - 1
      tokens[#tokens + 1] = { text = text:sub(i, stop), confidence = 0.5 }
      i = stop + 1
    end
  end
  return tokens
end

--- Lines of {text, hl} chunks for render.show, split at line breaks inside tokens.
function M.lines(draft)
  local lines = { {} }
  for _, token in ipairs(tokens_of(draft)) do
    local hl = M.HL[M.bucket(token)]
    local pieces = vim.split((token.text:gsub('\r', '')), '\n', { plain = true })
    for i, piece in ipairs(pieces) do
      if i > 1 then
        lines[#lines + 1] = {}
      end
      if piece ~= '' then
        local line = lines[#lines]
        local last = line[#line]
        if last and last[2] == hl then
          last[1] = last[1] .. piece
        else
          line[#line + 1] = { piece, hl }
        end
      end
    end
  end
  return lines
end

--- The first `n` bytes of the tokens.
local function cut_tokens(tokens, n)
  local out = {}
  for _, token in ipairs(tokens) do
    if n <= 0 then
      break
    end
    local piece = token.text:sub(1, n)
    out[#out + 1] = { text = piece, confidence = token.confidence }
    n = n - #piece
  end
  return out
end

local function line_text(bufnr, row)
  return api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
end

--- True when a fill at (row, col) may span several lines: the server's `kind` says so when it
--- sends one ("block" or "span"); otherwise the server's own rule is followed: a block body only
--- on a line blank around the cursor whose previous code line opens a block (ends in ':' or
--- '{'), a span (the draft replaces a range) always, and one line (cut at its end) elsewhere.
function M.multiline(bufnr, range, kind)
  if kind ~= nil then
    return kind == 'block' or kind == 'span'
  end
  local sr, sc, er, ec = range.start[1], range.start[2], range['end'][1], range['end'][2]
  if sr ~= er or sc ~= ec then
    return true
  end
  local line = line_text(bufnr, sr)
  if line:sub(1, sc):find('%S') or line:sub(sc + 1):find('%S') then
    return false
  end
  for row = sr - 1, math.max(0, sr - 50), -1 do
    local code = line_text(bufnr, row):gsub('%s+#.*$', ''):gsub('%s*//.*$', ''):gsub('%s+$', '')
    if code:find('%S') then
      return code:find('[:{]$') ~= nil
    end
  end
  return false
end

--- Where a draft is drawn and what: the draft as the final text will land. A one-line fill is
--- cut at its first line break (the server cuts the final text there); a line break that would
--- only leave an empty line is dropped (as from the final text); and when the text starts with
--- the word fragment typed before an empty range, the fragment is being regenerated and the
--- draft starts where the fragment does. Returns the range and the tokens.
function M.place(bufnr, range, tokens, kind)
  range = vim.deepcopy(range)
  local text = {}
  for _, token in ipairs(tokens) do
    text[#text + 1] = token.text
  end
  text = table.concat(text)
  local sr, sc, er, ec = range.start[1], range.start[2], range['end'][1], range['end'][2]
  if not M.multiline(bufnr, range, kind) then
    local stop = text:find('\r?\n')
    if stop then
      tokens, text = cut_tokens(tokens, stop - 1), text:sub(1, stop - 1)
    end
  end
  local rest = line_text(bufnr, er):sub(ec + 1)
  local trailing = text:match('\r?\n$')
  if trailing and not rest:find('%S') then
    tokens, text = cut_tokens(tokens, #text - #trailing), text:sub(1, #text - #trailing)
  end
  if sr == er and sc == ec then
    local fragment = line_text(bufnr, sr):sub(1, sc):match('[%w_]+$')
    if fragment and #text > #fragment and text:sub(1, #fragment) == fragment then
      range.start = { sr, sc - #fragment }
    end
  end
  return range, tokens
end

local function stop_timer(entry)
  if entry and entry.timer then
    entry.timer:stop()
    entry.timer:close()
    entry.timer = nil
  end
end

function M.clear(bufnr)
  local entry = shown[bufnr]
  if entry then
    stop_timer(entry)
    entry.visible = false
  end
  render.clear(bufnr, M.ns)
end

--- The server stopped: clear `bufnr`'s draft and forget its requests (a new server numbers them
--- from 1 again, and none of its drafts is older than the old server's).
function M.forget(bufnr)
  M.clear(bufnr)
  shown[bufnr] = nil
end

--- True while a draft is painted in `bufnr`.
function M.visible(bufnr)
  local entry = shown[bufnr]
  return entry ~= nil and entry.visible == true
end

local function buffer_of(uri)
  for _, bufnr in ipairs(M.buffers()) do
    if api.nvim_buf_is_loaded(bufnr) and vim.uri_from_bufnr(bufnr) == uri then
      return bufnr
    end
  end
end

--- Request ids are opaque; numeric ones compare as numbers, others never count as older.
local function older(id, than)
  local a, b = tonumber(id), tonumber(than)
  return a ~= nil and b ~= nil and a < b
end

--- Handler for the `diffusion/draft` notification (set in the client's `handlers`).
function M.handler(_, params, ctx)
  if type(params) ~= 'table' or type(params.uri) ~= 'string' or type(params.range) ~= 'table' then
    return
  end
  local bufnr = buffer_of(params.uri)
  if not bufnr then
    return
  end
  local version = vim.lsp.util.buf_versions[bufnr]
  if version ~= nil and params.version ~= nil and version ~= params.version then
    return
  end
  if params.done and type(params.text) == 'string' and params.text ~= '' and params.action == nil then
    -- a suggestion's final draft; one without text (nothing found, or the request ended without an
    -- answer) only clears what was painted, and so does a code action's (its edit has no estimate:
    -- the last suggestion's is kept)
    require('diffusion_lsp.status').suggestion(ctx.client_id, params.fillConfidence)
  end
  local id = tostring(params.id)
  local entry = shown[bufnr]
  if entry and (older(id, entry.id) or (entry.id == id and (entry.done or (params.step or 0) < entry.step))) then
    return
  end
  stop_timer(entry)
  entry = { id = id, step = params.step or 0, done = params.done == true }
  shown[bufnr] = entry
  if params.done or M.busy(bufnr) then
    M.clear(bufnr)
    return
  end
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = client and client.offset_encoding or 'utf-16'
  local range, tokens = M.place(bufnr, position.range_from_lsp(bufnr, params.range, encoding),
    tokens_of(params), params.kind)
  local any = false
  for _, token in ipairs(tokens) do
    any = any or token.text ~= ''
  end
  if not any then
    M.clear(bufnr) -- nothing to draw: no stale draft either
    return
  end
  render.show(bufnr, M.ns, range, M.lines({ tokens = tokens }))
  entry.visible = true
  entry.timer = vim.loop.new_timer()
  entry.timer:start(STALE_MS, 0, vim.schedule_wrap(function()
    if shown[bufnr] == entry then
      M.clear(bufnr)
    end
  end))
end

return M
