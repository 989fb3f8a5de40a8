"""Smallest syntax repairs (engine/repair.py): one token inserted or deleted at the error, nothing else touched."""

from dataclasses import replace

import pytest

from engine.backends.base import Control
from engine.config import FillOptions, LoadConfig
from engine.requests import FixRequest
from engine.serve import serve
from engine.languages import parse as parse_tree
from engine.languages import spec_for
from engine.repair import candidates, error_lines, find_repairs, python_error, rank
from engine.targets import survey


def fix(text: str, language: str = "python", backend=None) -> str:
    """The document after the best repair (no model: the parser's hint and position decide)."""
    at = _first_error_offset(text, language)
    spans = survey(text, language, at, at).errors
    repairs = rank(text, find_repairs(spec_for(language), text, spans),
                   backend.score_text if backend else None)
    assert repairs, "no repair found"
    r = repairs[0]
    return text[:r.start] + r.new + text[r.end:]


def _first_error_offset(text: str, language: str) -> int:
    if language == "python":
        line = python_error(text)[0]
        return sum(len(x) + 1 for x in text.split("\n")[:line - 1])
    return 0


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_missing_colon_is_inserted_and_nothing_else_changes(eol):
    text = eol.join(["def f(x):", "    if x > 0", "        return x", "    return 0", ""])
    assert fix(text) == text.replace("x > 0", "x > 0:")


@pytest.mark.parametrize("broken, fixed", [
    ("def f(a, b):\n    return max(a, b\n", "def f(a, b):\n    return max(a, b)\n"),
    ("x = [1, 2, 3\ny = 2\n", "x = [1, 2, 3]\ny = 2\n"),
    ("d = {'a': 1\nprint(d)\n", "d = {'a': 1}\nprint(d)\n"),
    ("s = 'abc\nprint(s)\n", "s = 'abc'\nprint(s)\n"),
    ("def f(a):\n    return a)\n", "def f(a):\n    return a\n"),       # a stray token is deleted
    ("for i in range(3)\n    print(i)\n", "for i in range(3):\n    print(i)\n"),
    ("\tx = (1 +\n", None),                                             # indentation error: no small repair
])
def test_one_token_repairs(broken, fixed):
    if fixed is None:
        assert python_error(broken) is not None
        return
    assert fix(broken) == fixed


def test_emoji_and_tabs_keep_offsets_right():
    text = "def f(x):\n\ts = '😀é'\n\tif x > 0\n\t\treturn s\n"
    assert fix(text) == text.replace("x > 0", "x > 0:")


def test_other_grammars_use_tree_sitter():
    js = "function f(a) {\n  return g(a;\n}\n"
    assert fix(js, "javascript") == "function f(a) {\n  return g(a);\n}\n"


def test_only_the_error_lines_are_touched():
    text = "import os\n\n\ndef f(x):\n    y = [x, x\n    return y\n\n\nz = 1\n"
    at = text.index("    y =")
    for r in find_repairs(spec_for("python"), text, survey(text, "python", at, at).errors):
        assert text.count("\n", 0, r.start) in (3, 4, 5)  # the error's line or its neighbours


@pytest.fixture(scope="module")
def backend():
    from engine.backends import load_backend
    return load_backend(LoadConfig(threads=1))


def test_the_model_ranks_where_a_closing_parenthesis_goes(backend):
    # `len(x > 3` parses closed after x or after 3; only the model knows which reads like code
    text = "def f(x):\n    if len(x > 3:\n        return x\n    return []\n"
    assert fix(text, backend=backend) == text.replace("len(x > 3:", "len(x) > 3:")


def test_fix_syntax_answers_the_smallest_repair_as_one_edit(backend):
    text = "def f(x):\n    if x > 0\n        return x\n    return x * 2\n"
    at = text.index("if x")
    completion = serve(backend, FillOptions(), FixRequest(text, "python", survey(text, "python", at, at).errors),
                       Control(lambda step: None))
    assert [(f.start, f.end, f.text) for f in completion.fills] == [(text.index(" > 0") + 4,) * 2 + (":",)]


def test_a_repair_that_parses_the_whole_document_beats_one_that_moves_the_error(backend):
    text = ("\ndef right_angle_triangle(a, b, c)\n    '''\n    Given the lengths of the three sides of a triangle."
            " Return True if the three\n    sides form a right-angled triangle, False otherwise.\n"
            "    right_angle_triangle(3, 4, 5) == True\n    '''\n\n    return a*a == b*b + c*c or b*b == a*a + c*c\n")
    assert fix(text, backend=backend) == text.replace("c)\n", "c):\n", 1)


def test_score_text_fits_the_models_positions(backend):
    """A long context is cut to the model's positions; a middle that needs them takes them from the context."""
    short = backend.score_text("x = 1\n", "y = x + 1\n", "print(y)\n")
    assert backend.score_text("z = 0\n" * 4000, "y = x + 1\n", "print(y)\n" * 4000) < 0 and short < 0
    cap = backend.max_positions
    lead = 1 if len(backend.leading) >= 2 else 0      # [CLS] ... [SEP] around a BERT canvas; none for ours
    specials = 2 * lead
    pre, suf = list(range(10, 1010)), list(range(2000, 3000))
    for size in (10, cap - specials - 100, cap - specials - 3, cap - specials):
        mid = [7] * size
        ids, at = backend.score_layout(pre, mid, suf)
        assert len(ids) <= cap
        assert ids[at:at + size].tolist() == mid
        kept_pre, kept_suf = ids[lead:at].tolist(), ids[at + size:len(ids) - lead].tolist()
        assert kept_pre == pre[len(pre) - len(kept_pre):] and kept_suf == suf[:len(kept_suf)]  # nearest context kept
        if size == 10:
            assert (len(kept_pre), len(kept_suf)) == (96, 32)


def _document(size: int) -> str:
    """Python code of about ``size`` characters: top-level functions, indented bodies, a blank-line run, an emoji and
    a CRLF line (the places a cut must not split a token)."""
    block = "".join(f"def helper_{i}(values, offset):\n    total = sum(values) + offset * {i}  # 😀 ü\r\n"
                    f"    \n\n        return total\n\n\n" for i in range(50))
    return (block * (size // len(block) + 1))[:size]


def test_score_windows_hold_the_whole_texts_tokens_at_their_ends(backend):
    """``score_window.tail``/``head`` tokenize only a window of a long text, and its ids are the whole text's last /
    first ids exactly (the cut is where no token crosses); a text with no such cut is tokenized whole."""
    from engine.backends import score_window

    text = _document(200_000)
    whole = backend._encode(text)
    for start in (0, 7, 1234, 50_001):   # cut anywhere: at a line, inside an indented body, mid-word
        piece = text[start:]
        window, ids = score_window.tail(piece, 96, backend._encode)
        assert len(window) < 20_000 and piece.endswith(window) and ids[-96:] == backend._encode(piece)[-96:]
        window, ids = score_window.head(text[:len(text) - start], 32, backend._encode)
        assert len(window) < 20_000 and text.startswith(window) and ids[:32] == whole[:32]
    indented = "    x = 1\n" * 5000              # no line starts with a word: no cut, the whole text
    assert score_window.tail(indented, 96, backend._encode)[0] == indented


def test_score_text_of_a_huge_document_tokenizes_only_the_context_it_reads(backend):
    """A fix-syntax repair is scored in its whole document: the backend tokenized all of the text before and after
    the line (a 5 MB document: 30 s a score, 14 s of it the prefix's tokenization, held under a team server's
    model lock while every other editor's fill waited). It now tokenizes windows that hold its 96 + 32 tokens,
    and the score is the one of the whole text (its layout from the whole text's ids)."""
    import torch

    text = _document(1_000_000)
    at = text.index("def helper_", len(text) // 2)
    prefix, middle, suffix = text[:at], "def broken(x):", "\n    return x\n" + text[at:]
    seen: list[int] = []
    encode = backend._encode
    backend._encode = lambda t: seen.append(len(t)) or encode(t)
    try:
        got = backend.score_text(prefix, middle, suffix)
    finally:
        del backend._encode
    assert max(seen) < 20_000, seen   # before: the whole prefix and suffix (500,010 characters)
    ids, start = backend.score_layout(encode(prefix), encode(middle), encode(suffix))
    mid = encode(middle)
    want = 0.0
    for k in range(len(mid)):   # the old way: every row's canvas from the whole text's ids
        row = ids.clone()
        row[start + k] = backend.mask_id
        want += float(backend._logits_at(row, torch.tensor([start + k]))[0].float().log_softmax(-1)[mid[k]])
    assert abs(got - want) < 1e-3, (got, want)


def test_score_text_of_a_middle_longer_than_the_positions_raises_a_clear_error(backend):
    from engine.requests import TextTooLong

    middle = "x = 1 + 2 + 3\n" * 2000
    with pytest.raises(TextTooLong, match=r"exceeds the model's \d+ positions"):
        backend.score_text("", middle, "")


def test_a_repair_on_a_line_longer_than_the_positions_falls_back_to_the_parsers_order(backend):
    from engine.repair import Repair

    line = "    if x > " + " + ".join(["1"] * 3000)
    text = "def f(x):\n" + line + "\n        return x\n"
    at = len("def f(x):\n") + len(line)
    repairs = [Repair(at - 1, at - 1, ")", 1), Repair(at, at, ":", 1, hinted=True)]
    assert rank(text, repairs, backend.score_text) == rank(text, repairs) == repairs[::-1]


def test_a_lone_surrogate_elsewhere_in_the_document_does_not_hide_the_error():
    """Python's parser read the encoding error, the same for every candidate: no small repair parsed, and the
    re-masked fix that replaced `def f(x)` and its body with `__all__ = [...]` passed the whole-document check."""
    text = 's = "\ud83d"\n\n\ndef f(x)\n    return x\n'
    assert python_error(text)[0] == 4
    spans = survey(text, "python", text.index("def f"), text.index("def f")).errors
    assert any(r.new == ":" and r.start == text.index("(x)") + 3 for r in find_repairs(spec_for("python"), text, spans))


@pytest.mark.parametrize("language,text,error", [
    ("javascript", "const s = '😀 é';\r\nfunction f(a) {\r\n\tif (a > 1 {\r\n\t\treturn a;\r\n\t}\r\n}\r\n", "1 {"),
    ("javascript", "// 日本語\nlet x = [1, 2\nlet y = 3;\n", "2\n"),
    ("go", "package m\n\n// 😀\nfunc f(a int) int {\n\treturn a +\n}\n", "+\n"),
    ("rust", "fn f() {\n    let s = \"é😀\"; let x = (1 + 2;\n}\n", "2;"),
])
def test_each_candidate_is_judged_alike_by_the_incremental_reparse_and_a_whole_parse(language, text, error):
    """The tree judge reparses each candidate from the document's tree (a whole parse of a 1.5 MB file took 0.6 s
    for each of a fix's 94 candidates: the code action list waited 71 s); the verdicts are a whole parse's
    (``accepted``), with multi-byte characters, CRLF and tabs before the edits."""
    from engine.languages import error_spans, parse
    from engine.repair import _TreeJudge, accepted, candidates, error_lines

    spec = spec_for(language)
    at = text.index(error)
    spans = survey(text, language, at, at).errors
    tree = parse(spec, text)
    baseline = len(error_spans(tree, nested=False))
    tried = candidates(text, error_lines(spec, text, spans))
    judge = _TreeJudge(spec, text, tree)
    verdicts = [judge.verdict(r) is not None for r in tried]
    assert any(verdicts)
    assert verdicts == [accepted(spec, text, r, None, baseline) for r in tried]


def test_a_line_with_too_many_candidates_is_not_searched():
    """Minified code: the error's line is the whole file, and each of its candidates is a parse of the document
    (a 20 KB line: 158,000 candidates, about 21 minutes on the engine thread). Past 20,000 none is searched."""
    line = "".join(f"function f{i}(a,b){{var c=a+b*{i};return c}};" for i in range(600))
    text = line.replace("var c=a+b*300;", "var c=a+;") + "\n"
    spans = survey(text, "javascript", 0, 0).errors
    assert spans and find_repairs(spec_for("javascript"), text, spans) == []


def test_a_fix_cancelled_while_its_repairs_are_searched_stops(embedded_engine):
    """The search for the smallest repair never asked whether the job was cancelled: a fix in a 1 MB file (its
    candidates' parses took 45 s) ran to the end while the document changed under it, the engine thread
    taken from every other request. The search now stops at the next candidate."""
    import time

    from engine.requests import Cancelled

    body = "".join(f"function f{i}(a,b){{var c=a+b*{i};return [c,'é😀']}};" for i in range(20_000))
    text = "'use strict';\n" + body + "\nconst x = \n"
    spans = survey(text, "javascript", len(text) - 3, len(text) - 3).errors
    assert spans
    taken = embedded_engine.stats()["jobs"]
    job = embedded_engine.submit(FixRequest(text, "javascript", tuple(spans), key="big.js"))
    while embedded_engine.stats()["jobs"] == taken:
        time.sleep(0.05)
    time.sleep(1.0)   # the job is searching its repairs
    embedded_engine.cancel_keys(lambda key: key == "big.js")
    with pytest.raises(Cancelled):
        job.future.result(300)


def _module(functions: int, methods: int = 12) -> str:
    """Python code of top-level functions and a class of methods: a document that compiles."""
    out = [f"def helper_{i}(values, offset=0):\n    total = sum(values) + offset * {i}\n    return [total, {{'k': (1, 2)}}]\n\n\n"
           for i in range(functions)]
    out.insert(functions // 2, "class Store:\n" + "".join(
        f"    def get_{i}(self, key, default=None):\n        '''Value {i}.\n\nColumn 0 in a docstring.\n        '''\n"
        f"        return self.data.get(key, default)\n\n" for i in range(methods)) + "\n\n")
    return "".join(out)


def _whole_parses(monkeypatch, text: str) -> list[str]:
    """Record each whole-document parse ``find_repairs`` makes: Python's compiler given over half the document, a
    tree-sitter parse of over half of it that is not an incremental reparse (no old tree)."""
    import engine.pyparse
    import engine.repair

    seen: list[str] = []
    check_syntax = engine.pyparse.check_syntax

    def counted_compile(source, filename="<document>", check=None):
        if len(source) > len(text) // 2:
            seen.append("compile")
        return check_syntax(source, filename, check)
    monkeypatch.setattr(engine.pyparse, "check_syntax", counted_compile)
    for name in ("parse", "_parse_anew"):
        if hasattr(engine.repair, name):
            def counted(spec, source, *args, _parse=getattr(engine.repair, name), _name=name, **kwargs):
                old_tree = args[0] if args and _name == "_parse_anew" else kwargs.get("old_tree")
                if old_tree is None and len(source) > len(text) // 2:
                    seen.append("tree-sitter")
                return _parse(spec, source, *args, **kwargs)
            monkeypatch.setattr(engine.repair, name, counted)
    return seen


@pytest.mark.parametrize("line", ["    def get_7(self, key, default=None):\n", "def helper_30(values, offset=0):\n"])
def test_a_repair_in_a_long_document_parses_it_a_fixed_number_of_times(monkeypatch, line):
    """Each candidate repair compiled the whole document (a 5 MB file: 238 s of the engine thread, every other
    document's fill waiting); it is judged on the code around the error, and the document is compiled and parsed a
    few times in all, however many candidates there are."""
    text = _module(200)
    broken = text.replace(line, line.replace("):", ")"), 1)
    at = broken.index(line.replace("):", ")"))
    spans = survey(broken, "python", at, at).errors
    seen = _whole_parses(monkeypatch, broken)
    found = find_repairs(spec_for("python"), broken, spans)
    assert [(r.start, r.new) for r in found] == [(at + len(line) - 2, ":")]
    assert seen.count("compile") <= 3 and seen.count("tree-sitter") <= 1, seen   # before: 180 compiles


def _large_broken_module() -> tuple[str, int, tuple]:
    """A module over ``pyparse.APART`` characters with one method header's ``:`` missing: the document, where the
    header starts, and the survey's error spans."""
    import engine.pyparse

    line = "def helper_2000(values, offset=0):\n"
    broken = _module(3000).replace(line, line.replace("):", ")"), 1)
    at = broken.index(line.replace("):", ")"))
    assert len(broken) > engine.pyparse.APART
    return broken, at, survey(broken, "python", at, at).errors


def test_a_repair_in_a_large_document_compiles_it_outside_the_servers_process(monkeypatch):
    """The whole-document compiles a repair makes (its error, the code before and after the error's statements) held
    the interpreter's lock, and with it the server's event loop, for each one's whole length (a 5 MB document: up to
    7 s without an answer to any request, a cancel among them). Over ``pyparse.APART`` characters they run in a child
    process: ``compile`` is called here only on the code around the error; the repair found is the same."""
    import engine.pyparse

    broken, at, spans = _large_broken_module()
    compiled_here: list[int] = []

    def spy(source, *args, **kwargs):
        compiled_here.append(len(source))
        return compile(source, *args, **kwargs)
    monkeypatch.setattr(engine.pyparse, "compile", spy, raising=False)
    found = find_repairs(spec_for("python"), broken, spans)
    assert [(r.start, r.new) for r in found] == [(at + len("def helper_2000(values, offset=0)"), ":")]
    assert compiled_here and max(compiled_here) < engine.pyparse.APART, compiled_here   # before: 3 of the document


def test_a_fix_cancelled_while_a_child_compiles_its_document_stops_there(monkeypatch, child_processes):
    """A fix cancelled while a child process compiled its large document (its error, the code before or after the
    error's statements: 1-2 s each on 5 MB) went on waiting for that child, and the next fill on the engine thread
    with it. The job's check is polled while the child runs: the child is killed and ``Cancelled`` raised. (Here
    each child first sleeps 5 s: before, the search ran its children to the end and found its repair.)"""
    import engine.pyparse
    from engine.requests import Cancelled

    broken, _, spans = _large_broken_module()
    children = child_processes
    monkeypatch.setattr(engine.pyparse, "_CHILD", "import time\ntime.sleep(5)\n" + engine.pyparse._CHILD)

    def check(step):   # the job is cancelled while a child compiles
        if any(child.poll() is None for child in children):
            raise Cancelled(step)
    with pytest.raises(Cancelled):
        find_repairs(spec_for("python"), broken, spans, check)
    assert len(children) == 1 and children[0].returncode not in (None, 0)   # the first child, killed


def test_a_repair_in_a_long_javascript_document_reparses_it_incrementally(monkeypatch):
    text = "".join(f"function f_{i}(a, b) {{\n  const c = a + b * {i};\n  if (c > 10) {{\n    return g(c, [1, 2, 3]);\n"
                   f"  }}\n  return {{ value: c, name: 'f_{i}' }};\n}}\n\n" for i in range(300))
    at = text.index("return g(c, [1, 2, 3]);", len(text) // 2)
    broken = text[:at] + text[at:].replace("3]);", "3];", 1)
    spans = survey(broken, "javascript", at, at).errors
    seen = _whole_parses(monkeypatch, broken)
    found = find_repairs(spec_for("javascript"), broken, spans)
    assert (at + len("return g(c, [1, 2, 3]"), ")") in [(r.start, r.new) for r in found]
    assert seen.count("tree-sitter") <= 1, len(seen)   # before: a parse of the whole document per candidate


def _javascript(functions: int) -> tuple[str, int]:
    """A JavaScript document of ``functions`` functions, one ``)`` missing in the middle one; and where."""
    text = "".join(f"function f_{i}(a, b) {{\n  const c = a + b * {i};\n  if (c > 10) {{\n    return g(c, [1, 2, 3], 'é');\n"
                   f"  }}\n  return {{ value: c, name: 'f_{i}' }};\n}}\n\n" for i in range(functions))
    at = text.index("return g(c, [1, 2, 3], 'é');", len(text) // 2)
    return text[:at] + text[at:].replace("'é');", "'é';", 1), at


def _clock(monkeypatch, clock):
    """The tree search's time read from ``clock`` (a fake: no test depends on the machine's speed); the class."""
    import engine.repair

    work = getattr(engine.repair._Work, "work", engine.repair._Work)

    def made(seconds, check=None):
        return work(seconds, check, clock)
    made.work = work
    monkeypatch.setattr(engine.repair, "_Work", made)
    return work


def test_the_tree_search_judges_the_likeliest_candidates_first_and_stops_at_its_budget(monkeypatch, caplog):
    """Each candidate's incremental reparse still costs in proportion to the document (110-150 ms at 5 MB, an opener
    whose error runs to the end of the file 0.6-3 s): a fix in a 5 MB JavaScript file kept the code action list
    (and every other request on the engine) waiting 72-203 s. Candidates are judged likeliest first (tree-sitter's
    MISSING node, closers, the others, openers last) and the search stops when its time is spent (here a fake
    clock, one unit a tick), with a log line, keeping what it found."""
    import itertools
    import logging

    import engine.repair
    from engine.languages import parse

    text, at = _javascript(300)
    spec = spec_for("javascript")
    spans = survey(text, "javascript", at, at).errors
    judged: list = []
    verdict = engine.repair._TreeJudge.verdict

    def spy(self, repair):
        judged.append(repair)
        return verdict(self, repair)
    monkeypatch.setattr(engine.repair._TreeJudge, "verdict", spy)
    work = _clock(monkeypatch, lambda: 0.0)   # time stands still: the whole search
    whole = find_repairs(spec, text, spans)
    hint = (at + len("return g(c, [1, 2, 3], 'é'"), ")")
    assert [(r.start, r.new) for r in whole if r.hinted] == [hint]
    # the order: the MISSING node's token first, then closers, the others, openers last
    assert (judged[0].start, judged[0].new) == hint
    kinds = [0 if (r.start, r.new) == hint else 3 if set(r.new) & set("([{") else 1 if set(r.new) & set(")]}") else 2
             for r in judged]
    assert kinds == sorted(kinds) and kinds.count(3) > 0
    # what the whole search finds is what judging every candidate (in their own order) finds
    tree = parse(spec, text)
    tried = list(dict.fromkeys(candidates(text, error_lines(spec, text, spans))))
    reference = [r for r in tried if engine.repair._TreeJudge(spec, text, tree).verdict(r) is not None]
    assert [(r.start, r.end, r.new) for r in whole] == [(r.start, r.end, r.new) for r in reference]
    # 200 units of time, one a tick (before each candidate, at each progress report of its reparse): the search
    # stops there, the hinted repair found
    ticks = []
    tick = work.tick
    monkeypatch.setattr(work, "tick", lambda self: (ticks.append(1), tick(self)))
    _clock(monkeypatch, itertools.count().__next__)
    monkeypatch.setattr(engine.repair, "_SECONDS", 200)
    judged.clear()
    with caplog.at_level(logging.INFO, logger="engine.repair"):
        bounded = find_repairs(spec, text, spans)
    assert (bounded[0].start, bounded[0].new) == hint and bounded[0].hinted
    assert len(ticks) == 201 and 1 < len(judged) < len(tried)   # the last reparse halted at the 201st tick
    assert set(bounded) <= set(whole) and bounded == [r for r in whole if r in bounded]   # in the same order
    assert "the search's 200.0 s were spent" in caplog.text


@pytest.mark.parametrize("language,text,error", [
    ("javascript", "const s = '😀 é';\r\nfunction f(a) {\r\n\tif (a > 1 {\r\n\t\treturn a;\r\n\t}\r\n}\r\n", "1 {"),
    ("javascript", "// 日本語\nlet x = [1, 2\nlet y = 3;\n", "2\n"),
    ("go", "package m\n\n// 😀\nfunc f(a int) int {\n\treturn a +\n}\n", "+\n"),
    ("rust", "fn f() {\n    let s = \"é😀\"; let x = (1 + 2;\n}\n", "2;"),
    ("typescript", "function f(a: number): number {\n  return Math.max(a, 1;\n}\n", "1;"),
])
def test_a_tree_search_judged_likeliest_first_finds_what_the_whole_document_accepts(monkeypatch, language, text, error):
    """Judged in another order, a normal document's repairs are still every candidate that the whole document parsed
    again accepts, in the candidates' order (ranking's ties)."""
    from engine.languages import error_spans
    from engine.repair import accepted, hinted

    _clock(monkeypatch, lambda: 0.0)   # however loaded the machine

    spec = spec_for(language)
    at = text.index(error)
    spans = survey(text, language, at, at).errors
    baseline = len(error_spans(parse_tree(spec, text), nested=False))
    lines = error_lines(spec, text, spans)
    expected = []
    for two in (False, True):
        expected = [r for r in dict.fromkeys(candidates(text, lines, two)) if accepted(spec, text, r, None, baseline)]
        if expected:
            break
    assert expected
    assert find_repairs(spec, text, spans) == [replace(r, hinted=hinted(spec, text, r, None)) for r in expected]


_BROKEN = [   # (the line as the user has it, the line it replaces): errors in the long document of _module
    ("    def get_7(self, key, default=None)\n", "    def get_7(self, key, default=None):\n"),
    ("        return self.data.get(key, default\n", "        return self.data.get(key, default)\n"),
    ("    total = sum(values + offset * 3\n", "    total = sum(values) + offset * 3\n"),
    ("    return [total, {'k': (1, 2)}\n", "    return [total, {'k': (1, 2)}]\n"),
    ("    return [total, {'k': (1, 2)}]]\n", "    return [total, {'k': (1, 2)}]\n"),
    ("    return [total {'k': (1, 2)}]\n", "    return [total, {'k': (1, 2)}]\n"),
    ("def helper_3(values, offset=0)\n", "def helper_3(values, offset=0):\n"),
    ("        return self.data.get('key, default)\n", "        return self.data.get(key, default)\n"),
    ("    def get_2(self, key, default=None):\n        if key\n", "    def get_2(self, key, default=None):\n"),
    ("    total = sum(values) + offset * 5 )\n", "    total = sum(values) + offset * 5\n"),
]


@pytest.mark.parametrize("bad, good", _BROKEN)
@pytest.mark.parametrize("second", [False, True])
def test_the_region_verdict_is_the_whole_documents(monkeypatch, bad, good, second):
    """Every candidate the region judge keeps, the whole document's verdict keeps (``accepted``: the document
    parsed again), and a repair called clean leaves a document that compiles; the repairs found are the whole
    document's, but those that leave a bracket or string open for code after the statement to close. ``second``:
    the document has another error of its own further down, which no repair may claim to fix."""
    from dataclasses import replace

    from engine.repair import _CLEAN, _PythonJudge, _error_lines, accepted, candidates, hinted
    from engine.validate import parse

    text = _module(12)
    broken = text.replace(good, bad, 1)
    assert broken != text
    if second:
        broken = broken.replace("def helper_10(values, offset=0):", "def helper_10(values, offset=0)", 1)
    before = python_error(broken)
    at = sum(len(x) + 1 for x in broken.split("\n")[:before[0] - 1])
    spans = survey(broken, "python", at, at).errors
    lines = _error_lines(broken, spans, before)
    spec = spec_for("python")
    judge = _PythonJudge(broken, lines, before, parse(spec, broken))
    kept = 0
    for two in (False, True):
        for r in dict.fromkeys(candidates(broken, lines, two)):
            verdict = judge.verdict(r)
            fixed = broken[:r.start] + r.new + broken[r.end:]
            if verdict is not None:
                assert accepted(spec, broken, r, before, 0), (r, fixed[r.start - 40:r.start + 40])
                kept += 1
            if verdict == _CLEAN:
                assert python_error(fixed) is None
            elif verdict is not None:
                assert python_error(fixed) is not None
    reference = []   # find_repairs as it was: each candidate judged by the whole document parsed again
    for two in (False, True):
        found = [r for r in dict.fromkeys(candidates(broken, lines, two)) if accepted(spec, broken, r, before, 0)]
        reference = [r for r in found if python_error(broken[:r.start] + r.new + broken[r.end:]) is None] or found
        if reference:
            break
    opens = [r for r in reference if any(m in (python_error(broken[:r.start] + r.new + broken[r.end:]) or (0, ""))[1]
                                         for m in ("unterminated", "never closed"))]
    _clock(monkeypatch, lambda: 0.0)   # the whole search, however loaded the machine (judged likeliest first)
    found = find_repairs(spec, broken, spans)
    assert kept >= len(found)
    assert found == [replace(r, hinted=hinted(spec, broken, r, before)) for r in reference if r not in opens]


def test_a_cancelled_job_stops_before_the_model_scores_its_repairs():
    """Ranking scores up to 8 repairs with the model (0.3 s on the embedded model for a 5 MB document): a fix
    cancelled then ran on to its end. The job's check is called before each score."""
    from engine.requests import Cancelled

    text = "x = [1, 2, 3\ny = 2\n"
    repairs = find_repairs(spec_for("python"), text, survey(text, "python", 5, 5).errors)
    assert len(repairs) > 1
    scored = []

    def score(prefix, line, suffix):
        scored.append(line)
        return 0.0

    def check(step):
        if scored:
            raise Cancelled(step)
    with pytest.raises(Cancelled):
        rank(text, repairs, score, check)
    assert len(scored) == 1


def test_a_cancelled_job_stops_between_candidates():
    from engine.requests import Cancelled

    text = "def f(x):\n    if x > 0\n        return x\n"
    calls = []

    def check(step):
        calls.append(step)
        if len(calls) > 1:
            raise Cancelled(step)
    with pytest.raises(Cancelled):
        find_repairs(spec_for("python"), text, survey(text, "python", 10, 10).errors, check)


def test_the_python_search_judges_the_likeliest_candidates_first_and_stops_at_its_budget(monkeypatch, caplog):
    """Python's search had no time bound: each candidate compiles the code around the error, and where that is a long
    statement (a real case: the standard library's ``html.entities``, 75 KB of one dict, in a 5 MB document, one quote
    missing) the two-token round's 2,306 candidates took 19 s of the engine thread. It judges the likeliest first
    (the token Python's message or tree-sitter's MISSING node names, closers, the others, openers last) and stops when
    its time (``_SECONDS``, here a fake clock) is spent, keeping what it found; with time standing still it finds what
    judging every candidate in order finds."""
    import itertools
    import logging

    import engine.repair
    from engine.repair import _PythonJudge, _error_lines
    from engine.validate import parse

    line = "    def get_7(self, key, default=None):\n"
    broken = _module(40).replace(line, line.replace("):", ")"), 1)
    hint = (broken.index(line.replace("):", ")")) + len(line) - 2, ":")
    spec = spec_for("python")
    before = python_error(broken)
    at = sum(len(x) + 1 for x in broken.split("\n")[:before[0] - 1])
    spans = survey(broken, "python", at, at).errors
    judged: list = []
    verdict = _PythonJudge.verdict

    def spy(self, repair):
        judged.append(repair)
        return verdict(self, repair)
    monkeypatch.setattr(_PythonJudge, "verdict", spy)
    _clock(monkeypatch, lambda: 0.0)   # time stands still: the whole search
    whole = find_repairs(spec, broken, spans)
    assert [(r.start, r.new) for r in whole if r.hinted] == [hint]
    # the order: the token Python names (a ':' at each place on the error's lines, the repair among them), then
    # closers, the others, openers last
    kinds = [0 if r.new == ":" else 3 if set(r.new) & set("([{") else 1 if set(r.new) & set(")]}") else 2
             for r in judged]
    assert kinds == sorted(kinds) and kinds.count(3) > 0 and hint in [(r.start, r.new) for r in judged[:kinds.count(0)]]
    # what judging every candidate in their own order finds (find_repairs before the budget)
    lines = _error_lines(broken, spans, before)
    reference_judge = _PythonJudge(broken, lines, before, parse(spec, broken))
    tried = list(dict.fromkeys(candidates(broken, lines)))
    verdicts = [verdict(reference_judge, r) for r in tried]
    clean = [r for r, v in zip(tried, verdicts) if v == engine.repair._CLEAN]
    assert [(r.start, r.end, r.new) for r in whole] == [(r.start, r.end, r.new)
                                                         for r in clean or [r for r, v in zip(tried, verdicts) if v]]
    # 30 units of time, one a tick: the search stops there, the hinted repair found, the log says so
    _clock(monkeypatch, itertools.count().__next__)
    monkeypatch.setattr(engine.repair, "_SECONDS", 30)
    judged.clear()
    with caplog.at_level(logging.INFO, logger="engine.repair"):
        bounded = find_repairs(spec, broken, spans)
    assert (bounded[0].start, bounded[0].new) == hint and bounded[0].hinted
    assert 1 < len(judged) < len(tried)
    assert set(bounded) <= set(whole) and bounded == [r for r in whole if r in bounded]   # in the same order
    assert "the search's 30.0 s were spent" in caplog.text


def _model_fix(backend, text: str, language: str, line_start: str) -> str:
    at = text.index(line_start)
    repairs = rank(text, find_repairs(spec_for(language), text, survey(text, language, at, at).errors),
                   backend.score_text)
    r = repairs[0]
    return text[:r.start] + r.new + text[r.end:]


@pytest.mark.parametrize("language, broken, line_start, fixed", [
    # deleting the user's ``parent`` parses too (``for _ := range``) and was the model's choice before: the sum of
    # log-probabilities over the line's tokens pays for the inserted comma and not for the deleted word
    ("go", "package main\n\nfunc f(edges map[int]int) int {\n\tn := 0\n\tfor _ parent := range edges {\n"
     "\t\tn += parent\n\t}\n\treturn n\n}\n", "for _", "\tfor _, parent := range edges {"),
    ("go", "package main\n\nimport \"fmt\"\n\nfunc f() (*int, error) {\n"
     "\treturn nil fmt.Errorf(\"invalid permissions token\")\n}\n", "return nil",
     "\treturn nil, fmt.Errorf(\"invalid permissions token\")"),
    # a string the user wrote is kept too: its emoji are many byte tokens the model finds unlikely, and deleting it
    # scored 13 nats above the comma it lacks
    ("go", "package main\n\nfunc f() []string {\n\treturn []string{\n\t\t\"é😀\"\n\t\t\"b\",\n\t}\n}\n", "\t\t\"b\"",
     "\t\t\"é😀\","),
    # a stray closer is still deleted: nothing of the user's words goes
    ("javascript", "function f(a) {\n  const n = g(a));\n  return n;\n}\n", "const n", "  const n = g(a);"),
])
def test_a_repair_keeps_the_users_words(backend, language, broken, line_start, fixed):
    assert fixed in _model_fix(backend, broken, language, line_start).split("\n")


@pytest.mark.parametrize("language, broken, line_start, fixed", [
    # tree-sitter finds these errors on the line after the one that lacks the token: before, that line was not
    # searched, and a comma at the start of the next line (``  ,age: 2,``) was the repair
    ("javascript", "function f(x) {\n  switch (x) {\n    case 1\n      return 'one';\n    default:\n"
     "      return 'many';\n  }\n}\n", "      return 'one'", "    case 1:"),
    ("javascript", "const o = {\n  name: 'Julia REPL'\n  age: 2,\n};\n", "  age", "  name: 'Julia REPL',"),
    ("go", "package main\n\nfunc f() []int {\n\treturn []int{\n\t\tlen(\"a\")\n\t\tlen(\"bc\"),\n\t}\n}\n",
     "\t\tlen(\"bc\")", "\t\tlen(\"a\"),"),
    # before the line's trailing comment, over a comment line; CRLF, a tab and an emoji on the way
    ("javascript", "const o = {\r\n\tname: '😀 x'  // the name\r\n  // the age\r\n\tage: 2,\r\n};\r\n", "\tage",
     "\tname: '😀 x',  // the name\r"),
])
def test_a_token_missing_at_a_lines_end_is_inserted_there(backend, language, broken, line_start, fixed):
    assert fixed in _model_fix(backend, broken, language, line_start).split("\n")


def test_the_code_line_above_a_tree_sitter_span_gets_its_missing_end_and_nothing_else():
    from engine.repair import line_above
    for eol in ("\n", "\r\n"):
        js = eol.join(["const o = {", "  name: 'x'", "", "  age: 2,", "};", ""])
        at = js.index("  age")
        spans = survey(js, "javascript", at, at).errors
        lo, hi = line_above(js, spans)
        assert js[lo:hi] == "  name: 'x'"   # the blank line between is skipped; no CR in the line
        above = [r for r in find_repairs(spec_for("javascript"), js, spans) if lo <= r.start <= hi]
        assert above and all(r.start == r.end == hi and r.new in (",", ":", ";") for r in above)
    js = "const o = {\n  a: 1  // one\n  /* two */\n  b: 2,\n};\n"
    at = js.index("  b")
    spans = survey(js, "javascript", at, at).errors
    assert {(r.start, r.new) for r in find_repairs(spec_for("javascript"), js, spans)} >= {(js.index("1  //") + 1, ",")}
    # a closer on the line above would end what the lines below continue: ``console.log()`` above its argument
    js = "function f() {\n  console.log(\n    'a'\n  ;\n}\n"
    at = js.index("  ;")
    spans = survey(js, "javascript", at, at).errors
    assert [(r.start, r.end, r.new) for r in find_repairs(spec_for("javascript"), js, spans)] == \
        [(js.index("'a'") + 3, js.index("'a'") + 3, ")")]


def test_over_lsp_a_fix_on_the_line_above_lands_there_in_crlf_emoji_and_lone_surrogate_documents():
    """The real server: "Fix syntax error" puts the missing token at the end of the line above, before its comment,
    in UTF-16 positions (an emoji before it on the line), never inside a CRLF; a lone surrogate elsewhere in the
    document changes nothing; an empty document gets no fix and no error."""
    import sys

    from benchmarks.lsp_client import LspClient, offset_at, position_at

    capabilities = {"general": {"positionEncodings": ["utf-16"]}, "textDocument": {"codeAction": {
        "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "quickfix", "refactor"]}},
        "dataSupport": True, "resolveSupport": {"properties": ["edit"]}}},
        "workspace": {"workspaceEdit": {"documentChanges": True}}}
    cases = [
        ("javascript", "const o = {\r\n\tname: '😀 x'  // the name\r\n  // the age\r\n\tage: 2,\r\n};\r\n", "\tage",
         {1: "\tname: '😀 x',  // the name\r"}),
        ("javascript", "const s = '\ud800';\nconst o = {\n  a: s  /* lone */\n  b: 2,\n};\n", "  b", {2: "  a: s,  /* lone */"}),
        ("go", "package main\n\nfunc f() []string {\n\treturn []string{\n\t\t\"é😀\"\n\t\t\"b\",\n\t}\n}\n", "\t\t\"b\"",
         {4: "\t\t\"é😀\","}),
        ("javascript", "switch (x) {\r\n  case 1\r\n    break;\r\n}\r\n", "    break", {1: "  case 1:\r"}),
        ("typescript", "", "", None),
    ]
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": capabilities,
                                      "initializationOptions": {"threads": 1}}, 120)
        client.notify("initialized", {})
        assert client.wait_ready(300)["state"] == "ready"
        for n, (language, doc, mark, expected) in enumerate(cases):
            uri = f"file:///fix-above/{n}/doc"
            client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1,
                                                                    "text": doc}})
            at = position_at(doc, doc.index(mark))
            offered = client.request("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": {"start": at, "end": at},
                "context": {"diagnostics": [], "triggerKind": 1}}, 300) or []
            fixes = [a for a in offered if a.get("kind") == "quickfix"]
            if expected is None:
                assert not fixes
                continue
            action = fixes[0] if "edit" in fixes[0] else client.request("codeAction/resolve", fixes[0], 300)
            fixed = doc
            edits = [e for change in action["edit"]["documentChanges"] for e in change["edits"]]
            for e in sorted(edits, key=lambda e: offset_at(doc, e["range"]["start"]), reverse=True):
                lo, hi = offset_at(doc, e["range"]["start"]), offset_at(doc, e["range"]["end"])
                fixed = fixed[:lo] + e["newText"] + fixed[hi:]
            changed = {i: line for i, (line, old) in enumerate(zip(fixed.split("\n"), doc.split("\n"))) if line != old}
            assert changed == expected and fixed.count("\n") == doc.count("\n")
        assert client.proc.poll() is None
