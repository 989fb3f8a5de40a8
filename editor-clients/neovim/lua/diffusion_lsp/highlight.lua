-- Highlight groups: ghost text like a comment, and the draft's confidence shades blended from
-- the comment colour toward the background (re-derived when the colour scheme changes).

local api = vim.api
local M = {}

local SHADES = { -- group, share of the comment colour, italic
  { 'DiffusionDraftHigh', 1.0, false },
  { 'DiffusionDraftMedium', 0.7, false },
  { 'DiffusionDraftLow', 0.45, true },
  { 'DiffusionDraftMasked', 0.3, false },
}

local function color(group, key)
  local ok, hl = pcall(api.nvim_get_hl_by_name, group, true)
  return ok and hl[key] or nil
end

local function cterm_color(group)
  local ok, hl = pcall(api.nvim_get_hl_by_name, group, false)
  return ok and hl.foreground or nil
end

local function blend(fg, bg, share)
  local out = 0
  for shift = 16, 0, -8 do
    local a = bit.band(bit.rshift(fg, shift), 0xFF)
    local b = bit.band(bit.rshift(bg, shift), 0xFF)
    out = out + bit.lshift(math.floor(a * share + b * (1 - share) + 0.5), shift)
  end
  return out
end

function M.define()
  api.nvim_set_hl(0, 'DiffusionGhost', { link = 'Comment', default = true })
  local fg = color('Comment', 'foreground')
  local bg = color('Normal', 'background') or (vim.o.background == 'light' and 0xFFFFFF or 0x000000)
  for i, shade in ipairs(SHADES) do
    local name, share, italic = shade[1], shade[2], shade[3]
    local spec = { default = true, italic = italic }
    if fg then
      spec.fg = blend(fg, bg, share)
    end
    spec.ctermfg = cterm_color(i <= 2 and 'Comment' or 'NonText')
    api.nvim_set_hl(0, name, spec)
  end
end

return M
