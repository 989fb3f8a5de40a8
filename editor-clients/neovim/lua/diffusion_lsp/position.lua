-- Conversions between buffer byte columns and LSP positions in the client's encoding.

local M = {}

local function line_text(bufnr, row)
  return vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
end

--- LSP position {line, character} of (row, byte col), both 0-based.
function M.to_lsp(bufnr, row, col, encoding)
  local line = line_text(bufnr, row)
  col = math.max(0, math.min(col, #line))
  if encoding == 'utf-8' then
    return { line = row, character = col }
  end
  local utf32, utf16 = vim.str_utfindex(line, col)
  return { line = row, character = encoding == 'utf-32' and utf32 or utf16 }
end

--- 0-based (row, byte col) of an LSP position; characters past the end clamp to it.
function M.from_lsp(bufnr, position, encoding)
  local row = position.line
  local line = line_text(bufnr, row)
  local character = position.character
  if encoding == 'utf-8' then
    return row, math.min(character, #line)
  end
  local ok, col = pcall(vim.str_byteindex, line, character, encoding ~= 'utf-32')
  return row, ok and col or #line
end

--- {start = {row, col}, ['end'] = {row, col}} of an LSP range.
function M.range_from_lsp(bufnr, range, encoding)
  local sr, sc = M.from_lsp(bufnr, range.start, encoding)
  local er, ec = M.from_lsp(bufnr, range['end'], encoding)
  return { start = { sr, sc }, ['end'] = { er, ec } }
end

function M.range_to_lsp(bufnr, range, encoding)
  return {
    start = M.to_lsp(bufnr, range.start[1], range.start[2], encoding),
    ['end'] = M.to_lsp(bufnr, range['end'][1], range['end'][2], encoding),
  }
end

--- The first row (0-based) of `bufnr` with a carriage return that LSP counts as a line break and
--- Neovim does not, or nil. In a 'unix' buffer that is one inside a line (one at its end goes out as
--- \r\n, a single break); in a 'dos' or 'mac' buffer, any. Below such a row every LSP line number
--- means another line to the server than to Neovim: its edits would land on the wrong lines.
function M.stray_cr(bufnr)
  local anywhere = vim.bo[bufnr].fileformat ~= 'unix'
  for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    if (anywhere and line or line:sub(1, -2)):find('\r', 1, true) then
      return i - 1
    end
  end
  return nil
end

--- The message for a buffer with such a carriage return at `row`.
function M.stray_cr_message(row)
  return ('line %d holds a carriage return inside it: the server counts it as a line break and Neovim '
    .. 'does not, so its edits would land on the wrong lines; nothing was sent (remove it, e.g. :%%s/\\r//g)')
    :format(row + 1)
end

return M
