-- A small test harness for headless Neovim: tests run one after another inside a coroutine
-- so they can wait (for the server, for typed keys to be processed) without blocking the
-- event loop; results go to stdout; Neovim exits non-zero on any failure or on timeout.

local api = vim.api
local H = {}

local tests = {}
vim.o.showmode = false
vim.o.swapfile = false
H.passed, H.failed, H.skipped = 0, 0, 0
local SKIP = {}

function H.out(...)
  io.stdout:write(table.concat({ ... }, ' ') .. '\n')
  io.stdout:flush()
end

function H.test(name, fn)
  tests[#tests + 1] = { name = name, fn = fn }
end

--- Ends the current test as skipped, with a reason.
function H.skip(reason)
  error({ [SKIP] = reason }, 0)
end

--- Yields for `ms` milliseconds (typed keys and server messages are processed meanwhile).
function H.sleep(ms)
  local co = coroutine.running()
  vim.defer_fn(function()
    coroutine.resume(co)
  end, ms)
  coroutine.yield()
end

--- Waits until `cond()` returns a truthy value (returned) or `ms` pass (returns nil).
function H.wait(ms, cond)
  local deadline = vim.loop.now() + ms
  while true do
    local value = cond()
    if value then
      return value
    end
    if vim.loop.now() >= deadline then
      return nil
    end
    H.sleep(20)
  end
end

--- Types `keys` (with mappings) as if the user did, and lets Neovim process them.
function H.feed(keys, settle)
  api.nvim_feedkeys(api.nvim_replace_termcodes(keys, true, false, true), 'mt', false)
  H.sleep(settle or 60)
end

local function describe(value)
  return type(value) == 'string' and value or vim.inspect(value)
end

function H.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(('%s: expected %s, got %s'):format(what or 'value', describe(expected), describe(actual)), 2)
  end
end

function H.ok(value, what)
  if not value then
    error((what or 'assertion') .. ' failed', 2)
  end
  return value
end

--- A scratch directory with `files` (name -> content) written into it.
function H.workspace(files)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  for name, content in pairs(files or {}) do
    local path = dir .. '/' .. name
    vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
    vim.fn.writefile(vim.split(content, '\n', { plain = true }), path)
  end
  return dir
end

function H.lines(bufnr)
  return api.nvim_buf_get_lines(bufnr or 0, 0, -1, false)
end

--- Extmarks of namespace `ns` with details.
function H.marks(bufnr, ns)
  return api.nvim_buf_get_extmarks(bufnr or 0, ns, 0, -1, { details = true })
end

--- The server: $DIFFUSION_LSP, else diffusion-lsp on PATH, else the repository's .venv.
function H.server()
  local from_env = vim.env.DIFFUSION_LSP
  if from_env and from_env ~= '' then
    return from_env
  end
  if vim.fn.executable('diffusion-lsp') == 1 then
    return vim.fn.exepath('diffusion-lsp')
  end
  local here = debug.getinfo(1, 'S').source:sub(2)
  local repo = vim.fn.fnamemodify(here, ':p:h:h:h:h')
  local venv = repo .. '/.venv/bin/diffusion-lsp'
  if vim.fn.executable(venv) == 1 then
    return venv
  end
  return nil
end

--- Runs the registered tests, prints "N passed, N failed", and exits; `timeout_ms` bounds
--- the whole file.
function H.run(timeout_ms)
  vim.defer_fn(function()
    H.out(('TIMEOUT after %d ms'):format(timeout_ms))
    H.out(('%d passed, %d failed'):format(H.passed, H.failed + 1))
    vim.cmd('cquit 2')
  end, timeout_ms)
  local co = coroutine.create(function()
    for _, t in ipairs(tests) do
      local started = vim.loop.now()
      local ok, err = xpcall(t.fn, function(e)
        if type(e) == 'table' and e[SKIP] then
          return e
        end
        return debug.traceback(describe(e), 2)
      end)
      local ms = vim.loop.now() - started
      if ok then
        H.passed = H.passed + 1
        H.out(('ok   %s (%d ms)'):format(t.name, ms))
      elseif type(err) == 'table' and err[SKIP] then
        H.skipped = H.skipped + 1
        H.out(('skip %s: %s'):format(t.name, err[SKIP]))
      else
        H.failed = H.failed + 1
        H.out(('FAIL %s (%d ms)\n%s'):format(t.name, ms, err))
      end
    end
    H.out(('%d passed, %d failed, %d skipped'):format(H.passed, H.failed, H.skipped))
    vim.cmd(H.failed > 0 and 'cquit 1' or 'qall!')
  end)
  local ok, err = coroutine.resume(co)
  if not ok then
    H.out('harness error: ' .. tostring(err))
    vim.cmd('cquit 3')
  end
end

return H
