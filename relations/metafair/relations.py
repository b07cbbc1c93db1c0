"""Meta-Fair's relations, as the family registers them: MR1-MR10 (judged; see
`relations.metafair.open.relations`). The deterministic MR11-MR14 live beside them."""

from __future__ import annotations

from relations.metafair.open.legacy_mr8 import CHECK, SOURCE, check_prompt
from relations.metafair.open.relations import OPEN_RELATIONS

__all__ = ["CHECK", "OPEN_RELATIONS", "SOURCE", "check_prompt"]
