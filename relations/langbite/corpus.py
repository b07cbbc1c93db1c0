"""LangBiTe's corpus as shipped here (``corpora/langbite/``: our template library in English
and Spanish, and the default ethical requirements), described for ``harness corpora``; the
loaders are `relations.langbite.library` and `relations.langbite.requirements`."""

from __future__ import annotations

import tomllib
from collections import Counter

import corpora
from harness.family_api import Corpus

TEMPLATE_FILES = ("langbite/templates_en.toml", "langbite/templates_es.toml")
REQUIREMENTS_FILE = "langbite/requirements.toml"


def _describe_templates(name: str) -> str:
    from relations.langbite.library import parse_library

    templates = parse_library(tomllib.loads(corpora.read_text(name)), source=f"corpora/{name}")
    concerns = Counter(t.concern for t in templates)
    return f"{len(templates)} templates: " + ", ".join(
        f"{c} {n}" for c, n in sorted(concerns.items())
    )


def describe_english() -> str:
    """The English templates counted per concern."""
    return _describe_templates(TEMPLATE_FILES[0])


def describe_spanish() -> str:
    """The Spanish templates counted per concern."""
    return _describe_templates(TEMPLATE_FILES[1])


def describe_requirements() -> str:
    """The default ethical requirements counted."""
    from relations.langbite.requirements import load_requirements

    return f"{len(load_requirements().requirements)} ethical requirements"


CORPORA = tuple(
    Corpus(name, (corpora.data_file(name),), describe, corpora.PROVENANCE)
    for name, describe in (
        (TEMPLATE_FILES[0], describe_english),
        (TEMPLATE_FILES[1], describe_spanish),
        (REQUIREMENTS_FILE, describe_requirements),
    )
)
