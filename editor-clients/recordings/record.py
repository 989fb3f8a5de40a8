"""Makes the recordings in editor-clients/recordings from real runs of the real server.

Run through record.sh (which picks the Python environment that has diffusion-lsp). Three parts:

* neovim: Neovim inside tmux (COLS x ROWS) with the plugin loaded by init.lua, example.py open,
  the cursor on the empty indented line in word_count(); the trigger key (<M-\\>) asks for a
  suggestion, the pane is captured (with colours) every POLL_MS while the draft develops until
  the final ghost text shows, then <Tab> accepts it. Writes neovim-frames.txt (every distinct
  frame, plain text, with its time and what had just happened), neovim-*.png (key frames) and
  neovim.gif (all frames).
* demo: `diffusion-lsp demo --file example.py --at LINE:COL`, plain (NO_COLOR=1: demo.txt) and
  on a pseudo-terminal with colours (demo.png).
* vscode: vscode-drafts.js (the packaged extension with the smoke test's stub editor API):
  vscode-drafts.txt. Skipped, saying so, when node or the extension bundle is missing.

Exits non-zero when a part fails (no ready model, no draft painted, no ghost text, the accept did
not insert it, a renderer missing). Environment: RECORD_MODEL (default "embedded"),
RECORD_VALIDATE (default 0: show the model's text even when it does not parse; the embedded
model's fills here do not), RECORD_HOLD_MS (default 100, see init.lua), RECORD_ONLY (e.g.
"neovim,demo"), NVIM_BIN (default nvim), DIFFUSION_LSP (the server).
"""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
EXAMPLE = HERE / "example.py"
LINE, COL = 15, 9  # 1-based: the empty line (8 spaces) in word_count(), cursor at its end
COLS, ROWS = 100, 30
POLL_MS = 20
TIMEOUT_S = 60

MODEL = os.environ.get("RECORD_MODEL", "embedded")
VALIDATE = os.environ.get("RECORD_VALIDATE", "0") not in ("0", "false", "")
HOLD_MS = int(os.environ.get("RECORD_HOLD_MS", "100"))
SETTINGS = {"model": MODEL, "validate": VALIDATE, "draftIntervalMs": 0, "threads": 1}


class Failure(Exception):
    pass


def now_ns() -> int:
    return time.monotonic_ns()  # CLOCK_MONOTONIC, as Neovim's vim.loop.hrtime()


# --------------------------------------------------------------------------------------------
# ANSI (what `tmux capture-pane -e` and the demo print) -> cells -> PNG / GIF

DEFAULT_FG = (0xD0, 0xD0, 0xD0)  # init.lua sets Normal to these, so blends match
DEFAULT_BG = (0x1C, 0x1C, 0x1C)
BASIC = [(0x00, 0x00, 0x00), (0xCD, 0x31, 0x31), (0x0D, 0xBC, 0x79), (0xE5, 0xE5, 0x10),
         (0x24, 0x72, 0xC8), (0xBC, 0x3F, 0xBC), (0x11, 0xA8, 0xCD), (0xE5, 0xE5, 0xE5),
         (0x66, 0x66, 0x66), (0xF1, 0x4C, 0x4C), (0x23, 0xD1, 0x8B), (0xF5, 0xF5, 0x43),
         (0x3B, 0x8E, 0xEA), (0xD6, 0x70, 0xD6), (0x29, 0xB8, 0xDB), (0xFF, 0xFF, 0xFF)]
SGR = re.compile(r"\x1b\[([0-9;:]*)m")
OTHER_ESCAPE = re.compile(r"\x1b(\[[0-9;?]*[A-Za-ln-z]|\][^\x07]*\x07|[()][0-9A-B])")


def color256(n: int) -> tuple[int, int, int]:
    if n < 16:
        return BASIC[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return steps[n // 36], steps[(n // 6) % 6], steps[n % 6]
    v = 8 + 10 * (n - 232)
    return v, v, v


def apply_sgr(state: dict, params: str) -> None:
    codes = [int(p) if p.isdigit() else 0 for p in re.split(r"[;:]", params)] if params else [0]
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            state.clear()
        elif c in (1, 2, 3, 4, 7, 9):
            state[{1: "bold", 2: "dim", 3: "italic", 4: "underline", 7: "reverse", 9: "strike"}[c]] = True
        elif c in (22, 23, 24, 27, 29):
            for key in {22: ("bold", "dim"), 23: ("italic",), 24: ("underline",), 27: ("reverse",), 29: ("strike",)}[c]:
                state.pop(key, None)
        elif 30 <= c <= 37 or 90 <= c <= 97:
            state["fg"] = BASIC[c - 30 if c < 90 else c - 90 + 8]
        elif 40 <= c <= 47 or 100 <= c <= 107:
            state["bg"] = BASIC[c - 40 if c < 100 else c - 100 + 8]
        elif c in (39, 49):
            state.pop("fg" if c == 39 else "bg", None)
        elif c in (38, 48) and i + 1 < len(codes):
            key = "fg" if c == 38 else "bg"
            if codes[i + 1] == 5 and i + 2 < len(codes):
                state[key] = color256(codes[i + 2])
                i += 2
            elif codes[i + 1] == 2 and i + 4 < len(codes):
                state[key] = tuple(codes[i + 2:i + 5])
                i += 4
        i += 1


def parse_ansi(lines: list[str]) -> list[list[tuple[str, dict]]]:
    """Rows of (character, style) cells; the style carries over line ends (tmux does)."""
    state: dict = {}
    rows = []
    for line in lines:
        line = OTHER_ESCAPE.sub("", line.replace("\r", ""))
        row: list[tuple[str, dict]] = []
        pos = 0
        for m in list(SGR.finditer(line)) + [None]:
            text = line[pos:m.start()] if m else line[pos:]
            for ch in text:
                if unicodedata.combining(ch):
                    continue
                row.append((ch, dict(state)))
                if unicodedata.east_asian_width(ch) in ("W", "F"):
                    row.append(("", dict(state)))
            if m:
                apply_sgr(state, m.group(1))
                pos = m.end()
        rows.append(row)
    return rows


def strip_ansi(text: str) -> str:
    return OTHER_ESCAPE.sub("", SGR.sub("", text))


class Renderer:
    FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")

    def __init__(self, size: int = 15):
        from PIL import ImageFont
        self.ImageFont = ImageFont
        paths = {"regular": "DejaVuSansMono.ttf", "bold": "DejaVuSansMono-Bold.ttf",
                 "italic": "DejaVuSansMono-Oblique.ttf", "bold_italic": "DejaVuSansMono-BoldOblique.ttf"}
        self.fonts = {}
        for style, name in paths.items():
            path = self._find(name)
            if path is None:
                raise Failure(f"font {name} not found (Debian: apt-get install fonts-dejavu-core)")
            self.fonts[style] = ImageFont.truetype(str(path), size)
        regular = self.fonts["regular"]
        ascent, descent = regular.getmetrics()
        self.cw = round(regular.getlength("M"))
        self.ch = ascent + descent + 2
        self.pad = 10

    def _find(self, name: str) -> Path | None:
        if (self.FONT_DIR / name).exists():
            return self.FONT_DIR / name
        found = shutil.which("fc-match") and subprocess.run(
            ["fc-match", "-f", "%{file}", name.rsplit(".", 1)[0]], capture_output=True, text=True).stdout
        return Path(found) if found and Path(found).name == name else None

    def render(self, lines: list[str], cols: int, rows: int, cursor: tuple[int, int, str] | None = None):
        from PIL import Image, ImageDraw
        cells = parse_ansi(lines)
        img = Image.new("RGB", (cols * self.cw + 2 * self.pad, rows * self.ch + 2 * self.pad), DEFAULT_BG)
        draw = ImageDraw.Draw(img)
        for y, row in enumerate(cells[:rows]):
            for x, (ch, st) in enumerate(row[:cols]):
                fg, bg = st.get("fg", DEFAULT_FG), st.get("bg", DEFAULT_BG)
                if st.get("reverse"):
                    fg, bg = bg, fg
                if st.get("dim"):
                    fg = tuple((a + b) // 2 for a, b in zip(fg, bg))
                x0, y0 = self.pad + x * self.cw, self.pad + y * self.ch
                if bg != DEFAULT_BG:
                    draw.rectangle([x0, y0, x0 + self.cw - 1, y0 + self.ch - 1], fill=bg)
                if ch and not ch.isspace():
                    bold, italic = st.get("bold"), st.get("italic")
                    style = "bold_italic" if bold and italic else "bold" if bold else "italic" if italic else "regular"
                    draw.text((x0, y0 + 1), ch, font=self.fonts[style], fill=fg)
                if st.get("underline"):
                    draw.line([x0, y0 + self.ch - 3, x0 + self.cw - 1, y0 + self.ch - 3], fill=fg)
        if cursor is not None:
            x, y, shape = cursor
            x0, y0 = self.pad + x * self.cw, self.pad + y * self.ch
            if shape == "bar":
                draw.rectangle([x0, y0, x0 + 1, y0 + self.ch - 1], fill=DEFAULT_FG)
            else:
                draw.rectangle([x0, y0, x0 + self.cw - 1, y0 + self.ch - 1], outline=DEFAULT_FG)
        return img


def save_png(img, path: Path) -> None:
    img.quantize(colors=64, dither=0).save(path, optimize=True)


def save_gif(images: list, durations: list[int], path: Path) -> None:
    frames = [im.quantize(colors=64, dither=0) for im in images]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=durations, loop=0,
                   optimize=True, disposal=1)


# --------------------------------------------------------------------------------------------
# Neovim in tmux


class Tmux:
    def __init__(self, tmp: Path):
        self.socket = f"diffusion-lsp-recording-{os.getpid()}"
        self.conf = tmp / "tmux.conf"
        term = "tmux-256color" if subprocess.run(["infocmp", "tmux-256color"], capture_output=True).returncode == 0 \
            else "screen-256color"
        self.conf.write_text(f"set -g status off\nset -g default-terminal {term}\nset -s escape-time 0\n"
                             "set -g history-limit 0\n")

    def __call__(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(["tmux", "-L", self.socket, "-f", str(self.conf), *args],
                              capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise Failure(f"tmux {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    def capture(self) -> tuple[list[str], tuple[int, int]]:
        out = self("capture-pane", "-p", "-e", "-t", "rec", ";", "display", "-p", "-t", "rec",
                   "#{cursor_x},#{cursor_y}")
        lines = out.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        x, y = (int(v) for v in lines.pop().split(","))
        return lines[:ROWS], (x, y)

    def kill(self) -> None:
        self("kill-server", check=False)


class Events:
    """The log init.lua writes: monotonic ns, kind, detail."""

    def __init__(self, path: Path):
        self.path = path
        path.write_text("")

    def read(self) -> list[tuple[int, str, str]]:
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            parts = line.split("\t", 2)
            if len(parts) == 3 and parts[0].isdigit():
                out.append((int(parts[0]), parts[1], parts[2]))
        return out

    def has(self, kind: str, detail: str | None = None) -> bool:
        return any(k == kind and (detail is None or d == detail) for _, k, d in self.read())


def wait_until(what: str, cond, timeout: float = TIMEOUT_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise Failure(f"timed out after {timeout:.0f} s waiting for {what}")


LABELS = {
    "draft": "draft painted",
    "draft-done": "final draft (done): the draft is cleared",
    "ghost-result": "the answer arrived",
    "ghost-show": "ghost text shown",
    "ghost-accept": "<Tab>: accepted",
    "changed": "<Tab>: accepted, the text is in the buffer",
}


def record_neovim(tmp: Path, server: str, out: Path, renderer: Renderer) -> str:
    if not shutil.which("tmux"):
        raise Failure("tmux not found (apt-get install tmux)")
    nvim = os.environ.get("NVIM_BIN", "nvim")
    if not shutil.which(nvim):
        raise Failure("nvim not found (apt-get install neovim)")
    version = subprocess.run([nvim, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    work = tmp / "work"
    work.mkdir()
    shutil.copy(EXAMPLE, work / EXAMPLE.name)
    events = Events(tmp / "events.log")
    env = {
        "XDG_CONFIG_HOME": tmp / "config", "XDG_DATA_HOME": tmp / "data", "XDG_STATE_HOME": tmp / "state",
        "XDG_CACHE_HOME": tmp / "cache", "RECORD_PLUGIN": REPO / "editor-clients" / "neovim",
        "RECORD_SERVER": server, "RECORD_SETTINGS": json.dumps(SETTINGS), "RECORD_EVENTS": events.path,
        "RECORD_HOLD_MS": HOLD_MS, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
    }
    tmux = Tmux(tmp)
    env_args = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    frames: list[dict] = []
    try:
        tmux("new-session", "-d", "-x", str(COLS), "-y", str(ROWS), "-s", "rec", "-c", str(work), *env_args,
             nvim, "-u", str(HERE / "init.lua"), "-i", "NONE", "-n", EXAMPLE.name)
        wait_until("the model to load (status ready)",
                   lambda: events.has("status", "ready") or events.has("status", "error"), 120)
        if events.has("status", "error"):
            raise Failure(f"the server reported an error: {events.read()}")
        line = (work / EXAMPLE.name).read_text().splitlines()[LINE - 1]
        if line.strip() or len(line) != COL - 1:
            raise Failure(f"example.py line {LINE} is not {COL - 1} spaces: {line!r}")
        tmux("send-keys", "-t", "rec", f"{LINE}G", "A")
        wait_until("insert mode", lambda: any("-- INSERT --" in strip_ansi(x) for x in tmux.capture()[0]), 10)
        time.sleep(0.3)

        def grab(label: str | None = None) -> None:
            lines, cursor = tmux.capture()
            t = now_ns()  # init.lua logs before drawing: every event that shows was logged by now
            if label is None:
                past = [(et, k, d) for et, k, d in events.read() if t0 <= et <= t and k in LABELS]
                label = LABELS[past[-1][1]] if past else "<M-\\> pressed: waiting for the first draft"
                if past and past[-1][1] == "draft":
                    label += f" (server step {past[-1][2].split(':', 1)[0].removeprefix('step ')})"
            if frames and frames[-1]["lines"] == lines and frames[-1]["cursor"] == cursor:
                return
            frames.append({"t": t, "lines": lines, "cursor": cursor, "label": label})

        grab("before: insert mode at the end of the empty line, nothing asked yet")
        t0 = now_ns()
        tmux("send-keys", "-t", "rec", "M-\\")
        end = time.monotonic() + TIMEOUT_S
        shown_at = None
        while time.monotonic() < end:
            grab()
            kinds = [k for _, k, _ in events.read()]
            if "ghost-show" in kinds:
                shown_at = shown_at or time.monotonic()
                if time.monotonic() - shown_at > 0.3:
                    break
            elif "ghost-result" in kinds and "draft-done" in kinds:
                time.sleep(0.5)
                if not events.has("ghost-show"):
                    drafts = [d for _, k, d in events.read() if k.startswith("draft")]
                    raise Failure("the server answered with no suggestion at the cursor (the model proposed nothing "
                                  f"that passed; drafts: {drafts[-1:] or 'none'}); try RECORD_VALIDATE=0")
            time.sleep(POLL_MS / 1000)
        else:
            raise Failure(f"no ghost text within {TIMEOUT_S} s; events: {events.read()[-5:]}")
        if not events.has("draft"):
            raise Failure("no draft was painted (is the server's drafts setting on?)")
        suggestion = [d for _, k, d in events.read() if k == "ghost-show"][-1]
        tmux("send-keys", "-t", "rec", "Tab")
        end = time.monotonic() + 10
        while time.monotonic() < end and not events.has("changed"):
            grab()
            time.sleep(POLL_MS / 1000)
        if not events.has("changed"):
            raise Failure("<Tab> did not insert the suggestion")
        time.sleep(0.3)
        grab()
        tmux("send-keys", "-t", "rec", "Escape", ":qa!", "Enter")
    finally:
        tmux.kill()

    # The text frames.
    all_events = events.read()
    text = [f"# Neovim ({version}) with editor-clients/neovim, in tmux {COLS}x{ROWS}, against the real diffusion-lsp.",
            f"# Server settings: {json.dumps(SETTINGS)}. Document {EXAMPLE.name}, cursor {LINE}:{COL}.",
            "# Keys: <M-\\> asks for a suggestion, <Tab> accepts it. Regenerate: bash editor-clients/recordings/record.sh",
            f"# Every distinct screen the {POLL_MS} ms poller captured (tmux capture-pane), with the time the capture",
            "# ended (ms since <M-\\>) and the last thing Neovim had logged by then. Each draft is held on screen for",
            f"# at least {HOLD_MS} ms (RECORD_HOLD_MS; the server is not slowed, its drafts queue) so that no step is",
            "# missed; the times here include those holds. Unheld timing: vscode-drafts.txt, demo.txt.", ""]
    for i, f in enumerate(frames, 1):
        text.append(f"===== frame {i:>2}  t={(f['t'] - t0) / 1e6:+8.1f} ms  {f['label']} "
                    f"{'=' * max(0, COLS - 40 - len(f['label']))}")
        text.extend(strip_ansi(x).rstrip() for x in f["lines"])
    text += ["", "===== event log (Neovim side; ms since <M-\\>)"]
    for t, kind, detail in all_events:
        if t >= t0:
            text.append(f"{(t - t0) / 1e6:+9.1f}  {kind:<14} {detail}")
    (out / "neovim-frames.txt").write_text("\n".join(text) + "\n", encoding="utf-8")

    # Images: key frames and the animation.
    def image(f):
        mode = "bar" if any("-- INSERT --" in strip_ansi(x) for x in f["lines"][-2:]) else "block"
        return renderer.render(f["lines"], COLS, ROWS, (*f["cursor"], mode))

    draft_frames = [f for f in frames if f["label"].startswith("draft painted")]
    ghost = next((f for f in frames if f["label"] == LABELS["ghost-show"]), None)
    if not draft_frames or ghost is None:
        raise Failure(f"no frame shows {'a draft' if not draft_frames else 'the ghost text'}; see neovim-frames.txt")
    accepted = frames[-1]
    keys = {"neovim-1-before.png": frames[0], "neovim-2-first-draft.png": draft_frames[0],
            "neovim-3-middle-draft.png": draft_frames[len(draft_frames) // 2],
            "neovim-4-last-draft.png": draft_frames[-1], "neovim-5-ghost-text.png": ghost,
            "neovim-6-accepted.png": accepted}
    for name, f in keys.items():
        save_png(image(f), out / name)
    durations = []
    for f in frames:
        durations.append(1500 if f is frames[0] else 2500 if f is ghost else 3500 if f is accepted
                         else 250 if f in draft_frames else 400)
    save_gif([image(f) for f in frames], durations, out / "neovim.gif")
    return (f"neovim: {len(frames)} frames ({len(draft_frames)} drafts), ghost text {suggestion!r} "
            f"accepted with <Tab>")


# --------------------------------------------------------------------------------------------
# diffusion-lsp demo


def run_demo(server: str, tty: bool, tmp: Path) -> str:
    cmd = [server, "demo", "--model", MODEL, "--file", str(EXAMPLE.relative_to(REPO)), "--at", f"{LINE}:{COL}"]
    env = dict(os.environ)
    errors = open(tmp / f"demo-stderr-{int(tty)}.txt", "w")
    if not tty:
        env["NO_COLOR"] = "1"
        proc = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=errors, text=True,
                              timeout=TIMEOUT_S)
        output, rc = proc.stdout, proc.returncode
    else:
        env.pop("NO_COLOR", None)
        env["TERM"] = "xterm-256color"
        master, slave = pty.openpty()
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=errors)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        rc = proc.wait(timeout=TIMEOUT_S)
        os.close(master)
        output = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    if rc != 0:
        raise Failure(f"diffusion-lsp demo exited {rc}: {(tmp / f'demo-stderr-{int(tty)}.txt').read_text()[-2000:]}")
    return output


def record_demo(tmp: Path, server: str, out: Path, renderer: Renderer) -> str:
    plain = run_demo(server, False, tmp)
    header = (f"$ NO_COLOR=1 diffusion-lsp demo --model {MODEL} --file {EXAMPLE.relative_to(REPO)} --at {LINE}:{COL}\n"
              "# (the demo keeps the server's default settings: validate on)\n")
    (out / "demo.txt").write_text(header + plain, encoding="utf-8")
    colored = run_demo(server, True, tmp)
    lines = [f"$ diffusion-lsp demo --file {EXAMPLE.relative_to(REPO)} --at {LINE}:{COL}"] + colored.rstrip("\n").split("\n")
    width = max(len(strip_ansi(x)) for x in lines) + 1
    save_png(renderer.render(lines, width, len(lines)), out / "demo.png")
    last = [x for x in plain.splitlines() if x.strip()][-2:]
    return "demo: " + " / ".join(x.strip() for x in last)


# --------------------------------------------------------------------------------------------


def record_vscode(tmp: Path, server: str, out: Path) -> str:
    node = shutil.which("node")
    vscode = REPO / "editor-clients" / "vscode"
    bundle = vscode / "dist" / "extension.js"
    if node is None:
        return "vscode: SKIPPED (node not found)"
    esbuild = vscode / "node_modules" / ".bin" / "esbuild"
    if esbuild.exists():  # build the bundle from the current sources, as `npm run smoke` does
        proc = subprocess.run(["npm", "run", "--silent", "bundle"], cwd=vscode, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"record: npm run bundle failed, using the existing bundle: {proc.stderr.strip()[-500:]}",
                  file=sys.stderr)
    if not bundle.exists():
        return "vscode: SKIPPED (no editor-clients/vscode/dist/extension.js; run npm ci && npm run bundle there)"
    proc = subprocess.run([node, str(HERE / "vscode-drafts.js"), server, str(EXAMPLE), str(LINE), str(COL),
                           str(out / "vscode-drafts.txt"), json.dumps(SETTINGS)],
                          capture_output=True, text=True, timeout=TIMEOUT_S + 60)
    if proc.returncode != 0:
        raise Failure(f"vscode-drafts.js failed: {(proc.stdout + proc.stderr).strip()[-2000:]}")
    return proc.stdout.strip()


def main() -> int:
    # Killed by record.sh's timeout: unwind, so that the tmux server (and Neovim, and its
    # diffusion-lsp) started here go too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    server = os.environ.get("DIFFUSION_LSP") or shutil.which("diffusion-lsp") or str(REPO / ".venv" / "bin" / "diffusion-lsp")
    if not os.access(server, os.X_OK):
        print(f"record: diffusion-lsp not found ({server}); install the server or set DIFFUSION_LSP", file=sys.stderr)
        return 1
    only = set(filter(None, os.environ.get("RECORD_ONLY", "neovim,demo,vscode").split(",")))
    try:
        import PIL  # noqa: F401
    except ImportError:
        print(f"record: Pillow is needed for the images ({sys.executable} -m pip install pillow)", file=sys.stderr)
        return 1
    out = HERE
    started = time.monotonic()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="diffusion-lsp-recording-") as name:
        tmp = Path(name)
        try:
            renderer = Renderer()
        except Failure as exc:
            print(f"record: {exc}", file=sys.stderr)
            return 1
        parts = {"neovim": lambda work, stage: record_neovim(work, server, stage, renderer),
                 "demo": lambda work, stage: record_demo(work, server, stage, renderer),
                 "vscode": lambda work, stage: record_vscode(work, server, stage)}
        for part, fn in parts.items():
            if part not in only:
                continue
            # Each part writes into a staging folder; its files replace the committed ones only
            # when the whole part succeeded.
            work, stage = tmp / part, tmp / f"{part}-out"
            work.mkdir()
            stage.mkdir()
            t = time.monotonic()
            try:
                print(f"record: {fn(work, stage)}  [{time.monotonic() - t:.1f} s]")
            except (Failure, subprocess.TimeoutExpired, OSError) as exc:
                failures += 1
                print(f"record: {part} FAILED: {exc}", file=sys.stderr)
                continue
            for path in stage.iterdir():
                shutil.copyfile(path, out / path.name)
    size = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    print(f"record: {'FAILED' if failures else 'done'} in {time.monotonic() - started:.0f} s; "
          f"{out.relative_to(REPO)} holds {size / 1024:.0f} KiB")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
