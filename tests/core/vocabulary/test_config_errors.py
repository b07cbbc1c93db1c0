"""One translation of pydantic errors into ConfigError: the field's path and a fix."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.vocabulary.config_errors import config_error, field_path


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    size: int = Field(default=1, ge=1)
    rate: float = Field(default=1.0, gt=0)

    @field_validator("name")
    @classmethod
    def _no_space(cls, value: str) -> str:
        if " " in value:
            raise ValueError("must not contain spaces")
        return value


class Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[Item] = Field(min_length=1)


def _error(validated: dict[str, Any], **kwargs: Any) -> Any:
    with pytest.raises(ValidationError) as caught:
        Doc.model_validate(validated)
    return config_error(caught.value, fix="see the docs", **kwargs)


def test_field_path_labels_list_entries_by_name() -> None:
    data = {"items": [{"name": "a"}, {"name": "b", "size": 0}]}
    assert field_path(("items", 1, "size"), data) == "items[1](b).size"
    assert field_path(("items", 1, "size")) == "items[1].size"
    assert field_path((0, "x")) == "0.x"


@pytest.mark.parametrize(
    ("data", "field", "fix"),
    [
        ({"items": [{"name": "a", "size": 0}]}, "f.items[0](a).size", "give a number >= 1"),
        ({"items": [{"name": "a", "rate": 0}]}, "f.items[0](a).rate", "give a positive number"),
        ({"items": [{"name": "a", "size": "x"}]}, "f.items[0](a).size", "give a whole number"),
        ({"items": []}, "f.items", "give at least one entry"),
        ({"items": [{"size": 2}]}, "f.items[0].name", "add it"),
        ({"items": [{"name": "a b"}]}, "f.items[0](a b).name", "see the docs"),
        ({"items": [{"name": "a", "colour": 1}]}, "f.items[0](a).colour", "remove it"),
    ],
)
def test_config_error_names_the_field_and_the_fix(
    data: dict[str, Any], field: str, fix: str
) -> None:
    err = _error(data, where="f", data=data, source="f.toml")
    assert err.field == field
    assert err.fix.startswith(fix)
    assert "(in f.toml)" in str(err) and field in str(err)


def test_a_misspelled_key_lists_the_known_ones_and_no_source_falls_back() -> None:
    err = _error({"items": [{"name": "a", "sise": 1}]}, known=["name", "size"])
    assert err.fix == "remove it or check its spelling (known: name, size)"
    assert err.field == "items[0].sise"
    assert "(in " not in str(err)
    only_source = _error({"items": "x"}, source="f.toml")
    assert only_source.field == "items"


def test_the_callers_fix_alone_when_asked() -> None:
    err = _error({"items": [{"name": "a", "size": 0}]}, by_type=False)
    assert err.fix == "see the docs" and err.field == "items[0].size"
