"""Fixtures: fake vendor servers on 127.0.0.1, canary keys, and model builders."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from vendor_fakes import FakeVendor
from vendor_support import CANARY, CLEARED_ENV, IDENTIFIERS, ModelMaker, base_url

from harness.models.providers import VendorModel
from harness.plugins.assembly import build_model
from harness.vocabulary.model import ModelSpec


@pytest.fixture
def canary_keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name in CLEARED_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in CANARY.items():
        monkeypatch.setenv(name, value)
    return dict(CANARY)


@pytest.fixture
def vendor() -> Iterator[FakeVendor]:
    server = FakeVendor().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def make_model(vendor: FakeVendor, canary_keys: dict[str, str]) -> AsyncIterator[ModelMaker]:
    built: list[VendorModel] = []

    def make(scheme: str, *, max_in_flight: int = 8, **options: Any) -> VendorModel:
        options.setdefault("base_url", base_url(scheme, vendor))
        spec = ModelSpec(
            name=f"{scheme}:{IDENTIFIERS[scheme]}", options=options, max_in_flight=max_in_flight
        )
        model = build_model(spec)
        assert isinstance(model, VendorModel)
        built.append(model)
        return model

    yield make
    for model in built:
        await model.aclose()
