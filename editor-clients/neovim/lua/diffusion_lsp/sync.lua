-- Keeps the server's copy of each buffer current when Neovim's own change tracking is gone.
--
-- Neovim's LSP client watches a buffer with one nvim_buf_attach callback. When the buffer is
-- edited while no client at all is attached (the server died, or is being restarted), that
-- callback detaches itself, and it is never attached again for that buffer (0.7 to 0.12): a
-- restarted server gets the text of its didOpen and then no didChange, so it fills stale text
-- (the "corrupted line" of issue #15). This module watches the buffer too. Neovim's callback,
-- registered first, runs first and sets vim.lsp.util.buf_versions[buf] to the new changedtick;
-- when that did not happen although a diffusion-lsp client is attached, Neovim's tracking is
-- gone and this module sends the change itself: the whole text, as a full-content didChange,
-- to each diffusion-lsp client of the buffer (coalesced: one per event-loop turn).

local api = vim.api
local compat = require('diffusion_lsp.compat')

local M = {}

local NAME = 'diffusion-lsp'
-- bufnr -> true while our callback is attached
local watched = {}
-- bufnr -> true once Neovim's own tracking was seen missing (it does not come back)
local lost = {}
-- bufnr -> true while a full-text didChange is due
local pending = {}

--- The initialized diffusion-lsp clients attached to `bufnr` (not stopped).
function M.clients_of(bufnr)
  local out = {}
  for _, client in ipairs(compat.clients(bufnr)) do
    if client.name == NAME and client.initialized ~= false and not compat.is_stopped(client) then
      out[#out + 1] = client
    end
  end
  return out
end

--- Sends the buffer's whole text to its diffusion-lsp clients now, if a change is due.
function M.flush(bufnr)
  if not pending[bufnr] then
    return
  end
  pending[bufnr] = nil
  if not api.nvim_buf_is_loaded(bufnr) then
    return
  end
  local version = api.nvim_buf_get_changedtick(bufnr)
  local lines = api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local ending = ({ dos = '\r\n', mac = '\r' })[vim.bo[bufnr].fileformat] or '\n'
  local text = table.concat(lines, ending)
  if vim.bo[bufnr].eol then
    text = text .. ending -- as Neovim's didOpen sends it
  end
  vim.lsp.util.buf_versions[bufnr] = version
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr), version = version },
    contentChanges = { { text = text } },
  }
  for _, client in ipairs(M.clients_of(bufnr)) do
    compat.notify(client, 'textDocument/didChange', params)
  end
end

local function on_lines(_, bufnr, changedtick)
  if not watched[bufnr] then
    return true
  end
  if #M.clients_of(bufnr) == 0 then
    return -- nobody to tell; stay attached for when a client comes back
  end
  if not lost[bufnr] and vim.lsp.util.buf_versions[bufnr] == changedtick then
    return -- Neovim's own callback ran and sends this change
  end
  lost[bufnr] = true
  vim.lsp.util.buf_versions[bufnr] = changedtick
  if not pending[bufnr] then
    pending[bufnr] = true
    vim.schedule(function()
      M.flush(bufnr)
    end)
  end
end

--- Starts watching `bufnr` (idempotent). Call after a diffusion-lsp client attached to it,
--- so that Neovim's own callback is registered before this one.
function M.watch(bufnr)
  if watched[bufnr] or not api.nvim_buf_is_loaded(bufnr) then
    return
  end
  watched[bufnr] = true
  api.nvim_buf_attach(bufnr, false, {
    on_lines = on_lines,
    on_reload = function()
      if lost[bufnr] then -- Neovim's callback would have sent didOpen; it is gone
        pending[bufnr] = true
        vim.schedule(function()
          M.flush(bufnr)
        end)
      end
    end,
    on_detach = function()
      watched[bufnr], lost[bufnr], pending[bufnr] = nil, nil, nil
    end,
  })
end

--- True once this module has taken over `bufnr`'s changes (for the tests and :DiffusionStatus).
function M.took_over(bufnr)
  return lost[bufnr] == true
end

return M
