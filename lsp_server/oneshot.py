"""``diffusion-lsp infill PATH:LINE:COL``: the server's engine path, once, from the command line."""

from __future__ import annotations

import json
import os
import sys
import time

from engine import Engine, EngineConfig, EngineError, InfillRequest, worklines
from engine.languages import PLAIN, check_spec, checked_languages, grammar_languages, language_for_path, spec_for

from .documents import Document


def _place(doc: Document, start: int, end: int) -> dict:
    """``start`` and ``end`` as LSP positions (0-based, UTF-16 columns)."""
    a, b = doc.position_at(start), doc.position_at(end)
    return {"start": {"line": a.line, "character": a.character}, "end": {"line": b.line, "character": b.character}}


def run_infill(args) -> int:
    path, line, col = args.location
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"diffusion-lsp: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    text = text.removeprefix("\ufeff")  # a UTF-8 byte order mark is no character of line 1 (nor an editor's)
    doc = Document(path, args.language or language_for_path(path), 0, text)
    if args.language and spec_for(args.language) is PLAIN and args.language.lower() != PLAIN.name \
            and check_spec(args.language) is None:
        print(f"diffusion-lsp: language {args.language!r} is not supported: filled as plain text, without a syntax "
              f"check (supported: {', '.join(grammar_languages())}; as plain text with a syntax check: "
              f"{', '.join(checked_languages())})", file=sys.stderr)
    if line > len(doc.line_starts()):
        print(f"diffusion-lsp: {path} has {len(doc.line_starts())} lines, not {line}", file=sys.stderr)
        return 2
    start = doc.line_starts()[line - 1]
    width = doc._line_end(line - 1) - start  # characters, as COL counts them; a line ends at LF, CRLF or CR
    if col > width + 1:
        print(f"diffusion-lsp: line {line} of {path} has {width} characters: COL is 1..{width + 1}, not {col}",
              file=sys.stderr)
        return 2
    offset = start + col - 1  # COL counts characters, as compilers print
    config = EngineConfig.of(model=args.model, threads=args.threads, device=args.device, dtype=args.dtype,
                             quantization=args.quantization, **({"steps": args.steps} if args.steps else {}))
    workspace = None
    if getattr(args, "workspace", None):
        try:
            workspace = os.path.realpath(args.workspace)
            worklines.register(workspace, worklines.scan(workspace))
        except (OSError, ValueError) as exc:
            print(f"diffusion-lsp: cannot read the workspace {args.workspace}: {exc}", file=sys.stderr)
            return 2
    engine = Engine(config)
    t0 = time.perf_counter()
    wait = True
    try:
        engine.start().result()
        load_ms = (time.perf_counter() - t0) * 1000
        completion = engine.infill_sync(InfillRequest(text=text, offset=offset, language=doc.language_id,
                                                      workspace=workspace,
                                                      path=os.path.realpath(path) if workspace else None))
    except EngineError as exc:
        print(f"diffusion-lsp: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        wait = False  # a load or a fill in progress ends with the process: no waiting for it
        raise
    finally:
        engine.close(wait=wait)
    fill = completion.fills[0] if completion.fills else None
    if args.json:
        print(json.dumps({
            "text": completion.text,
            **_place(doc, fill.start if fill else offset, fill.end if fill else offset),
            "alternatives": [{"text": alt.text, **_place(doc, alt.start, alt.end),
                              "confidences": list(alt.confidences)} for alt in completion.alternatives],
            "kind": completion.kind.value,
            "steps": completion.steps, "forwards": completion.forwards, "tokens": completion.tokens,
            "elapsed_ms": completion.elapsed_ms, "load_ms": round(load_ms, 1),
            "tokens_per_forward": round(completion.tokens_per_forward, 3),
            "confidences": list(fill.confidences) if fill else [],
            "confidence": fill.confidence if fill else None,  # estimated P(exactly right); None: no calibration
            "considered": [{"text": f.text, "confidence": f.confidence} for f in completion.considered],
            "syntax_checked": completion.syntax_checked, "rejected": completion.rejected,
            "backend": completion.backend, "model": args.model,
        }))
    else:
        sys.stdout.write(completion.text)
        if completion.text and not completion.text.endswith("\n"):
            sys.stdout.write("\n")
        if not completion.text and completion.considered:  # valid, but withheld (the server's rules, its defaults)
            best = max(f.confidence or 0.0 for f in completion.considered)
            print(f"diffusion-lsp: no fill offered: {len(completion.considered)} valid fill(s) withheld, as too unsure "
                  f"(best estimate {best:.1%}; setting minConfidence) or using a name the file defines nowhere "
                  f"(namesRule); --json lists them under 'considered'", file=sys.stderr)
        elif not completion.text:
            print("diffusion-lsp: no valid fill found", file=sys.stderr)
    return 0
