"""BADF: open-ended bias association discovery from generated stories (stories, concept
extraction, unification, significance per location category, exclusivity filter)."""

from pathlib import Path

from harness.registry import Family
from relations.badf.relations import BadfExclusivity, BadfStory

FAMILY = Family(
    name="badf",
    summary="bias associations discovered in generated stories: extraction, unification, "
    "distinctiveness and chi-squared per location category, exclusivity filter",
    relations=(BadfStory, BadfExclusivity),
    docs=Path(__file__).with_name("docs.md"),
)
