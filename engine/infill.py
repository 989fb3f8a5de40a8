"""One cursor or selection request, start to finish, on the engine thread: hole, context window, denoise, validate."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from . import doclines, lengths, paramlines, worklines
from .backends.base import Backend, Candidate, Control, FillPlan, HoleSpec
from .confidence import Document, offer
from .config import FillOptions
from .context import Hole, Window, decide_hole, foreign_indent, indent_options, reindent, restyle, window
from .languages import LanguageSpec, check_spec, lines_name, opens_block, spec_for
from .lines import LfText, eol_of
from .model_text import REPLACEMENT, invents_replacement, model_text
from .requests import Completion, EngineError, HoleFill, HoleKind, InfillRequest
from .returns import bare_return_check, returns_check, returns_in_a_test, value_return_check
from .unused import unused_local_check
from .validate import (PARSES, DocumentCheck, Verdict, assigns_itself, baseline_errors, comment_only,
                       comments_out_rest, degenerate, document_parses, empty_comment, ends_in_a_loose_comma,
                       go_value_unused, imported_again, jumps_over_code, parses, plain_syntax_check, python_check,
                       regroups_brackets, reopens_closer, repeats_neighbour, statement_end, tidy,
                       without_surplus_closers)


def check_request(request: InfillRequest) -> None:
    n = len(request.text)
    if not 0 <= request.offset <= n:
        raise EngineError(f"offset {request.offset} is outside the document (0..{n})")
    if request.end is not None and not request.offset <= request.end <= n:
        raise EngineError(f"end {request.end} is outside {request.offset}..{n}")


def complete(backend: Backend, config: FillOptions, request: InfillRequest, control: Control) -> Completion:
    """The fill for ``request`` (``config``: the fill options in force for it)."""
    t0 = time.perf_counter()
    check_request(request)
    if "\r\n" in request.text:
        return _complete_lf(backend, config, request, control, t0)
    spec = spec_for(request.language)
    hole = decide_hole(spec, request.text, request.offset, request.end, request.kind)
    numbering = itertools.count()  # the request's attempts, for its drafts
    if not hole.heal.strip() or request.rewrite:
        return _complete_hole(backend, config, request, control, spec, hole, t0, numbering)
    # A typed word fragment: first go on after it as typed; regenerate it (the healed hole, starting on
    # a clean token boundary) only when that finds nothing valid. Healing first left 35 of 40 typing
    # requests empty with the embedded model, which seldom rewrites the fragment it was given.
    typed = _complete_hole(backend, config, request, control, spec,
                           replace(hole, start=request.offset, heal=""), t0, numbering)
    budget = lengths.step_budget(request.steps, config, backend)
    if typed.fills or typed.steps >= budget:
        return typed
    healed = _complete_hole(backend, config, replace(request, steps=budget - typed.steps),
                            offset_steps(control, typed.steps), spec, hole, t0, numbering)
    return replace(healed, steps=typed.steps + healed.steps, forwards=typed.forwards + healed.forwards,
                   tokens=typed.tokens + healed.tokens, rejected=typed.rejected + healed.rejected,
                   not_utf8=typed.not_utf8 + healed.not_utf8)


def _complete_lf(backend: Backend, config: FillOptions, request: InfillRequest, control: Control,
                 t0: float) -> Completion:
    """A CRLF document's fill: everything (window, options, checks, the model) on its text read as LF, so it gets
    its LF twin's fill; the fills' ranges mapped back (never inside a ``\\r\\n``), written with the document's line end
    (``eol_of``), and so its drafts."""
    doc = LfText(request.text)
    offset = doc.to_lf(request.offset)
    end = None if request.end is None else doc.to_lf(request.end)
    eol = eol_of(request.text)  # the document's, as a code action's edits have it
    completion = complete(backend, config, replace(request, text=doc.lf, offset=offset, end=end),
                          lf_control(control, doc, eol))
    return replace(doc.completion_back(completion, eol), elapsed_ms=_ms(t0))


def lf_control(control: Control, doc: LfText, eol: str) -> Control:
    """``control`` for a job run on ``doc.lf``: its drafts' spans mapped back to the document's offsets, their text
    written with the document's line end ``eol``."""
    draft = control.draft
    if draft is None:
        return control

    def place(step, texts, confidences, pieces=None, **where):
        if "spans" in where:
            where["spans"] = tuple((doc.to_doc(s), doc.to_doc(e)) for s, e in where["spans"])
        if eol != "\n":
            texts = tuple(t.replace("\n", eol) for t in texts)
            pieces = None if pieces is None else tuple(tuple(p.replace("\n", eol) for p in ps) for ps in pieces)
        draft(step, texts, confidences, pieces, **where)
    return Control(control.check, place)


def _complete_hole(backend: Backend, config: FillOptions, request: InfillRequest, control: Control,
                   spec: LanguageSpec, hole: Hole, t0: float, numbering: Iterator[int]) -> Completion:
    text = request.text
    original = text[hole.start:hole.end]
    span_tokens = backend.count_tokens(original) if hole.kind is HoleKind.SPAN else 0
    slots = lengths.cursor_slots(hole.kind, request.max_tokens, config, span_tokens)
    # the context is cut to what the model's positions leave beside the hole (a rewrite starts from its text)
    pre, suf = lengths.context_tokens(backend, config, max(slots, span_tokens if request.rewrite else 0))
    # (a CRLF document is read as LF before it gets here: ``_complete_lf``)
    win = window(spec, text, hole.start, hole.end, backend.count_tokens, pre, suf)
    line_end = text.find("\n", hole.end)
    rest_of_line = text[hole.end: len(text) if line_end < 0 else line_end]
    baseline = baseline_errors(spec, win, original) if config.validate else None
    # A one-line hole is tried at several lengths and the most confident valid fill wins; a block may
    # retry at half the slots. The step budget holds for the whole request, attempts included.
    line_lengths = lengths.line_lengths(hole.kind, request.max_tokens, config, backend)
    budget = lengths.step_budget(request.steps, config, backend)
    # a document with no indented code line is indented as the workspace's files are (``Workspace.indent_unit``);
    # the workspace keys a language's files by its grammar's name, or a plain-text language's (C's) by its id
    project = worklines.lookup(request.workspace)
    counted = lines_name(request.language)
    indents = indent_options(spec, text, hole, project.indent_unit(counted) if project is not None else None)
    whole = python_check(spec, text, hole.start, hole.end) if config.validate else None
    # the window's own errors (from its cut) may cover the cursor's line: then the whole document decides; so it
    # does where a window without errors gets some only after the fill (the cut left out the closer of a block the
    # fill opens)
    document = document_parses(spec, text, hole.start, hole.end) if config.validate and baseline is not None \
        else None
    # a Go or Rust return the function cannot take parses but does not compile (engine/returns.py)
    fits = returns_check(spec, text, hole.start, hole.end) if config.validate else None
    # a constructor's body returns no value (``return Math.hypot(this.x, this.y)`` copied from a method below)
    constructor = paramlines.constructor_at(text, hole, spec.name)
    fits = _both(fits, paramlines.constructor_check(text, hole.start, constructor) if config.validate else None)
    # an import in a function's body that the module already has at its top does nothing
    fits = _both(fits, imported_again(spec, text, hole.start) if config.validate else None)
    # a Python test returns no value; no line assigns a name to itself
    fits = _both(fits, returns_in_a_test(spec, text, hole.start) if config.validate else None)
    fits = _both(fits, assigns_itself(text, hole.start) if config.validate else None)
    # a language filled as plain text is still parsed where a grammar can check it: no fill that adds an error, and
    # that grammar reads the comment alone below
    check = check_spec(request.language)
    plain = plain_syntax_check(check, text, hole.start, hole.end, finish=not request.rewrite) if config.validate \
        else None
    fits = _both(fits, plain)
    # nor a bare ``return`` where the function's other returns give a value (``return;`` for ``return $self;``)
    fits = _both(fits, bare_return_check(check or spec, text, hole.start, hole.end) if config.validate else None)
    # nor, in Java, C and C++, a return of a value the function cannot give (``return -1;`` in a constructor)
    fits = _both(fits, value_return_check(check, text, hole.start, hole.end) if config.validate else None)
    # nor a declaration of a local its function never reads (``const delay = ...`` with no other ``delay``)
    fits = _both(fits, unused_local_check(check or spec, text, hole.start, hole.end) if config.validate else None)
    # nor is a comment alone a line's fill where no comment borders the line (a rewrite's selection may be one; in
    # "Complete body" a line that would be a comment ends the body: ``oneline.fill_body``)
    if config.validate and not request.rewrite and not request.ends_block and not hole.heal.strip():
        fits = _both(fits, lambda fill: not comment_only(spec, win.prefix, fill[len(hole.heal):], win.suffix, check))
    # a rewrite may give back the U+FFFD the model read for a lone surrogate in the selection (engine/model_text.py)
    replacement_ok = request.rewrite and REPLACEMENT in model_text(original)
    steps = forwards = tokens = rejected = not_utf8 = 0
    # The document's own lines, scored by the backend on the first forward (engine/doclines.py). The rest of a
    # typed line gets those that start as it does (filled in one attempt: lengths.line_lengths gives several
    # lengths to empty lines only). Then, with ``workspace_lines``, the lines of the request's workspace's other
    # files (engine/worklines.py) and, with ``common_lines``, the lines code often has (engine/commonlines.py) that
    # start so, each with a prior. An empty line gets the lines seen beside its neighbours, in the document and
    # the workspace's files (``doclines.neighbour_options``).
    options = doclines.NONE
    in_workspace = False   # the workspace's lines of the request's language could fill it (``Completion``)
    if config.document_lines and backend.scores_options and not request.rewrite:
        workspace = project if config.workspace_lines else None
        in_workspace = workspace is not None and workspace.table(counted) is not None
        # a line of a constructor's body: the lines that store its parameters (``self.path = path``), after the
        # others (a line that is one of them already keeps its source and rank)
        stored = [] if constructor is None else paramlines.stored_lines(text, hole.start, constructor, spec.name)
        options = doclines.line_options(text, hole, rest_of_line, spec.name if config.common_lines else None,
                                        workspace.table(counted) if workspace is not None else None,
                                        (counted, workspace), stored)
        if not options.texts:
            options = doclines.neighbour_options(text, hole, rest_of_line, counted, workspace,
                                                     before_below=not request.ends_block)
        # a word being typed before an editor's closers (``f(err|)``): its rest where the document has it
        options = doclines.joined(options, doclines.word_options(text, hole, rest_of_line, counted))
        # the rest of a line that has the end of the typed code in it (``self._pa|`` -> ``used.set()``)
        options = doclines.joined(options, doclines.tail_options(text, hole, rest_of_line, counted))
        options = doclines.joined(options, paramlines.param_options(text, hole, rest_of_line, constructor, stored,
                                                                    spec.name))
    # the options are scored on the first forward of the attempt with the most slots (an empty line's are whole
    # lines: at 8 slots most of them would be scored on their first 8 tokens only; past the slots a text is scored
    # on the tokens that fit)
    attempts = lengths.attempts(hole.kind, slots, line_lengths, backend)
    scored_at = max(attempts)
    ranks = options.ranks or (None,) * len(options.texts)
    copies: list[tuple[Candidate, float | None, str, float | None]] = []
    firsts: list[HoleFill] = []  # each attempt's first valid fill: these compete for the answer
    want = max(1, config.max_alternatives)
    found: dict[tuple[int, int, str], HoleFill] = {}  # every distinct valid fill, in the order found
    for attempt in attempts:
        left = lengths.attempt_steps(budget, steps, line_lengths)
        if not left:
            break
        instruction = request.instruction if backend.takes_instruction else None
        plan = FillPlan(
            (win.prefix, HoleSpec(attempt, hole.stop_at_newline, hole.keep_newline,
                                  original if request.rewrite else None), win.suffix),
            steps=left, threshold=config.threshold, instruction=instruction,
            options=options.texts if attempt == scored_at else ())
        result = backend.fill(plan, _attempt_control(control, hole, next(numbering), attempt, steps))
        steps, forwards, tokens = steps + result.steps, forwards + result.forwards, tokens + result.tokens
        # The backend read each option as model text; the fill is the document's own text, one character for one
        # (a lone surrogate stays the user's). A tokenizer that does not give the text back: not offered.
        copies += [(replace(cand, texts=(option,)), prior, source, rank)
                   for option, prior, source, rank, cand in zip(options.texts, options.priors, options.sources,
                                                                ranks, result.options)
                   if cand is not None and cand.texts[0] == model_text(option)]
        first: HoleFill | None = None
        for candidate in result.candidates:
            if first is not None and len(found) >= want:
                break
            fill, bad = _first_valid(candidate, hole, rest_of_line, spec, win, baseline, indents, whole, document,
                                     fits, replacement_ok, model_text(original) if request.rewrite else None,
                                     request.opens, text=text)
            rejected += bad
            if fill is None:
                # said in the server's log when no fill is offered (a candidate refused for no check the user can
                # turn off)
                not_utf8 += not replacement_ok and invents_replacement(candidate.texts[0], win.prefix + win.suffix)
                continue
            found.setdefault(_key(fill), fill)
            if first is None:  # an attempt's first valid fill competes for the answer (its other ones do not)
                first = fill
                firsts.append(fill)
        if firsts and not line_lengths:
            break  # a cursor-sized hole answers at once: a block's retry at half the slots is not needed
        if request.rewrite:
            break
    # (a name the document's package defines in another file, Go's sibling files, is no invention)
    defined = project.defined(spec.name, request.path, text) if project is not None and (firsts or copies) \
        else frozenset()
    # a copy that uses a name the document defines nowhere ranks last among the fills (``offer``'s names rule): the
    # next copy that does not is tried first
    # (a language filled as plain text has its names read by its check grammar: Java's, ``engine.names``)
    names = Document(text, check or spec, defined)   # each fill's names read once, here and in ``offer``
    invents = names.invents if config.names_rule else None
    copy, bad = _best_copy(copies, hole, rest_of_line, spec, win, baseline, whole, document, fits, request.opens,
                           text, invents)
    rejected += bad
    if copy is not None:   # the model's fill that makes the copy's edit is that copy: the line the project has,
        same = next((i for i, f in enumerate(firsts) if _key(f) == _key(copy)), None)   # estimated as one
        if same is None:
            firsts.append(copy)
        else:
            firsts[same] = copy
    # Which fill to offer, if any (engine/confidence.py: names the document lacks rank last, then the mean
    # log-confidence; withheld below the bar), and the other distinct fills that clear the same bar.
    others = [f for f in found.values() if all(_key(f) != _key(g) for g in firsts)]
    fill, considered, alternatives = offer(firsts, text, spec, hole.kind, config, backend.model_dir, others, defined,
                                           names, in_workspace)
    return Completion(() if fill is None else (fill,), hole.kind, steps, forwards, tokens, _ms(t0),
                      baseline is not None or plain is not None, rejected, backend.name, tuple(considered),
                      tuple(alternatives), not_utf8, workspace_counted=in_workspace)


COPIES_CHECKED = 8   # the best-ranked lines validated, at most (on the development sets, from 3: whole lines 472 ->
                     # 477 right fills offered, typed to the middle 623 -> 625, typed 275 unchanged; none lost)
PRIOR_WEIGHT = 1.5   # a workspace or common line's rank: its first-forward mean log-probability + this x its
PRIOR_OFFSET = -1.5  # prior + this (a document line: its score alone); chosen on the typed development holes
                     # (for workspace lines apart: weights 1 to 3 and offsets -2 to 1 ranked alike)
NEIGHBOUR_WEIGHT = 1.0   # a typed line's line seen beside the neighbours (``copy_rank``), first chosen on the
BETWEEN_FIRST = 100.0    # whole-line development holes (1,900, replayed offline: right line first for 322 with
                         # these, 235 with the common lines' weight and no preference); an empty line's lines now
                         # rank by ``doclines.neighbour_rank`` (386 held out)
NEIGHBOURS_FIRST = 100.0  # and before the document's, workspace and common lines on a typed line: on the 1,900 typed
                          # development holes right line first for 513 with this, 434 ranked by the score + prior
                          # like a workspace line (weights 1.5 and 2: 517; 282 before these lines were options)
WORD_OFFSET = -100.0   # a word's rest (``doclines.word_options``): its score + this, after every line that starts
                       # as the cursor's does (which match more of what was typed)


TAIL_OFFSET = -200.0   # the rest of a line that has the end of the typed code (``doclines.tail_options``): after the
                       # lines that start as typed and a word's rests


def copy_rank(candidate: Candidate, prior: float | None, source: str = "", rank: float | None = None) -> float:
    """How a candidate line ranks among the hole's lines (higher first): the mean log-probability of its tokens
    on the first forward; a workspace or common line's adds ``PRIOR_WEIGHT`` x its prior (the log of its share
    of the files among the lines of its table with its start) and ``PRIOR_OFFSET``; a line seen beside the
    cursor line's neighbours (on a typed line those of them that start as typed) adds ``NEIGHBOUR_WEIGHT`` x its
    prior (its share of the sightings) and ranks before every other line, and one seen beside both neighbours
    before one seen beside one. An empty line's options (``doclines.neighbour_options``) come with the rest of
    their ``rank``: ``doclines.RANK_SCORE`` x the score is added to it."""
    if rank is not None:   # an empty line's options all have one
        return doclines.RANK_SCORE * candidate.score + rank
    if source in (doclines.NEIGHBOUR, doclines.BETWEEN):
        assert prior is not None
        return (candidate.score + NEIGHBOUR_WEIGHT * prior + NEIGHBOURS_FIRST
                + (BETWEEN_FIRST if source == doclines.BETWEEN else 0.0))
    if source == doclines.WORD:
        return candidate.score + WORD_OFFSET
    if source == doclines.TAIL:
        return candidate.score + TAIL_OFFSET
    return candidate.score if prior is None else candidate.score + PRIOR_WEIGHT * prior + PRIOR_OFFSET


def _best_copy(candidates: Sequence[tuple[Candidate, float | None, str, float | None]], hole: Hole, rest_of_line: str,
               spec: LanguageSpec, win: Window, baseline: int | None,
               whole: Verdict | None, document: DocumentCheck | None = None,
               fits: Callable[[str], bool] | None = None, opens: str = "", text: str = "",
               invents: Callable[[HoleFill], bool] | None = None) -> tuple[HoleFill | None, int]:
    """The best-ranked line (``copy_rank``: the document's, the workspace's or a common one) that validates as
    the hole's fill (the first of the ``COPIES_CHECKED`` best), marked ``copied`` (and a workspace or common
    line with its prior), and how many were rejected. With ``invents`` (the names rule: does the fill use a name
    the document defines nowhere?), the first such line that does not, else the first."""
    rejected = 0
    first: HoleFill | None = None
    for candidate, prior, source, _ in sorted(candidates, key=lambda c: -copy_rank(*c))[:COPIES_CHECKED]:
        fill, bad = _first_valid(candidate, hole, rest_of_line, spec, win, baseline, (), whole, document, fits,
                                 opens=opens, copied=True, text=text, fragment=source == doclines.TAIL)
        rejected += bad
        if fill is None:
            continue
        fill = replace(fill, copied=True, common=prior if source == doclines.COMMON else None,
                       workspace=prior if source == doclines.WORKSPACE else None,
                       neighbour=prior if source in (doclines.NEIGHBOUR, doclines.BETWEEN) else None,
                       between=source == doclines.BETWEEN, tail=source == doclines.TAIL)
        if invents is None or not invents(fill):
            return fill, rejected
        first = first or fill
    return first, rejected


def _both(a: Callable[[str], bool] | None, b: Callable[[str], bool] | None) -> Callable[[str], bool] | None:
    """A check that passes what both pass (``None``: no check)."""
    if a is None or b is None:
        return a if b is None else b
    return lambda fill: a(fill) and b(fill)


def _key(fill: HoleFill) -> tuple[int, int, str]:
    """Fills with one key make the same edit: one of them is offered."""
    return fill.start, fill.end, fill.text


def offset_steps(control: Control, done: int) -> Control:
    """Number a retry's steps after the first attempt's, so drafts stay in order."""
    if not done:
        return control
    draft = control.draft
    return Control(lambda step: control.check(done + step),
                   (lambda step, *rest, **where: draft(done + step, *rest, **where)) if draft else None)


def _attempt_control(control: Control, hole: Hole, attempt: int, slots: int, done: int) -> Control:
    """One attempt's hooks: its steps counted after the ``done`` ones already run (a request's drafts never
    go back a step), and its drafts saying which attempt they are (a new one restarts the text), its slots,
    the hole's kind and the text they replace: from a regenerated word fragment's start; from the cursor
    for typed indentation, which the fill is re-indented to, so the draft's own indentation is dropped."""
    control = offset_steps(control, done)
    if control.draft is None:
        return control
    draft = control.draft
    indentation = bool(hole.heal) and not hole.heal.strip()
    where = {"attempt": attempt, "slots": slots, "kind": hole.kind,
             "spans": ((hole.start + (len(hole.heal) if indentation else 0), hole.end),)}

    def place(step, texts, confidences, pieces=None):
        if indentation and pieces:
            texts, confidences, pieces = _drop_indentation(texts, confidences, pieces)
        draft(step, texts, confidences, pieces, **where)
    return Control(control.check, place)


def _drop_indentation(texts, confidences, pieces):
    """The first hole's draft without its leading spaces and tabs."""
    ps, cs = list(pieces[0]), list(confidences[0])
    text = "".join(ps)
    drop = len(text) - len(text.lstrip(" \t"))
    while drop and ps:
        if len(ps[0]) <= drop:
            drop -= len(ps.pop(0))
            cs.pop(0)
        else:
            ps[0], drop = ps[0][drop:], 0
    return (("".join(ps),) + tuple(texts[1:]), (tuple(cs),) + tuple(confidences[1:]),
            (tuple(ps),) + tuple(pieces[1:]))


def _options(raw: str, hole: Hole, offside: bool = False) -> list[str]:
    """The raw fill, then (for a block) each shorter prefix ending at a line end. In an
    indentation-sensitive language a block fill ends before its first line indented less than its
    first: the block under the cursor is what is missing, and code after it is the suffix's."""
    if hole.kind is not HoleKind.BLOCK:
        return [raw]
    if offside:
        raw = _within_block(raw)
    cuts = [i + 1 for i, ch in enumerate(raw) if ch == "\n" and i + 1 < len(raw)]
    return [raw] + [raw[:c] for c in reversed(cuts)]


def _within_block(raw: str) -> str:
    lines = raw.split("\n")
    depth = len(lines[0]) - len(lines[0].lstrip(" \t"))
    for i, line in enumerate(lines[1:], 1):
        if line.strip() and len(line) - len(line.lstrip(" \t")) < depth:
            return "\n".join(lines[:i]) + "\n"
    return raw


def _first_valid(candidate: Candidate, hole: Hole, rest_of_line: str, spec: LanguageSpec, win: Window,
                 baseline: int | None, indents: tuple[str, ...] = (),
                 whole_document_ok: Verdict | None = None,
                 document: DocumentCheck | None = None,
                 fits: Callable[[str], bool] | None = None,
                 replacement_ok: bool = False, rewrite: str | None = None,
                 opens: str = "", copied: bool = False, text: str = "", fragment: bool = False
                 ) -> tuple[HoleFill | None, int]:
    """The first option that tidies and parses (and whose returns ``fits`` the function, where it can tell:
    engine/returns.py): the model's fill (or a shorter block), as written, then re-indented to each level in
    ``indents`` (the user's typed indentation, the levels around; in a braces language only for a fill
    indented with what the file does not use, which is not offered as written: ``context.foreign_indent``;
    such a fill's deeper lines get the file's unit too, ``context.restyle``). A ``rewrite`` (the selection's text,
    as the model read it) writes the user's own lines of the selection again: a line it gives back unchanged is the
    user's, never a repeat of its neighbour (validate.repeats_neighbour's ``kept``), and only a copy of the nearest
    code line is refused there, not of the line after next (``after_next``: a user's ``x = f()``, ``y = 1``,
    ``x = f()`` would refuse every rewrite of them). With ``opens`` (``InfillRequest.opens``) a line that opens a
    block of statements (``languages.opens_block``) is checked with that empty block after it: the checks see the
    block its lines will fill, not an opener without a body. The model's stutter (``validate.degenerate``:
    ``_copy_copy_copy``, ``Just Just Just Just``) is no fill; a line ``copied`` from the user's code is no stutter."""
    bad = 0
    # the model's bytes that are no UTF-8 come back as U+FFFD: a character the user never wrote. A U+FFFD the
    # window really has may be copied; a lone surrogate, which the model reads as U+FFFD, may not be written as
    # one (the fill would put U+FFFD where the user has no such character). A rewrite's selection is read too
    # (``replacement_ok``: a line given back keeps its lone surrogates, ``actions.minimal_edits``).
    around = win.prefix + win.suffix   # what the model read: a U+FFFD or a stutter it has is not the model's
    foreign = not replacement_ok and invents_replacement(candidate.texts[0], around)
    # at a line's end the model's fill is also read without the closers at its end it has too many of, and so is a
    # ``fragment`` copied from another line (``doclines.tail_options``: its closers closed that line's brackets); a
    # copied line stays the line it copies
    line_before = win.prefix[win.prefix.rfind("\n") + 1:] if (fragment or not copied) and not rest_of_line.strip() \
        else None
    for option in _options(candidate.texts[0], hole, spec.block_opener == ":"):
        foreign_lead = foreign_indent(option, indents)
        variants: list[tuple[str, list[tuple[int, int, int]]]] = [(option, [])] if hole.heal or not foreign_lead \
            else []
        if foreign_lead:
            variants += [restyle(option, indent) for indent in indents]
        elif hole.heal or spec.block_opener == ":" and (not win.prefix or win.prefix.endswith("\n")):
            variants += [reindent(option, indent) for indent in indents]
        # the rest of the line a fill ends with is cut as the model's repeat of it, or kept where the fill's brackets
        # pair; where the rest starts with a closer, the other reading is tried next (``getattr(dbapi, "v", None)``
        # needs its ``)`` before the user's): the parse tells which closes what
        tidied = [(fill, edits) for written, edits in dict((v[0], v) for v in variants).values()
                  for fill in dict.fromkeys(tidy(written, hole, rest_of_line, other) for other in (False, True))]
        if line_before is not None:   # then the model's fill without the closers it has too many of
            tidied += [(trimmed, edits) for fill, edits in tidied if fill is not None
                       and (trimmed := without_surplus_closers(spec, line_before, fill)) is not None]
            # and each first with its statement's ``;`` as the document's statements have it, if that still passes
            ended = [statement_end(spec, win.prefix, win.suffix, fill) if fill is not None else None
                     for fill, _ in tidied]
            tidied = [variant for (fill, edits), end in zip(tidied, ended)
                      for variant in ([(end, edits)] if end is not None else []) + [(fill, edits)]]
        for fill, edits in tidied:
            if fill is None or not fill[len(hole.heal):].strip() or empty_comment(fill[len(hole.heal):]) \
                    or foreign and REPLACEMENT in fill \
                    or not copied and degenerate(fill, around) is not None \
                    or repeats_neighbour(win.prefix, fill, win.suffix, after_next=rewrite is None, kept=rewrite) \
                    or jumps_over_code(spec, win.prefix, fill, win.suffix):
                bad += 1   # (a line the fill writes that copies the code line next to it is never what was meant,
                continue   # nor a jump the user's next line of its block follows: dead code)
            # an opener is checked with its empty block after it (the fill stays the line)
            checked = fill + opens if opens and "\n" not in fill and opens_block(spec, fill) else fill
            # Python's parser on the whole document is the authority when it accepts the document as a
            # whole: the window can start inside a docstring, where tree-sitter sees errors everywhere.
            # Else the window's re-parse, and when the window's own errors reject the fill the whole document's.
            # A window with errors of its own (its cut) that accepts a fill has the whole document confirm it: the
            # fill can absorb or move the window's errors, its count staying, and break the document.
            verdict = whole_document_ok(checked) if whole_document_ok is not None else None
            if verdict == "":
                bad += 1
                continue
            # A window without errors that a fill gives errors may have been cut from what the fill needs: the closer
            # of a block the fill opens (a header above the user's body, whose closer stood alone before), the
            # class a method's header belongs to (``static resolveURL(url, path) {``), the function a Go statement
            # is in, the brackets the user's closers after the cursor closed before the fill took them
            # (``editor.commands.set|})`` in a test's ``it(``). Where the window is cut, the whole document decides,
            # and its brackets are the ones that pair (``text``: the document, which the window is cut from).
            sides = (win.prefix, win.suffix)
            if verdict != PARSES:
                in_window = parses(spec, win, checked, baseline)
                if document is None or in_window and not baseline:
                    ok = in_window
                elif baseline:
                    ok = document(checked, confirm=in_window)
                else:
                    ok = bool(text) and (win.start > 0 or win.end < len(text)) and document(checked)
                    sides = (text[:hole.start], text[hole.end:])
                if not ok:
                    bad += 1
                    continue
            if fits is not None and not fits(checked) or ends_in_a_loose_comma(spec, win.prefix, fill, win.suffix) \
                    or go_value_unused(spec, win.prefix, fill, win.suffix):
                bad += 1   # a return the function cannot take, a jump with no loop; a line left as a lone tuple,
                continue   # a Go value on a line of its own
            if baseline is not None and comments_out_rest(spec, win.prefix, checked, win.suffix):
                bad += 1  # the code after the cursor would become a comment: it parses, and it is lost
                continue
            if baseline is not None and (reopens_closer(spec, win.prefix, checked, win.suffix)
                                         or regroups_brackets(spec, sides[0], checked, sides[1])):
                bad += 1  # the fill closes what the user's closer after the cursor closes (that one is text now,
                continue  # or closes a bracket the fill opened)
            if baseline and verdict != PARSES and document is not None and rewrite is None \
                    and not document.finishes_line(checked):
                bad += 1  # the user's line was broken where they typed it and the fill leaves it so: the string
                continue  # still open, the call not closed, the statement without its end
            return _hole_fill(candidate, hole, fill, edits), bad
    return None, bad


def _moved(i: int, edits: Sequence[tuple[int, int, int]]) -> int:
    """Where offset ``i`` of the model's text is after the re-indent ``edits`` (ascending)."""
    shift = 0
    for start, old, new in edits:
        if i >= start + old:
            shift += new - old
        elif i > start:  # inside a replaced indentation
            return start + shift + min(i - start, new)
        else:
            break
    return i + shift


def _hole_fill(candidate: Candidate, hole: Hole, fill: str, edits: Sequence[tuple[int, int, int]] = ()) -> HoleFill:
    """The fill without its healed head, with the confidences of the tokens that survived the tidy."""
    cut = len(hole.heal)
    confs, spans = [], []
    for c, (lo, hi) in zip(candidate.confidences[0], candidate.token_spans[0]):
        lo, hi = _moved(lo, edits), _moved(hi, edits)
        if hi <= cut or lo >= len(fill):
            continue
        confs.append(c)
        spans.append((max(lo, cut) - cut, min(hi, len(fill)) - cut))
    return HoleFill(hole.start + cut, hole.end, fill[cut:], tuple(confs), tuple(spans))


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)
