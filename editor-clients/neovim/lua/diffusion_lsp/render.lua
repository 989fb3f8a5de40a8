-- Paints text that is not in the buffer yet (a suggestion, a draft) where it would go, as
-- extmark virtual text: the first line at the insertion point, the other lines as virtual
-- lines below. Neovim before 0.10 has no inline virtual text, so the first line is drawn as
-- an overlay that repeats the rest of the line after it; the buffer looks as it will after
-- accepting.

local api = vim.api
local M = {}

M.has_inline = vim.fn.has('nvim-0.10') == 1
local TAIL_HL = 'Normal'

local function line_text(bufnr, row)
  return api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
end

local function chunks_text(chunks)
  local parts = {}
  for _, chunk in ipairs(chunks) do
    parts[#parts + 1] = chunk[1]
  end
  return table.concat(parts)
end

--- Tabs become spaces up to the next tab stop, counted from display column `vcol`;
--- returns the new chunks and the display column after them.
local function expand_tabs(chunks, vcol, tabstop)
  local out = {}
  for _, chunk in ipairs(chunks) do
    local segments = vim.split(chunk[1], '\t', { plain = true })
    local parts = {}
    for i, segment in ipairs(segments) do
      parts[#parts + 1] = segment
      vcol = vcol + vim.fn.strdisplaywidth(segment)
      if i < #segments then
        local pad = tabstop - (vcol % tabstop)
        parts[#parts + 1] = string.rep(' ', pad)
        vcol = vcol + pad
      end
    end
    out[#out + 1] = { table.concat(parts), chunk[2] }
  end
  return out, vcol
end

--- Drops the first `n` bytes of the chunks' text.
local function drop_prefix(chunks, n)
  local out = {}
  for _, chunk in ipairs(chunks) do
    if n >= #chunk[1] then
      n = n - #chunk[1]
    else
      out[#out + 1] = { chunk[1]:sub(n + 1), chunk[2] }
      n = 0
    end
  end
  return out
end

--- Length in bytes of the common prefix of a and b, backed off to a character boundary.
local function common_prefix(a, b)
  local n = 0
  while n < #a and n < #b and a:byte(n + 1) == b:byte(n + 1) do
    n = n + 1
  end
  while n > 0 and n < #a and a:byte(n + 1) >= 0x80 and a:byte(n + 1) < 0xC0 do
    n = n - 1
  end
  return n
end

--- Splits text into lines of one-chunk lists in highlight `hl`.
function M.text_lines(text, hl)
  local lines = {}
  local clean = text:gsub('\r', '')
  for _, line in ipairs(vim.split(clean, '\n', { plain = true })) do
    lines[#lines + 1] = { { line, hl } }
  end
  return lines
end

--- Shows `lines` (a list of lines, each a list of {text, hl} chunks) as the text that will
--- replace `range` ({start = {row, col}, ['end'] = {row, col}}, 0-based bytes) in `bufnr`,
--- in namespace `ns` (cleared first). Returns the extmark id.
function M.show(bufnr, ns, range, lines)
  api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
  local sr, sc = range.start[1], range.start[2]
  local er, ec = range['end'][1], range['end'][2]
  local row_text = line_text(bufnr, sr)
  local tail = (er == sr and row_text or line_text(bufnr, er)):sub(ec + 1)
  local tabstop = api.nvim_buf_get_option(bufnr, 'tabstop')
  local first = lines[1] or {}
  local single = #lines <= 1

  if M.has_inline and single and sr == er and sc == ec then
    local vcol = vim.fn.strdisplaywidth(row_text:sub(1, sc))
    return api.nvim_buf_set_extmark(bufnr, ns, sr, sc, {
      virt_text = (expand_tabs(first, vcol, tabstop)),
      virt_text_pos = 'inline',
    })
  end

  -- What already reads the same on screen (typically what the user typed) is not redrawn.
  local skip = common_prefix(row_text:sub(sc + 1), chunks_text(first))
  local col = sc + skip
  first = drop_prefix(first, skip)
  local vcol = vim.fn.strdisplaywidth(row_text:sub(1, col))
  local head = vim.deepcopy(first)
  if single and tail ~= '' then
    head[#head + 1] = { tail, TAIL_HL }
  end
  local virt_text, vend = expand_tabs(head, vcol, tabstop)
  -- Cover what the overlay does not reach (the tail moves to the last line, or is replaced).
  local existing = vim.fn.strdisplaywidth(row_text) - vcol
  if vend - vcol < existing then
    virt_text[#virt_text + 1] = { string.rep(' ', existing - (vend - vcol)), TAIL_HL }
  end
  if #virt_text == 0 then
    virt_text = { { '', TAIL_HL } }
  end

  local virt_lines = {}
  for i = 2, #lines do
    local chunks = vim.deepcopy(lines[i])
    if i == #lines and tail ~= '' then
      chunks[#chunks + 1] = { tail, TAIL_HL }
    end
    local expanded = expand_tabs(chunks, 0, tabstop)
    virt_lines[#virt_lines + 1] = #expanded > 0 and expanded or { { '', TAIL_HL } }
  end

  return api.nvim_buf_set_extmark(bufnr, ns, sr, col, {
    virt_text = virt_text,
    virt_text_pos = 'overlay',
    virt_lines = #virt_lines > 0 and virt_lines or nil,
  })
end

function M.clear(bufnr, ns)
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
  end
end

-- Exposed for the tests.
M._expand_tabs = expand_tabs
M._common_prefix = common_prefix

return M
