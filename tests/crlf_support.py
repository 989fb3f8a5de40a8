"""Shared by the CRLF tests (test_crlf, test_crlf_actions): the real embedded backend with what the model was given
kept, and whether an offset falls between a "\r" and its "\n"."""

from __future__ import annotations

from engine.config import LoadConfig


def inside_crlf(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"


def real_backend():
    """The embedded model on one thread (each test module's ``backend`` fixture)."""
    from engine.backends import load_backend
    return load_backend(LoadConfig(threads=1))


class Recording:
    """The real backend, its plans kept (what the model was given: canvases to fill, texts to score)."""

    def __init__(self, backend):
        self.backend, self.plans = backend, []

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def fill(self, plan, control):
        self.plans.append(plan)
        return self.backend.fill(plan, control)

    def score_text(self, *texts):
        self.plans.append(texts)
        return self.backend.score_text(*texts)
