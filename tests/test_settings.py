"""initializationOptions / configuration parsing: defaults, camelCase, per-key fallback with messages."""

from lsp_server.settings import Settings, parse_settings


def test_defaults_and_none():
    assert parse_settings(None) == (Settings(), [])
    assert parse_settings({}) == (Settings(), [])


def test_camel_case_and_section():
    s, problems = parse_settings({"diffusionLsp": {"maxHoleTokens": 32, "threads": 2, "drafts": True}})
    assert problems == [] and s.fill.max_hole_tokens == 32 and s.load.threads == 2 and s.server.drafts


def test_invalid_values_fall_back_individually():
    s, problems = parse_settings({"threads": 0, "steps": "many", "dtype": "int3", "model": "/m", "bogus": 1,
                                  "drafts": "yes", "threshold": 0.5})
    assert s.load.threads == 1 and s.fill.steps == 0 and s.load.dtype == "auto" and not s.server.drafts
    assert s.load.model == "/m" and s.fill.threshold == 0.5
    assert len(problems) == 5 and any("bogus" in p for p in problems) and any("'threads'" in p for p in problems)


def test_not_an_object():
    s, problems = parse_settings(["model"])
    assert s == Settings() and problems


def test_engine_config_mapping():
    cfg = parse_settings({"model": "/ckpt", "prefixTokens": 100, "validate": False})[0].engine_config()
    assert cfg.load.model == "/ckpt" and cfg.fill.prefix_tokens == 100 and cfg.fill.validate is False


def test_push_merges_and_null_restores_the_default():
    held, _ = parse_settings({"steps": 6, "minConfidence": 0, "drafts": True, "model": "/ckpt"})
    pushed, problems = parse_settings({"diffusionLsp": {"steps": 4, "minConfidence": None, "drafts": None,
                                                        "model": None}}, held)
    assert problems == []
    assert pushed.fill.steps == 4                               # changed
    assert pushed.fill.min_confidence is None                   # removed: the calibrated default again
    assert pushed.server.drafts is False and pushed.load.model == Settings().load.model
    kept, _ = parse_settings({"steps": 2}, held)                # keys not pushed keep what was held
    assert kept.fill.min_confidence == 0 and kept.server.drafts is True


def test_the_protocol_table_names_every_setting_with_its_default_and_range():
    """docs/PROTOCOL.md's settings table is what editors are told: every key the server takes, its default, and for
    a number the range the server checks."""
    import json
    import re
    from pathlib import Path

    from lsp_server.settings import _RANGES, setting_fields

    doc = (Path(__file__).parent.parent / "docs" / "PROTOCOL.md").read_text(encoding="utf-8")
    table = doc.split("\n## Settings")[1].split("\n## ")[0]
    documented = {}
    for line in (row for row in table.splitlines() if row.startswith("| `")):
        cells = line.split("|")
        keys = re.findall(r"`(\w+)`", cells[1])
        defaults = [json.loads(d.strip().strip("`")) for d in cells[3].split(" / ")]
        for i, key in enumerate(keys):
            documented[key] = (cells[2], defaults[min(i, len(defaults) - 1)])
    fields = setting_fields()
    assert set(documented) == set(fields)
    for key, (kind, default) in documented.items():
        field = fields[key][1]
        assert default == field.default, key
        if field.name in _RANGES:
            lo, hi = _RANGES[field.name]
            bounds = re.findall(r"\d+(?:\.\d+)?", kind)
            assert bounds and float(bounds[0]) == lo and (len(bounds) == 1 or float(bounds[1]) == hi), (key, kind)
