"""Infilling tasks: reading the HumanEval-infilling schema from JSONL or JSONL.gz, with an optional
``language`` per task (default ``python``) so one file can hold holes in several languages."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from engine.validate import editor_closers

REPO_ROOT = Path(__file__).resolve().parent.parent
REQUIRED = ("task_id", "prompt", "suffix", "canonical_solution")
LANGUAGES = ("python", "javascript", "typescript", "typescriptreact", "go", "rust")
# languages the engine has no grammar for and fills as plain text, which a data file may hold too
# (benchmarks.other_lines): their fills are not parsed, so their `syntax_valid` is None
PLAIN_LANGUAGES = ("c", "java", "ruby", "perl", "lua", "cpp")
EXTENSIONS = {"python": ".py", "javascript": ".js", "typescript": ".ts", "typescriptreact": ".tsx", "go": ".go",
              "rust": ".rs", "c": ".c", "java": ".java", "ruby": ".rb", "perl": ".pm", "lua": ".lua"}


@dataclass(frozen=True)
class Task:
    """One hole: the document is ``prompt + <hole> + suffix``; ``test`` defines ``check(candidate)``."""

    task_id: str
    prompt: str
    suffix: str
    canonical_solution: str
    test: str | None = None
    entry_point: str | None = None
    language: str = "python"      # an engine language id; a data file may mix languages

    @property
    def text(self) -> str:
        """The document the editor holds when the hole is empty."""
        return self.prompt + self.suffix

    @property
    def offset(self) -> int:
        """The cursor: the str offset of the hole."""
        return len(self.prompt)

    @property
    def language_id(self) -> str:
        """The language id an editor sends for the task's file: ``typescriptreact`` for a ``.tsx`` file among the
        ``typescript`` holes (VS Code's id; its JSX does not parse as plain TypeScript), else ``language``."""
        if self.language == "typescript" and self.task_id.rsplit(":", 1)[0].endswith(".tsx"):
            return "typescriptreact"
        return self.language

    @property
    def has_test(self) -> bool:
        return bool(self.test) and bool(self.entry_point)


class TaskFormatError(ValueError):
    """A line of the data file is not a task in the HumanEval-infilling schema."""


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        yield from f


def parse_task(record: dict, where: str = "") -> Task:
    missing = [k for k in REQUIRED if not isinstance(record.get(k), str)]
    if missing:
        raise TaskFormatError(f"{where}: missing or non-string field(s) {', '.join(missing)}")
    if record.get("language") is not None and record["language"] not in LANGUAGES + PLAIN_LANGUAGES:
        raise TaskFormatError(f"{where}: language {record['language']!r} is not one of "
                              f"{', '.join(LANGUAGES + PLAIN_LANGUAGES)}")
    return Task(
        task_id=record["task_id"],
        prompt=record["prompt"],
        suffix=record["suffix"],
        canonical_solution=record["canonical_solution"],
        test=record.get("test") or None,
        entry_point=record.get("entry_point") or None,
        language=record.get("language") or "python",
    )


def resolve(path: str | Path) -> Path:
    """``path`` as given when it exists from the current directory, else relative to the repository root."""
    path = Path(path)
    return path if path.is_absolute() or path.exists() else REPO_ROOT / path


def load_tasks(path: str | Path, limit: int | None = None) -> list[Task]:
    """The first ``limit`` tasks of ``path`` (all when None), in file order; blank lines are skipped."""
    path = resolve(path)
    tasks: list[Task] = []
    for lineno, line in enumerate(_lines(path), 1):
        if limit is not None and len(tasks) >= limit:
            break
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise TaskFormatError(f"{path}:{lineno}: {e}") from e
        tasks.append(parse_task(record, f"{path}:{lineno}"))
    return tasks


def dataset_name(path: str | Path) -> str:
    """``HumanEval-SingleLineInfilling.jsonl.gz`` -> ``HumanEval-SingleLineInfilling``."""
    name = Path(path).name
    for ext in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(ext)
    return name


TYPED_MOST = 12   # typed(): at most this many characters of the line's code typed


def typed(task: Task, most: int = TYPED_MOST) -> Task | None:
    """The hole as an editor sees it while the user types: the first characters of the hole's first line
    already typed (its indentation and 1..min(``most``, half the line's code) characters, the number drawn
    from a hash of the task id), the rest of the hole to fill. A one-line hole's line break is already in the
    document (the user typed on a line of its own), so the fill is the rest of that line; a hole of several
    lines keeps its line breaks. The document after the fill is the same, so the task's tests still apply.
    None when the first line has fewer than 2 characters of code."""
    first, newline, after = task.canonical_solution.partition("\n")
    code = first.lstrip(" \t")
    if len(code.rstrip()) < 2:
        return None
    indent = first[:len(first) - len(code)]
    k = 1 + zlib.crc32(task.task_id.encode("utf-8")) % max(1, min(most, len(code.rstrip()) // 2))
    prompt = task.prompt + indent + code[:k]
    if after:
        return replace(task, prompt=prompt, canonical_solution=code[k:] + newline + after)
    return replace(task, prompt=prompt, canonical_solution=code[k:], suffix=newline + task.suffix)


def typed_tasks(tasks: list[Task], auto_close: bool = False, mid_word: bool = False,
                mid_line: bool = False, line_end: bool = False, header: bool = False,
                unended: bool = False) -> list[Task]:
    """``typed`` of each task (with ``auto_close``: ``auto_closed``, or with ``unended`` too ``auto_closed_unended``;
    with ``mid_word`` too: ``mid_word_closed``; with ``mid_line``: ``mid_line_tail``, and with ``header`` too
    ``mid_line_header``; with ``line_end``: ``mid_line_end``), those it cannot make left out."""
    make = mid_line_end if line_end else (mid_line_header if header else mid_line_tail) if mid_line else \
        (mid_word_closed if mid_word else auto_closed_unended if unended else auto_closed) if auto_close else typed
    return [t for t in map(make, tasks) if t is not None]


OPENERS = {"(": ")", "[": "]", "{": "}"}
# the quotes an editor closes as they are typed (VS Code's language configurations: no ' in Rust, lifetimes)
QUOTES = {"python": "\"'", "javascript": "\"'`", "typescript": "\"'`", "typescriptreact": "\"'`", "go": "\"'`",
          "rust": "\""}


def closers(code: str, quotes: str = "\"'") -> str | None:
    """What an editor that closes brackets and quotes as they are typed has put after the cursor while ``code``
    was typed: the closer of each bracket or quote still open, innermost first ("" when none is); None when the
    code closes a bracket it did not open (``validate.editor_closers``, which the engine's checks read too)."""
    return editor_closers(code, quotes)


def auto_closed(task: Task) -> Task | None:
    """The one-line hole as an editor that closes brackets and quotes shows it the moment the user has typed the
    line's first opening bracket or quote: the line typed up to and including it, its closer already after the
    cursor, the fill the rest of the line before the closer. None when the line has no such opener, or does not
    end with that closer (``f(x);``: the ``;`` goes after it, which an insertion at the cursor cannot give),
    or the hole has several lines."""
    first, newline, after = task.canonical_solution.partition("\n")
    if after.strip():
        return None
    line = first.rstrip(" \t\r")
    code = line.lstrip(" \t")
    quotes = QUOTES.get(task.language, "\"'")
    at = next((k for k, ch in enumerate(code) if ch in OPENERS or ch in quotes), None)
    if at is None:
        return None
    typed = line[:len(line) - len(code) + at + 1]
    close = closers(code[:at + 1], quotes)
    fill = line[len(typed):]
    if not close or not fill.endswith(close) or not fill[:len(fill) - len(close)].strip():
        return None
    return replace(task, prompt=task.prompt + typed, canonical_solution=fill[:len(fill) - len(close)],
                   suffix=close + newline + after + task.suffix)


def auto_closed_unended(task: Task) -> Task | None:
    """``auto_closed`` for the lines it leaves out, those whose closer is followed by the line's ``;`` (``f(x);``):
    the line typed up to and including its first opening bracket or quote, the editor's closer after the cursor,
    and no ``;`` yet (it is typed after the closer, where no fill reaches), the fill the rest before the closer."""
    first, newline, after = task.canonical_solution.partition("\n")
    if after.strip():
        return None
    line = first.rstrip(" \t\r")
    if not line.endswith(";"):
        return None
    cut = auto_closed(replace(task, canonical_solution=line[:-1] + newline + after))
    return cut if cut is not None and cut.canonical_solution.strip() else None


def mid_word_closed(task: Task) -> Task | None:
    """``auto_closed``, and then the first characters of the fill typed too, when it starts with a word (a name or
    a number): 3 of them when more than 6 are left, else 2, as in the new-user trial's mid-line cases
    (benchmarks/newuser_trial/make_cases.py ``--mid``): the cursor inside or at the end of a word being typed,
    the editor's closers after it. None where ``auto_closed`` makes nothing, the fill does not start with a word
    character, or nothing would be left to fill."""
    closed = auto_closed(task)
    if closed is None:
        return None
    fill = closed.canonical_solution
    k = 3 if len(fill) > 6 else 2
    if not (fill[:1].isalnum() or fill[:1] == "_") or not fill[k:].strip():
        return None
    return replace(closed, prompt=closed.prompt + fill[:k], canonical_solution=fill[k:])


LINE_TAIL = ")]};,"   # a line's last characters that stay after the cursor in ``mid_line_tail``


def mid_line_tail(task: Task) -> Task | None:
    """A word being typed in the middle of an existing line, as the new-user trial's mid-line cases
    (benchmarks/newuser_trial/make_cases.py ``--mid``): the line's closing run (``LINE_TAIL``: ``),`` ``;``) stays
    after the cursor; the cursor is at the cut after a non-word character followed by a word nearest the middle of
    the code before that run, with the word's first 3 characters typed (2 when 6 or fewer are left); the fill is the
    rest up to the run. None for a hole of several lines, a line without such a run or cut, or under 4 characters
    left before the run."""
    one = _one_line(task)
    if one is None:
        return None
    line, newline = one
    body = line.rstrip(LINE_TAIL)
    return _cut_before(task, body, line[len(body):], newline)


HEADER_END = re.compile(r"[)\]}]*(?::| *\{)$")   # ``mid_line_header``: ``):``, ``:``, ``) {``, `` {``


def mid_line_header(task: Task) -> Task | None:
    """As ``mid_line_tail``, for a line that opens a block (``if len(items) > 0:``, ``def f(a, b):``, ``if (a) {``,
    ``fn f() -> u32 {``; ``benchmarks.code_lines --headers`` makes such holes): its end from the closing brackets
    before the block's ``:`` or ``{`` on (``HEADER_END``) stays after the cursor, as a condition or a signature is
    edited. None where ``mid_line_tail`` would give none."""
    one = _one_line(task)
    end = None if one is None else HEADER_END.search(one[0])
    if one is None or end is None:
        return None
    return _cut_before(task, one[0][:end.start()], one[0][end.start():], one[1])


def _one_line(task: Task) -> tuple[str, str] | None:
    """A one-line hole's line (its trailing spaces and ``\r`` dropped) and the line break after it; None for a hole
    of several lines."""
    first, newline, after = task.canonical_solution.partition("\n")
    return None if after.strip() else (first.rstrip(" \t\r"), newline)


def _cut_before(task: Task, body: str, tail: str, newline: str) -> Task | None:
    """The task with the cursor in the middle of ``body`` (``mid_line_tail``'s cut) and ``tail`` after it."""
    lead = len(body) - len(body.lstrip(" \t"))
    cuts = [i for i in range(lead + 1, len(body)) if not (body[i - 1].isalnum() or body[i - 1] == "_")
            and (body[i].isalpha() or body[i] == "_")]
    if not tail or not cuts:
        return None
    middle = (lead + len(body)) / 2
    cut = min(cuts, key=lambda i: (abs(i - middle), i))
    rest = body[cut:]
    if len(rest) < 4:
        return None
    k = 3 if len(rest) > 6 else 2
    return replace(task, prompt=task.prompt + body[:cut + k], canonical_solution=rest[k:],
                   suffix=tail + newline + task.suffix)


LINE_END_AFTER = " \t(.=,[:"   # ``mid_line_end``: a cut comes after one of these (the new-user trial's cut points)


def mid_line_end(task: Task) -> Task | None:
    """A word being typed in the middle of an existing line with nothing after the cursor, as the new-user trial's
    line cases (benchmarks/newuser_trial/make_cases.py without ``--mid``): the cut before a word character right
    after one of ``LINE_END_AFTER``, between 30% and 70% of the line's length (indentation included), the one
    picked by a hash of the task id; the word's first 3 characters typed (2 when 6 or fewer are left); the fill is
    the rest of the line. None for a hole of several lines, a line without such a cut, or under 4 characters left
    at the cut."""
    one = _one_line(task)
    if one is None:
        return None
    line, newline = one
    lead = len(line) - len(line.lstrip(" \t"))
    cuts = [i for i in range(lead + 1, len(line)) if line[i - 1] in LINE_END_AFTER
            and (line[i].isalnum() or line[i] == "_") and len(line) * 0.3 <= i <= len(line) * 0.7]
    if not cuts:
        return None
    cut = cuts[zlib.crc32(task.task_id.encode("utf-8")) % len(cuts)]
    rest = line[cut:]
    if len(rest) < 4:
        return None
    k = 3 if len(rest) > 6 else 2
    return replace(task, prompt=task.prompt + line[:cut + k], canonical_solution=rest[k:],
                   suffix=newline + task.suffix)


TYPED_PREFIX = "typed:"
CLOSED_PREFIX = "typed-closed:"
MID_WORD_PREFIX = "typed-closed-word:"


def load_task_set(spec: str) -> list[Task]:
    """The tasks of a file, or with ``typed:`` before its path the ``typed`` variant of each, with
    ``typed-closed:`` the ``auto_closed`` one, with ``typed-closed-word:`` the ``mid_word_closed`` one (how a
    considered set recorded with ``--typed``, ``--typed --auto-close`` or ``--typed --auto-close --mid-word``
    names its data)."""
    if spec.startswith(MID_WORD_PREFIX):
        return typed_tasks(load_tasks(spec[len(MID_WORD_PREFIX):]), auto_close=True, mid_word=True)
    if spec.startswith(CLOSED_PREFIX):
        return typed_tasks(load_tasks(spec[len(CLOSED_PREFIX):]), auto_close=True)
    if spec.startswith(TYPED_PREFIX):
        return typed_tasks(load_tasks(spec[len(TYPED_PREFIX):]))
    return load_tasks(spec)
