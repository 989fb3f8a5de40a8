"""The engine's vocabulary: requests in, completions and drafts out, and the errors between. No torch here."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


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
    max_tokens: int | None = None      # None: from EngineConfig and the hole kind
    steps: int | None = None           # None: from EngineConfig
    rewrite: bool = False              # start the hole from the replaced text, not from masks
    instruction: str | None = None     # for backends that take one; others ignore it
    key: str | None = None             # newest request per key wins (the server uses the URI)


@dataclass(frozen=True)
class HoleFill:
    """One hole's result within a completion."""

    start: int                          # str offsets into the request text
    end: int
    text: str
    confidences: tuple[float, ...] = () # one per generated token, in [0, 1]
    token_spans: tuple[tuple[int, int], ...] = ()  # [start, end) of each token within ``text``
    confidence: float | None = None     # estimated P(exactly right) (engine/confidence.py); None: not calibrated


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


class EngineError(Exception):
    """A request the engine cannot serve; the message is safe to show to a user."""


class NotReady(EngineError):
    """The model is loading or failed to load."""


class Cancelled(EngineError):
    """The job was cancelled or superseded, possibly mid-denoising (``step`` is where it stopped)."""

    def __init__(self, step: int = 0):
        super().__init__(f"cancelled at step {step}")
        self.step = step


class ModelLoadError(EngineError):
    """The configured model could not be loaded."""
