"""initializationOptions / configuration parsing: defaults, camelCase, per-key fallback with messages."""

from lsp_server.settings import Settings, parse_settings


def test_defaults_and_none():
    assert parse_settings(None) == (Settings(), [])
    assert parse_settings({}) == (Settings(), [])


def test_camel_case_and_section():
    s, problems = parse_settings({"diffusionLsp": {"maxHoleTokens": 32, "threads": 2, "drafts": True}})
    assert problems == [] and s.max_hole_tokens == 32 and s.threads == 2 and s.drafts


def test_invalid_values_fall_back_individually():
    s, problems = parse_settings({"threads": 0, "steps": "many", "dtype": "int3", "model": "/m", "bogus": 1,
                                  "drafts": "yes", "threshold": 0.5})
    assert s.threads == 1 and s.steps == 0 and s.dtype == "auto" and not s.drafts
    assert s.model == "/m" and s.threshold == 0.5
    assert len(problems) == 5 and any("bogus" in p for p in problems) and any("'threads'" in p for p in problems)


def test_not_an_object():
    s, problems = parse_settings(["model"])
    assert s == Settings() and problems


def test_engine_config_mapping():
    cfg = parse_settings({"model": "/ckpt", "prefixTokens": 100, "validate": False})[0].engine_config()
    assert cfg.model == "/ckpt" and cfg.prefix_tokens == 100 and cfg.validate is False
