-- Highlight groups. DiffusionGhost, the suggestion: the Normal text colour dimmed halfway toward
-- the background, italic (not the Comment colour: a suggestion must not read as a comment). The
-- draft's confidence shades are blended from it toward the background. A colour scheme or the
-- user's :highlight wins over them (see `set`); they are re-derived when the colour scheme changes.

local api = vim.api
local M = {}

M.GHOST = 'DiffusionGhost'
M.GHOST_SHARE = 0.55 -- share of the Normal foreground in the ghost colour
M.GHOST_CTERM = 244 -- a mid grey (256-colour terminals)

local SHADES = { -- group, share of the ghost colour, italic
  { 'DiffusionDraftHigh', 1.0, true },
  { 'DiffusionDraftMedium', 0.75, true },
  { 'DiffusionDraftLow', 0.5, true },
  { 'DiffusionDraftMasked', 0.35, false },
}

local function color(group, key)
  local ok, hl = pcall(api.nvim_get_hl_by_name, group, true)
  return ok and hl[key] or nil
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
M._blend = blend

-- group -> the foreground this module last gave it; a group whose colour is still that one (or
-- that has none) is re-derived, one the user or a scheme changed is left alone.
local ours = {}

local function set(name, spec)
  local current = color(name, 'foreground')
  spec.default = not (current == nil or current == ours[name]) or nil
  api.nvim_set_hl(0, name, spec)
  ours[name] = color(name, 'foreground') == spec.fg and spec.fg or ours[name]
end

function M.define()
  local light = vim.o.background == 'light'
  local bg = color('Normal', 'background') or (light and 0xFFFFFF or 0x000000)
  local fg = color('Normal', 'foreground') or (light and 0x000000 or 0xD0D0D0)
  local ghost_fg = blend(fg, bg, M.GHOST_SHARE)
  set(M.GHOST, {
    fg = ghost_fg,
    ctermfg = M.GHOST_CTERM,
    italic = true,
  })
  -- The shades follow DiffusionGhost as the user or the scheme set it, when it has a colour.
  local base = color(M.GHOST, 'foreground') or ghost_fg
  for _, shade in ipairs(SHADES) do
    local name, share, italic = shade[1], shade[2], shade[3]
    set(name, {
      fg = blend(base, bg, share),
      ctermfg = share >= 0.75 and M.GHOST_CTERM or 240,
      italic = italic,
    })
  end
end

return M
