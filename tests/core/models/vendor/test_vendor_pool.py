"""Every vendor backend keeps one connection per call in flight: ``max_in_flight`` sizes
the SDK's pool and its keep-alive, so rounds of concurrent calls reuse the connections of
the first round instead of opening new ones (the SDK defaults keep 100 or 20 idle)."""

from __future__ import annotations

import asyncio

import pytest
from vendor_fakes import FakeVendor
from vendor_support import VENDORS, ModelMaker

from harness.vocabulary.model import GenerationParams, Message

IN_FLIGHT = 120  # above the SDKs' default keep-alive (OpenAI/Anthropic 100, httpx2 20)


@pytest.mark.parametrize("scheme", VENDORS)
async def test_rounds_of_calls_reuse_one_connection_per_call_in_flight(
    scheme: str, vendor: FakeVendor, make_model: ModelMaker
) -> None:
    vendor.latency_s = 0.5  # the calls of a round overlap, even on a loaded machine
    model = make_model(scheme, max_in_flight=IN_FLIGHT)
    messages = [Message(role="user", content="Is it? Yes or No.")]
    for _ in range(2):
        replies = await asyncio.gather(
            *(model.complete(messages, GenerationParams(max_tokens=4)) for _ in range(IN_FLIGHT))
        )
        assert len(replies) == IN_FLIGHT
    # More calls at once than the SDKs' default keep-alive, else the test proves nothing.
    assert vendor.peak_in_flight > 100
    assert vendor.connections <= IN_FLIGHT, (
        f"{vendor.connections} connections opened for {IN_FLIGHT} calls in flight"
    )


def test_connections_are_split_over_small_pools_that_add_up_to_max_in_flight() -> None:
    # httpcore2 scans every idle connection of a pool at every request and response: no
    # pool is larger than SHARD_CONNECTIONS, and together they hold one per call in flight.
    from harness.models.providers._pool import SHARD_CONNECTIONS, ClientPool

    for max_in_flight in (1, 8, 32, 33, 256, 1000):
        pool = ClientPool(lambda n: n, max_in_flight)
        assert pool.connections <= SHARD_CONNECTIONS
        assert max_in_flight <= sum(pool.clients) < max_in_flight + len(pool.clients)
        leases = [pool.lease() for _ in range(max_in_flight)]
        for lease in leases:
            lease.__enter__()
        assert max(pool.busy) <= pool.connections  # no call ever waits for a connection
        for lease in leases:
            lease.__exit__(None, None, None)
        assert sum(pool.busy) == 0


async def test_gemini_keeps_its_sized_pool_when_aiohttp_is_installed(
    vendor: FakeVendor, make_model: ModelMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # google-genai switches to an unlimited aiohttp session whenever aiohttp can be imported,
    # unless it is given an httpx transport: the backend gives one, sized by max_in_flight.
    from google.genai import _api_client

    monkeypatch.setattr(_api_client, "has_aiohttp", True)
    model = make_model("google", max_in_flight=8)
    for client in model.clients.clients:  # type: ignore[attr-defined]
        assert not client._api_client._use_aiohttp()
    messages = [Message(role="user", content="Is it? Yes or No.")]
    replies = await asyncio.gather(
        *(model.complete(messages, GenerationParams(max_tokens=4)) for _ in range(16))
    )
    assert len(replies) == 16 and vendor.connections <= 8
