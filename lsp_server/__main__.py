"""Command line: ``diffusion-lsp`` serves LSP (stdio by default, or ``--tcp``); ``diffusion-lsp infill FILE:LINE:COL``
fills once and prints; ``diffusion-lsp demo`` shows a suggestion developing through a real LSP session;
``diffusion-lsp serve`` runs a team server (engine/team/) that language servers reach with the ``engine`` setting.
``diffusion-lsp adapt [WORKSPACE]`` adapts the model to a workspace (``--remove`` deletes what it kept)."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
from collections.abc import Callable


def _logging(verbosity: int, log_file: str | None) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    # a path that is not UTF-8 (its bytes kept as surrogates) is written escaped, not lost with a "Logging error"
    handler = (logging.FileHandler(log_file, encoding="utf-8", errors="backslashreplace") if log_file
               else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.captureWarnings(True)  # Python warnings (torch, transformers) go to the log, never straight to stderr
    if verbosity < 2:
        logging.getLogger("pygls").setLevel(max(level, logging.WARNING))


def _parse_location(spec: str) -> tuple[str, int, int]:
    path, sep, rest = spec.rpartition(":")
    path2, sep2, line = path.rpartition(":")
    if not sep or not sep2:
        raise argparse.ArgumentTypeError(f"expected PATH:LINE:COL, got {spec!r}")
    try:
        line_no, col_no = int(line), int(rest)
    except ValueError:
        raise argparse.ArgumentTypeError(f"LINE and COL must be integers in {spec!r}") from None
    if line_no < 1 or col_no < 1:
        raise argparse.ArgumentTypeError("LINE and COL are 1-based")
    return path2, line_no, col_no


def _within(name: str) -> Callable[[str], int]:
    """An integer argument in the range its setting takes (``settings._RANGES``): the one-shot command accepts
    what an editor's settings accept, and says so otherwise."""
    from .settings import _RANGES
    lo, hi = _RANGES[name]

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is not in {lo}..{hi}")
        return value
    return parse


def _minutes(text: str) -> float:
    from .adapting import parse_minutes
    try:
        return parse_minutes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _size(text: str) -> int:
    from .transport import parse_size
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _one_shot(run: Callable[[], int]) -> int:
    """``infill`` and ``demo`` to the end: a reader that went away (``| head -c1``) or a full disk ends them with a
    status and at most one line, never a traceback; what is left in stdout's buffer goes nowhere at exit."""
    try:
        status = run()
        sys.stdout.flush()  # here, not at exit, where a closed pipe is a message about an exception ignored
        return status
    except OSError as exc:  # writing stdout: EPIPE (the reader left: silent, as a tool SIGPIPE ends), ENOSPC, ...
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if exc.errno == errno.EPIPE:
            return 141
        print(f"diffusion-lsp: {exc}", file=sys.stderr)
        return 1


def _serve(args, p: argparse.ArgumentParser) -> int:
    """stdio, or --tcp with a session per connection (lsp_server/transport.py, lsp_server/tcp.py)."""
    from engine import memory

    from . import __version__
    from .server import build_server
    from .transport import DEFAULT_MAX_MESSAGE, serve_stdio
    max_message = args.max_message_size or DEFAULT_MAX_MESSAGE
    logging.getLogger("lsp_server").info("diffusion-lsp %s serving on %s", __version__,
                                         f"tcp {args.host}:{args.port}" if args.tcp else "stdio")
    if not args.tcp:
        if args.token_file:
            p.error("--token-file needs --tcp (stdio is the editor's own pipe)")
        memory.freeze_after_loads()   # one editor's server, one model at a time (engine/memory.py)
        serve_stdio(build_server(), max_message)
        return 0
    from .tcp import check_loopback, read_token, serve_tcp
    try:
        check_loopback(args.host)
        token = read_token(args.token_file)
    except (OSError, ValueError) as exc:
        p.error(str(exc))
    if args.max_clients < 1:
        p.error("--max-clients must be at least 1")
    serve_tcp(build_server, args.host, args.port, token=token, max_clients=args.max_clients, max_message=max_message)
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C, while loading or filling too: one line and the shell's status for SIGINT
        print("diffusion-lsp: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str] | None) -> int:
    p = argparse.ArgumentParser(prog="diffusion-lsp", description=__doc__)
    p.add_argument("--stdio", action="store_true", help="speak LSP over stdin/stdout (the default)")
    p.add_argument("--tcp", action="store_true", help="listen on a TCP socket instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="a loopback address only (the default, ::1 or localhost)")
    p.add_argument("--port", type=int, default=2087, help="0: any free port (the log names it)")
    p.add_argument("--max-message-size", type=_size, default=None, metavar="SIZE",
                   help="the largest message read, in bytes or with K/M/G (default 64M); a larger one is "
                        "answered with a Parse error and skipped")
    p.add_argument("--token-file", help="--tcp only: every connection must send this file's token as "
                                        "initializationOptions.token (default: $DIFFUSION_LSP_TOKEN, if set)")
    p.add_argument("--max-clients", type=int, default=4, help="--tcp only: sessions open at once (default 4)")
    p.add_argument("--log-file", help="log here instead of stderr")
    p.add_argument("-v", "--verbose", action="count", default=0, help="-v info, -vv debug")
    sub = p.add_subparsers(dest="command")
    fill = sub.add_parser("infill", help="fill once at PATH:LINE:COL (1-based) and print the inserted text")
    fill.add_argument("location", type=_parse_location, metavar="PATH:LINE:COL")
    fill.add_argument("--model", default="embedded", help="'embedded' or a checkpoint directory")
    fill.add_argument("--steps", type=_within("steps"), default=None, help="0..512 (0: the model's default)")
    fill.add_argument("--threads", type=_within("threads"), default=1, help="1..256")
    fill.add_argument("--device", default="auto")
    fill.add_argument("--dtype", default="auto")
    fill.add_argument("--quantization", default="auto",
                      help="'auto' (default): what the model directory states (serving.json), else none; 'none'; "
                           "'int8': most of the embedded (or any masked) model's matmuls in int8 on the CPU "
                           "(docs/PROTOCOL.md); DiffusionGemma: int8, fp8, int4 through torchao")
    fill.add_argument("--language", default=None, help="language id (default: from the file extension)")
    fill.add_argument("--workspace", default=None, metavar="DIR",
                      help="a typed line may also take a line of this folder's source files, as in an editor with "
                           "it open (setting workspaceLines; default: none)")
    fill.add_argument("--json", action="store_true", help="print one JSON object")
    demo = sub.add_parser("demo", help="a scripted editor session: watch a suggestion develop step by step")
    demo.add_argument("--model", default="embedded")
    demo.add_argument("--file", default=None, help="a source file to complete in (default: a built-in example)")
    demo.add_argument("--at", default=None, metavar="LINE:COL", help="1-based cursor (default: the example's)")
    from engine.team.cli import add_arguments as team_arguments
    team_arguments(sub.add_parser("serve", help="a team server: one model for many editors' language servers "
                                                "(Ray Serve replicas; --plain: one process)"))
    adapt = sub.add_parser("adapt", help="fine-tune the model on a workspace's code (kept in the user cache, "
                                         "used only if it fills held-out lines better)")
    adapt.add_argument("workspace", nargs="?", default=None, help="the workspace folder (default: the current one)")
    adapt.add_argument("--minutes", type=_minutes, default=15.0, help="CPU minutes of training on one thread")
    adapt.add_argument("--model", default="embedded", help="'embedded' or a masked-LM checkpoint directory")
    adapt.add_argument("--method", choices=("auto", "full", "lora"), default="auto",
                       help="train every weight or low-rank adapters only ('auto': adapters above 60M parameters)")
    adapt.add_argument("--remove", action="store_true", help="delete this workspace's adapted models instead")
    args = p.parse_args(argv)
    _logging(args.verbose, args.log_file)
    if args.command == "adapt":
        from .adapting import run_cli
        return run_cli(args)
    if args.command == "infill":
        from .oneshot import run_infill
        return _one_shot(lambda: run_infill(args))
    if args.command == "serve":
        from engine.team.cli import run as run_team
        return run_team(args)
    if args.command == "demo":
        from .demo import run_demo
        return _one_shot(lambda: run_demo(args))
    return _serve(args, p)


if __name__ == "__main__":
    sys.exit(main())
