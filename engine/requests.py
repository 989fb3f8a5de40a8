"""The engine's vocabulary: requests in, completions and drafts out, and the errors between. No torch here.

Each request kind is a frozen dataclass; ``engine/serve.py`` runs it by its type. A request may carry its own
``FillOptions`` (step budget, accept rule, budgets); without them the engine's configured ones apply.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .config import FillOptions


class HoleKind(str, enum.Enum):
    """What shape of text the hole wants; decides where a fill may stop."""

    INLINE = "inline"  # mid-line, text after the cursor: the rest of this line, no newline
    LINE = "line"      # one line: at an empty line, or inserted before code at a line start
    BLOCK = "block"    # several lines: a body after an opener (':' or '{'), or a multi-line hole
    SPAN = "span"      # a selection or explicit hole: any text


@dataclass(frozen=True)
class InfillRequest:
    """Fill at ``offset`` of ``text`` (str offsets; ``end > offset`` replaces ``text[offset:end]``)."""

    text: str
    offset: int
    language: str = ""                 # LSP language id; '' or unknown means plain-text context
    end: int | None = None             # replace [offset, end) instead of inserting
    kind: HoleKind | None = None       # None: decided from the syntax at the cursor
    max_tokens: int | None = None      # None: from the fill options and the hole kind (engine/lengths.py)
    steps: int | None = None           # None: from the fill options
    rewrite: bool = False              # start the hole from the replaced text, not from masks
    instruction: str | None = None     # a rewrite's instruction, for backends that take one
    key: str | None = None             # newest request per key wins (the server uses the URI)
    options: FillOptions | None = None # None: the engine's configured fill options
    workspace: str | None = None       # the workspace whose files' lines may fill a typed line (engine/worklines.py)
    path: str | None = None            # the document's path as that workspace keys its files: the names its package's
                                       # other files define are not invented (engine/names.py)
    opens: str = ""                    # a line fill may open a block (``languages.opens_block``): it is checked with
                                       # this after it, an empty block ("\n        pass", "\n    }"); "Complete body"
    ends_block: bool = False           # the code line below ends the cursor's block, and more lines may come before
                                       # it ("Complete body"): what is seen before that line says nothing of this one


@dataclass(frozen=True)
class Hole:
    """Where a fill goes, at the cursor or found in the code: ``text[start:end]`` becomes ``lead + fill + tail``.

    A cursor's hole (``context.decide_hole``) may heal typed text; a found hole (``holes.find_blanks``:
    ``...``, ``pass``, TODO, ``__``, a body) has a label and may carry indentation, fixed text around the
    fill and context the model sees but the edit removes."""

    start: int                   # str offsets
    end: int
    kind: HoleKind               # where a fill may stop; a found hole is INLINE (``__``) or BLOCK
    heal: str = ""               # text[start:cursor] re-generated for clean token boundaries
    stop_at_newline: bool = False
    keep_newline: bool = False
    label: str = ""              # a found hole's marker: "...", "pass", "raise", "TODO", "__", "body"
    indent: str = ""             # indentation of the fill's first line (statements only)
    lead: str = ""               # fixed text before the fill (a line break for a same-line body)
    tail: str = ""               # fixed text after the fill (the closing brace's line break)
    context: str = ""            # shown to the model just before the hole but removed by the edit (a TODO line)

    @property
    def inline(self) -> bool:
        """An expression within a line (``__``), not whole statements."""
        return self.kind is HoleKind.INLINE


@dataclass(frozen=True)
class FillRequest:
    """Fill the found ``holes`` of ``text`` jointly, in one canvas ("Fill N holes", "Complete body")."""

    text: str
    language: str
    holes: tuple[Hole, ...]
    callers: tuple[tuple[int, int], ...] = ()  # lines calling the function, extra context after the suffix
    body: bool = False                         # a function body: one hole of ``max_hole_tokens`` slots
    steps: int | None = None
    key: str | None = None
    options: FillOptions | None = None
    workspace: str | None = None               # as ``InfillRequest``'s: a line filled as the cursor's line there
    path: str | None = None                    # (engine/oneline.py) takes the workspace's lines, as typing would


@dataclass(frozen=True)
class RewriteRequest:
    """Re-noise ``text[start:end]`` and denoise it with both sides fixed; fills are the changed lines."""

    text: str
    language: str
    start: int
    end: int
    instruction: str | None = None
    steps: int | None = None
    key: str | None = None
    options: FillOptions | None = None


@dataclass(frozen=True)
class FixRequest:
    """Re-mask the spans around a syntax error, smallest first, until a fill parses; fills are the changed lines."""

    text: str
    language: str
    spans: tuple[tuple[int, int], ...]
    steps: int | None = None
    key: str | None = None
    options: FillOptions | None = None


Request = InfillRequest | FillRequest | RewriteRequest | FixRequest


@dataclass(frozen=True)
class HoleFill:
    """One hole's result within a completion."""

    start: int                          # str offsets into the request text
    end: int
    text: str
    confidences: tuple[float, ...] = () # one per generated token, in [0, 1]
    token_spans: tuple[tuple[int, int], ...] = ()  # [start, end) of each token within ``text``
    confidence: float | None = None     # estimated P(exactly right) (engine/confidence.py); None: not calibrated
    copied: bool = False                # the text of another line of the document (engine/doclines.py), of the
                                        # workspace's files (engine/worklines.py) or of a
                                        # line code often has (engine/commonlines.py), not
                                        # the model's own writing; its confidences are first-forward probabilities
    common: float | None = None         # a copied line from the lines code often has (engine/commonlines.py): its
                                        # prior, the log of its share of the files among the lines with its start
    workspace: float | None = None      # a copied line of the workspace's files (engine/worklines.py): its prior
    neighbour: float | None = None      # a copied line seen beside the same neighbours elsewhere (an empty line's,
                                        # engine/doclines.py ``neighbour_options``, or a typed one's): its prior
    between: bool = False               # ... seen after the line above and before the line below alike
    tail: bool = False                  # a copied rest of a line that has the end of the typed code in it
                                        # (engine/doclines.py ``tail_options``)


@dataclass(frozen=True)
class Completion:
    """The engine's answer. ``fills`` is empty when nothing valid was found."""

    fills: tuple[HoleFill, ...]
    kind: HoleKind
    steps: int                          # denoising steps run
    forwards: int                       # model forward passes (rows in a batch count once)
    tokens: int                         # tokens generated (pads excluded)
    elapsed_ms: float
    syntax_checked: bool                # a grammar validated the result
    rejected: int = 0                   # candidates rejected by validation
    backend: str = ""
    considered: tuple[HoleFill, ...] = ()  # every valid fill tried for the hole, with its estimate, even if withheld
    # A cursor fill's other distinct valid fills (other lengths, candidates), after ``fills[0]``, best first;
    # at most ``FillOptions.max_alternatives - 1``. Each has its own range.
    alternatives: tuple[HoleFill, ...] = ()
    # of ``rejected``, the model's fills written in byte tokens that form no UTF-8 (U+FFFD the user's text lacks:
    # never offered, whatever the checks; the embedded model does so after an emoji or accents in the line)
    not_utf8: int = 0
    # A code action's holes (``fill_blanks``): per fill of ``fills``, the hole's other forms of the same fill (shorter
    # cuts), in order of preference; the whole-document check (``serve.keep_parsing``) falls back to them, in order,
    # when the fill breaks the document, and leaves this empty
    fallbacks: tuple[tuple[HoleFill, ...], ...] = ()
    # A code action's holes left without a fill although the model wrote forms for them that the quality gate
    # withheld (a stutter, comments alone, tokens it was unsure of: ``multifill._usable``); a rewrite withheld
    # as a stutter counts 1; a body written line by line counts 1 when it stopped at a line its calibrated
    # confidence withheld (with no line before it: no body). Says "not likely enough" rather than "nothing parses".
    unsure: int = 0
    # A body written line by line that does not return yet (``returns.unfinished``: a Go function with results, a
    # Rust one with a value): the lines of its stub kept after the lines written, at the end of ``fills[0].text``
    stub_kept: int = 0
    # the request's workspace counts files of its language, whose lines the fill could take (a plain-text fill's
    # estimate reads it: ``confidence.Calibration.plain_shifts``)
    workspace_counted: bool = False

    @property
    def text(self) -> str:
        return self.fills[0].text if self.fills else ""

    @property
    def tokens_per_forward(self) -> float:
        return self.tokens / self.forwards if self.forwards else 0.0


@dataclass(frozen=True)
class Draft:
    """The developing text of every hole after one denoising step (masked slots shown as ``mask_text``)."""

    step: int
    texts: tuple[str, ...]
    confidences: tuple[tuple[float, ...], ...] = field(default=())  # per hole, per token; 0 for masked
    pieces: tuple[tuple[str, ...], ...] = field(default=())         # per hole, the text of each token slot
    done: bool = False
    # A cursor request's drafts also say where they go and which attempt they belong to: a request may run
    # several (each length of a one-line hole, a block's retry, the healed word), and a new one restarts
    # the text (its steps go on counting).
    attempt: int = 0                                                # 0, 1, ... within the request
    slots: int = 0                                                  # the attempt's hole size (0: not said)
    kind: HoleKind | None = None
    spans: tuple[tuple[int, int], ...] = field(default=())          # per hole, the str range the text replaces


class EngineError(Exception):
    """A request the engine cannot serve; the message is safe to show to a user."""


class NotReady(EngineError):
    """The model is loading or failed to load."""


class ModelChanged(EngineError):
    """Adapted weights made for one model, asked to be swapped in after another was loaded (``Engine.swap_weights``
    with the load they were made for): refused, the model keeps its own."""


class Cancelled(EngineError):
    """The job was cancelled or superseded, possibly mid-denoising (``step`` is where it stopped)."""

    def __init__(self, step: int = 0):
        super().__init__(f"cancelled at step {step}")
        self.step = step


class ModelLoadError(EngineError):
    """The configured model could not be loaded."""


class EngineUnreachable(EngineError):
    """A remote engine (the ``engine`` setting) did not answer after its retries; the next request tries again."""


class EngineChanged(EngineError):
    """A remote engine now serves another model (name, tokenizer, positions, calibration or decoding: its
    ``/v1/info`` digest) than the one read when it connected. The request fails; the engine reads ``/v1/info``
    again before its next job (``Engine``), so no fill runs half on the old and half on the new."""

    def __init__(self, message: str, model: str = ""):
        super().__init__(message)
        self.model = model   # what the engine says it serves now ("" when it did not say)


class TextTooLong(EngineError, ValueError):
    """A text that does not fit the model's positions (``Backend.score_text`` of a middle longer than
    ``max_positions``)."""
