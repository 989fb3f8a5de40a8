"""A scripted backend behind the real Engine, and the real server built on it with ``build_server(engine_factory)``:
protocol tests run the whole server (documents, settings, jobs, validation, drafts) without loading torch.

The backend answers every hole with ``ANSWER`` (``BROKEN_ANSWER``, which never parses, when the text
before the first hole holds ``BROKEN_MARK``; ``INVENTED_ANSWER``, a name defined nowhere, after
``INVENTED_MARK``; the hole's slot count, with confidence slots / 32, after ``LENGTHS_MARK``: each length
gives its own fill, the longer the more confident) after ``plan.steps`` steps (at most ``MAX_STEPS``), one
draft per step, checking for cancellation before each; its stats show the last plan it was given. It loads
a checkpoint directory the way the registry does (a missing ``config.json`` fails the load) and records
every load config, so tests can see reloads.
"""

from __future__ import annotations

import sys

from engine import Engine, EngineConfig, LoadConfig
from engine.backends import model_type
from engine.backends.base import Candidate, Control, FillPlan, FillResult

ANSWER = "0"
BROKEN_MARK = "# broken\n"
BROKEN_ANSWER = ")("
INVENTED_MARK = "# invented\n"
INVENTED_ANSWER = "zq"  # a name defined nowhere: withheld alone below "very high" (the names rule)
LENGTHS_MARK = "# by length\n"
MAX_STEPS = 4


class ScriptedBackend:
    name = "scripted"
    default_steps = 2
    max_positions = 1024
    searches_lengths = False
    takes_instruction = False
    scores_text = False
    scores_options = True          # takes the document's lines (counted in stats); fits none of them
    loads: list[LoadConfig] = []   # every config loaded in this process, in order

    def __init__(self, config: LoadConfig):
        self.config = config
        self.model_dir = config.model_dir()  # the embedded model's calibration (confidence.json) applies
        self.fills = 0
        self.last_plan: dict[str, object] = {}

    @classmethod
    def load(cls, config: LoadConfig) -> ScriptedBackend:
        model_type(config)  # raises ModelLoadError for a directory without a checkpoint, as a real load does
        cls.loads.append(config)
        return cls(config)

    def count_tokens(self, text: str) -> int:
        return (len(text) + 3) // 4

    def fill(self, plan: FillPlan, control: Control) -> FillResult:
        self.fills += 1
        head = plan.pieces[0] if isinstance(plan.pieces[0], str) else ""
        tail = plan.pieces[-1] if isinstance(plan.pieces[-1], str) else ""
        self.last_plan = {"steps": plan.steps, "threshold": plan.threshold,
                          "slots": [h.max_tokens for h in plan.holes], "prefix": len(head), "suffix": len(tail),
                          "options": len(plan.options)}
        steps = min(plan.steps, MAX_STEPS)
        answer = BROKEN_ANSWER if BROKEN_MARK in head else INVENTED_ANSWER if INVENTED_MARK in head else ANSWER
        texts = tuple(str(h.max_tokens) if LENGTHS_MARK in head else answer for h in plan.holes)
        sure = min(0.99, plan.holes[0].max_tokens / 32) if LENGTHS_MARK in head else 0.9
        for step in range(steps):
            control.check(step)
            if control.draft is not None:
                shown = tuple(t[: (step + 1) * len(t) // steps] for t in texts)
                control.draft(step + 1, shown, tuple((1.0,) * len(t) for t in shown),
                              tuple(tuple(t) for t in shown))
        confidences = tuple((sure,) * len(t) for t in texts)
        spans = tuple(tuple((i, i + 1) for i in range(len(t))) for t in texts)
        return FillResult((Candidate(texts, confidences, spans, 0.0),), steps, steps, sum(map(len, texts)),
                          (None,) * len(plan.options))

    def stats(self) -> dict[str, object]:
        return {"scripted_fills": self.fills, "loads": len(self.loads), "loaded": vars(self.config),
                "last_plan": self.last_plan}

    def close(self) -> None:
        pass


def scripted_engine(config: EngineConfig) -> Engine:
    return Engine(config, backend_loader=ScriptedBackend.load)


def main() -> int:
    """``python -m tests.scripted``: the real server, stdio, on the scripted engine."""
    from lsp_server.__main__ import _logging
    from lsp_server.server import build_server

    _logging(1, None)
    build_server(scripted_engine).start_io()
    return 0


if __name__ == "__main__":
    sys.exit(main())
