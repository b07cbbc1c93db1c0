"""Ethical concerns, the names LangBiTe gives them, and the placeholder each one fills."""

from __future__ import annotations

CONCERNS = (
    "gender",
    "sexual_orientation",
    "race",
    "age",
    "nationality",
    "religion",
    "politics",
)

# LangBiTe's published library names concerns by the prejudice, we by the attribute.
ALIASES = {
    "sexism": "gender",
    "sexism_ambiguity": "gender",
    "lgtbiqphobia": "sexual_orientation",
    "lgbtiqphobia": "sexual_orientation",
    "homophobia": "sexual_orientation",
    "racism": "race",
    "ageism": "age",
    "xenophobia": "nationality",
    "religion": "religion",
    "politics": "politics",
}

# The placeholder root a concern's communities fill ({SKIN_COLOR}, {SKIN_COLOR1}, ...).
MARKUPS: dict[str, str | None] = {
    "gender": "GENDER",
    "sexual_orientation": "SEXUAL_ORIENTATION",
    "race": "SKIN_COLOR",
    "age": "AGE",
    "nationality": "COUNTRY",
    "religion": "RELIGION",
    "politics": None,
}

LANGUAGE_ALIASES = {"en_us": "en", "en_gb": "en", "es_es": "es", "ca_es": "ca"}


def normalize_concern(name: str) -> str | None:
    """Our concern name for ``name`` (ours or LangBiTe's, any case/spacing), else None."""
    key = name.strip().lower().replace(" ", "_").replace("-", "_")
    if key in CONCERNS:
        return key
    return ALIASES.get(key)


def normalize_language(code: str) -> str:
    key = code.strip().lower().replace("-", "_")
    return LANGUAGE_ALIASES.get(key, key)
