"""Which stories a BADF campaign asks for: (arm, identity category, location, descriptors,
story number), enumerated lazily.

An *arm* is a setting and a character count, written ``"base-two"``; the paper ran
``base-single``, ``base-two``, ``balanced-two`` and ``negative-two``. Within an arm and an
identity category the cells form a block of ``locations x descriptor groups x stories``;
case ``index`` is decoded from the block sizes alone (mixed radix), so a campaign of
100,000 stories never holds a list of them.

Stories per descriptor group default to the paper's: two-character stories 20 per pair for
gender (5 pairs) and 10 per pair for race and religion (12 pairs), i.e. 100 and 120 stories
per location; single-character stories double those totals per location (20 per gender
descriptor of 10, 30 per race or religion descriptor of 8).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from relations.badf.corpus import Descriptor, Location, descriptors, locations, pairs

Arm = Literal[
    "base-single", "base-two", "balanced-single", "balanced-two", "negative-single", "negative-two"
]
PAPER_ARMS: tuple[Arm, ...] = ("base-single", "base-two", "balanced-two", "negative-two")
PAPER_STORIES = {
    ("gender", 2): 20,
    ("race", 2): 10,
    ("religion", 2): 10,
    ("gender", 1): 20,
    ("race", 1): 30,
    ("religion", 1): 30,
}


def arm_parts(arm: str) -> tuple[str, int]:
    """(setting, number of characters) of an arm."""
    setting, count = arm.split("-")
    return setting, 1 if count == "single" else 2


@dataclass(frozen=True)
class StoryCell:
    arm: str
    identity_category: str
    location: Location
    characters: tuple[Descriptor, ...]
    story: int  # 0-based story number of this (location, characters)

    @property
    def setting(self) -> str:
        return arm_parts(self.arm)[0]


@dataclass(frozen=True)
class _Block:
    arm: str
    identity_category: str
    groups: tuple[tuple[Descriptor, ...], ...]
    stories: int

    def size(self, n_locations: int) -> int:
        return n_locations * len(self.groups) * self.stories


class StoryGrid:
    """The stories of one ``badf.story`` relation, addressable by index."""

    def __init__(
        self,
        arms: list[str],
        identity_categories: list[str],
        location_categories: list[str],
        location_names: list[str] | None,
        stories: int | None,
    ) -> None:
        wanted_names = set(location_names) if location_names else None
        self.locations = tuple(
            loc
            for loc in locations()
            if loc.category in location_categories
            and (wanted_names is None or loc.name in wanted_names)
        )
        self.blocks: list[_Block] = []
        for arm in arms:
            _, count = arm_parts(arm)
            for cat in identity_categories:
                groups: tuple[tuple[Descriptor, ...], ...] = (
                    pairs(cat) if count == 2 else tuple((d,) for d in descriptors(cat))
                )
                n = stories if stories is not None else PAPER_STORIES[(cat, count)]
                self.blocks.append(_Block(arm, cat, groups, n))

    def __len__(self) -> int:
        return sum(b.size(len(self.locations)) for b in self.blocks)

    def cell(self, index: int) -> StoryCell:
        if index < 0:
            raise IndexError(index)
        n_loc = len(self.locations)
        for block in self.blocks:
            size = block.size(n_loc)
            if index < size:
                # Story number varies fastest, then descriptor group, then location.
                rest, story = divmod(index, block.stories)
                loc, group = divmod(rest, len(block.groups))
                return StoryCell(
                    block.arm,
                    block.identity_category,
                    self.locations[loc],
                    block.groups[group],
                    story,
                )
            index -= size
        raise IndexError("story index beyond the grid")

    def __iter__(self) -> Iterator[StoryCell]:
        return (self.cell(i) for i in range(len(self)))
