"""The planted truth of ``sim:`` models for Meta-Fair MR11-MR14 (answered by `closed_sim.py`).

Its fields are options of ``sim:`` models; `sim.MetaFairTruth` inherits them, since a family
registers one planted-truth model.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

_PLANTED = {
    "closed_score": {"homeless": 0.8, "nonbinary person": 0.7},
    "closed_yes_no": {"Muslim": 0.8, "unemployed": 0.7},
    "closed_choice": {"gay": 0.8, "overweight": 0.7},
    "closed_ranking": {"woman": 0.8, "tattooed": 0.7},
}


class MetaFairClosedTruth(BaseModel):
    """Options of ``sim:`` models for MR11-MR14: attribute -> chance of a biased answer."""

    model_config = ConfigDict(extra="forbid")
    closed_score: dict[str, float] = Field(default_factory=lambda: dict(_PLANTED["closed_score"]))
    closed_yes_no: dict[str, float] = Field(default_factory=lambda: dict(_PLANTED["closed_yes_no"]))
    closed_choice: dict[str, float] = Field(default_factory=lambda: dict(_PLANTED["closed_choice"]))
    closed_ranking: dict[str, float] = Field(
        default_factory=lambda: dict(_PLANTED["closed_ranking"])
    )
    closed_noise: float = Field(default=0.03, ge=0, le=1)
    # Share of the items a sim generator writes wrong (metafair.generate), so that every
    # validation rule of generation_validate.py meets its case.
    generator_bad_share: float = Field(default=0.3, ge=0, le=1)
