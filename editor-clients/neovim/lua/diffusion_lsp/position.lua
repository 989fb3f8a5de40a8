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

return M
