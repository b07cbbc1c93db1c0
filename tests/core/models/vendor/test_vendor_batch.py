"""The vendors' batch clients (harness.models.providers._*_batch) through their official
SDKs, over real HTTP against a fake that speaks each batch protocol (batch_fakes.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_fakes import FakeBatchVendor
from vendor_fakes import FakeVendor
from vendor_support import CANARY, IDENTIFIERS, spec_for

import harness.builtins  # noqa: F401  (registers the vendors' batch clients, as a run does)
from harness.models.batch import BatchClient, BatchRequest, BatchResult, batch_client_for
from harness.models.providers import VendorModel, batch_price_for, list_price
from harness.plugins.assembly import build_model
from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ContentRefusedError,
    ModelError,
    OverloadedError,
    RateLimitedError,
    ServerError,
)
from harness.vocabulary.model import GenerationParams, Message, ModelSpec

BATCH_VENDORS = ("openai", "anthropic", "google")


@pytest.fixture
def fake() -> Iterator[FakeBatchVendor]:
    server = FakeBatchVendor(polls=3).start()
    try:
        yield server
    finally:
        server.stop()


def spec(scheme: str, fake: FakeBatchVendor, **options: Any) -> ModelSpec:
    options.setdefault("base_url", fake.url + ("/v1" if scheme == "openai" else ""))
    return ModelSpec(name=f"{scheme}:{IDENTIFIERS[scheme]}", options=options)


@pytest.fixture
async def clients(
    fake: FakeBatchVendor, canary_keys: dict[str, str]
) -> AsyncIterator[dict[str, BatchClient]]:
    built = {scheme: batch_client_for(spec(scheme, fake)) for scheme in BATCH_VENDORS}
    yield built
    for client in built.values():
        await client.aclose()  # type: ignore[attr-defined]


def wave(n: int, prefix: str = "req") -> list[BatchRequest]:
    return [
        BatchRequest(
            custom_id=f"{prefix}_{i:03d}",
            messages=(
                Message(role="system", content="Answer briefly."),
                Message(role="user", content=f"question number {i}"),
            ),
            params=GenerationParams(temperature=0.0, max_tokens=50),
        )
        for i in range(n)
    ]


async def run_to_end(client: BatchClient, requests: list[BatchRequest], tag: str) -> str:
    file_id = await client.upload(requests)
    batch_id = await client.create(requests, file_id, tag)
    states = []
    for _ in range(10):
        status = await client.status(batch_id)
        states.append(status.vendor_state)
        if status.state != "pending":
            break
    assert status.state != "pending", states
    return batch_id


def by_id(results: list[BatchResult]) -> dict[str, BatchResult]:
    out = {r.custom_id: r for r in results}
    assert len(out) == len(results), "a custom_id came back twice"
    return out


@pytest.mark.parametrize("scheme", BATCH_VENDORS)
async def test_full_cycle_gives_every_reply_at_the_batch_price(
    scheme: str, fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    client = clients[scheme]
    requests = wave(6)
    batch_id = await run_to_end(client, requests, f"wave-{scheme}-1")
    status = await client.status(batch_id)
    assert (status.state, status.total, status.completed, status.failed) == ("ended", 6, 6, 0)
    results = by_id(await client.results(batch_id))
    assert sorted(results) == [r.custom_id for r in requests]
    for i, request in enumerate(requests):
        result = results[request.custom_id]
        assert result.error is None and result.reply is not None
        assert result.reply.text == f"echo: question number {i}"
    # What the fake billed, at half the list price, is what the replies cost.
    price = list_price(scheme, IDENTIFIERS[scheme])
    assert price is not None
    billed = (fake.input_tokens * price.in_per_mtok + fake.output_tokens * price.out_per_mtok) / 2e6
    cost = sum(r.reply.cost_usd or 0.0 for r in results.values() if r.reply is not None)
    assert cost == pytest.approx(billed, rel=1e-9) and cost > 0
    assert fake.stats()["billed_requests"] == 6
    assert all(n == 1 for n in fake.billed.values())


@pytest.mark.parametrize("scheme", BATCH_VENDORS)
async def test_requests_go_as_a_direct_call_would_send_them(
    scheme: str, fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    await clients[scheme].create(wave(1), await clients[scheme].upload(wave(1)), "t")
    (batch,) = fake.batches.values()
    ((custom_id, body),) = batch.requests
    assert custom_id == "req_000"
    text = str(body)
    assert "question number 0" in text and "Answer briefly." in text
    if scheme == "openai":
        assert body["model"] == IDENTIFIERS["openai"] and body["max_completion_tokens"] == 50
    elif scheme == "anthropic":
        assert body["system"] == "Answer briefly." and body["temperature"] == 0.0
    else:
        assert body["generationConfig"]["maxOutputTokens"] == 50
        assert body["systemInstruction"]["parts"][0]["text"] == "Answer briefly."


FATES = {0: "400", 1: "429", 2: "500", 3: "refusal", 4: "ok", 5: "529"}


@pytest.mark.parametrize("scheme", BATCH_VENDORS)
async def test_per_request_errors_are_the_errors_a_direct_call_raises(
    scheme: str, fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    fake.chooser = lambda _custom_id, index: FATES[index]
    client = clients[scheme]
    batch_id = await run_to_end(client, wave(6), "mixed")
    results = by_id(await client.results(batch_id))
    assert len(results) == 6
    errors = {cid: r.error for cid, r in results.items()}
    assert isinstance(errors["req_000"], BadRequestError) and not errors["req_000"].retryable
    assert isinstance(errors["req_001"], RateLimitedError) and errors["req_001"].retryable
    assert isinstance(errors["req_002"], ServerError) and errors["req_002"].retryable
    assert isinstance(errors["req_003"], ContentRefusedError)
    assert errors["req_004"] is None and results["req_004"].reply is not None
    assert isinstance(errors["req_005"], OverloadedError) and errors["req_005"].retryable
    # Only answered requests are billed (a refusal is an answer, billed like one).
    assert sorted(fake.billed) == ["req_003", "req_004"]
    status = await client.status(batch_id)
    assert status.state == "ended"
    if scheme != "google":  # the Developer API has no separate counts for refusals
        assert (status.completed, status.failed) == (2, 4)


@pytest.mark.parametrize("scheme", BATCH_VENDORS)
async def test_an_expired_batch_keeps_the_results_it_has(
    scheme: str, fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    fake.chooser = lambda _custom_id, index: "expire" if index % 2 else "ok"
    client = clients[scheme]
    batch_id = await run_to_end(client, wave(6), "late")
    assert (await client.status(batch_id)).state == "expired"
    results = by_id(await client.results(batch_id))
    # The unrun requests have no result (the engine sends them again); none is an error.
    assert sorted(results) == ["req_000", "req_002", "req_004"]
    assert all(r.reply is not None for r in results.values())
    assert sorted(fake.billed) == ["req_000", "req_002", "req_004"]


@pytest.mark.parametrize("scheme", ["openai", "google"])
async def test_a_failed_batch_has_no_results(
    scheme: str, fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    fake.fail_batch = True
    client = clients[scheme]
    batch_id = await run_to_end(client, wave(3), "broken")
    assert (await client.status(batch_id)).state == "failed"
    assert await client.results(batch_id) == []
    assert fake.billed == {}


@pytest.mark.parametrize("scheme", ["openai", "google"])
async def test_find_re_attaches_a_batch_by_its_tag(
    scheme: str, fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    client = clients[scheme]
    ids = {}
    for n in range(5):
        requests = wave(1, prefix=f"w{n}")
        ids[f"wave-{n}"] = await client.create(requests, await client.upload(requests), f"wave-{n}")
    assert len(set(ids.values())) == 5
    for tag, batch_id in ids.items():
        assert await client.find(tag) == batch_id
    assert await client.find("wave-never-sent") is None


async def test_find_pages_through_openai_batches(
    fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    client = clients["openai"]
    first = await client.create(wave(1), None, "oldest")  # create uploads when not staged
    for n in range(120):  # more than a page of 100: the oldest is on the second page
        await client.create(wave(1, prefix=f"p{n}"), None, f"later-{n}")
    assert await client.find("oldest") == first


async def test_anthropic_cannot_find_a_batch_and_says_none(
    clients: dict[str, BatchClient],
) -> None:
    client = clients["anthropic"]
    await client.create(wave(2), None, "tagged")
    assert await client.find("tagged") is None


async def test_anthropic_rejects_a_custom_id_it_would_refuse_before_sending(
    fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    bad = [BatchRequest("has space", (Message(role="user", content="x"),), GenerationParams())]
    with pytest.raises(BadRequestError, match="custom_id"):
        await clients["anthropic"].create(bad, None, "t")
    assert fake.batches == {}


@pytest.mark.parametrize("scheme", BATCH_VENDORS)
async def test_a_bad_key_never_appears_in_the_error(
    scheme: str, fake: FakeBatchVendor, monkeypatch: pytest.MonkeyPatch,
    canary_keys: dict[str, str],
) -> None:  # fmt: skip
    name = {
        "openai": "OPENAI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY",
        "google": "GEMINI_API_KEY",
    }
    secret = f"bad-{CANARY[name[scheme]]}"
    monkeypatch.setenv(name[scheme], secret)
    client = batch_client_for(spec(scheme, fake))
    try:
        with pytest.raises(AuthenticationError) as caught:
            requests = wave(1)
            await client.create(requests, await client.upload(requests), "t")
    finally:
        await client.aclose()  # type: ignore[attr-defined]
    assert secret in fake.keys  # the fake saw it and echoed it back in its 401 body
    error: ModelError = caught.value
    assert "Incorrect API key" in str(error)  # the vendor's message is kept, the key is not
    assert secret not in str(error) and secret not in repr(error) and "***" in str(error)


def test_batch_price_is_half_the_list_price_unless_configured() -> None:
    listed = list_price("openai", "gpt-4o-mini")
    assert listed is not None
    half = batch_price_for("openai", "gpt-4o-mini", None, None)
    assert half is not None
    assert (half.in_per_mtok, half.out_per_mtok) == (
        listed.in_per_mtok / 2,
        listed.out_per_mtok / 2,
    )
    quarter = batch_price_for("anthropic", "claude-haiku-4-5", None, None, discount=0.75)
    assert quarter is not None and quarter.in_per_mtok == pytest.approx(0.25)
    explicit = batch_price_for("google", "gemini-2.0-flash", 1.0, 2.0, batch_in=0.3)
    assert explicit is not None and (explicit.in_per_mtok, explicit.out_per_mtok) == (0.3, 1.0)
    assert batch_price_for("openai", "unlisted-model", None, None) is None
    assert batch_price_for("openai", "unlisted-model", None, None, batch_in=1, batch_out=2)


async def test_configured_batch_prices_price_the_replies(
    fake: FakeBatchVendor, canary_keys: dict[str, str]
) -> None:
    client = batch_client_for(
        spec("openai", fake, batch_price_in_per_mtok=1.0, batch_price_out_per_mtok=3.0)
    )
    try:
        batch_id = await run_to_end(client, wave(3), "priced")
        results = await client.results(batch_id)
    finally:
        await client.aclose()  # type: ignore[attr-defined]
    cost = sum(r.reply.cost_usd or 0.0 for r in results if r.reply is not None)
    assert cost == pytest.approx((fake.input_tokens * 1.0 + fake.output_tokens * 3.0) / 1e6)


def test_a_scheme_without_a_batch_api_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        batch_client_for(ModelSpec(name="openai-compat:x", options={"base_url": "http://h/v1"}))
    assert "mode" in str(caught.value.field)


async def test_a_transient_fault_meets_a_request_once(
    fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    fake.transient = True
    fake.chooser = lambda _custom_id, index: "expire" if index == 0 else "500"
    client = clients["anthropic"]
    first = by_id(await client.results(await run_to_end(client, wave(2), "a")))
    assert list(first) == ["req_001"] and isinstance(first["req_001"].error, ServerError)
    again = by_id(await client.results(await run_to_end(client, wave(2), "b")))
    assert all(r.reply is not None for r in again.values()) and len(again) == 2
    assert fake.stats()["billed_twice"] == []


def test_the_fake_runs_as_a_process_for_other_processes(canary_keys: dict[str, str]) -> None:
    script = Path(__file__).with_name("batch_fakes.py")
    process = subprocess.Popen(
        [sys.executable, str(script), "--polls", "1", "--every", "2=400"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line
        url = line.split()[-1]

        async def cycle() -> list[BatchResult]:
            client = batch_client_for(
                ModelSpec(name="openai:gpt-4o-mini", options={"base_url": url + "/v1"})
            )
            try:
                return await client.results(await run_to_end(client, wave(4), "p"))
            finally:
                await client.aclose()  # type: ignore[attr-defined]

        results = asyncio.run(cycle())
        with urllib.request.urlopen(url + "/_fake/stats", timeout=10) as reply:
            stats = json.load(reply)
    finally:
        process.terminate()
        process.wait(10)
    answered = sorted(r.custom_id for r in results if r.reply is not None)
    assert len(results) == 4 and 0 < len(answered) < 4  # some custom_ids meet the 400
    assert sorted(stats["billed"]) == answered and stats["requests_sent"] == 4


SHAPE = AnswerShape.terms(["nurse", "pilot", "florist"])


@pytest.mark.parametrize("structured", [False, True])
@pytest.mark.parametrize("scheme", BATCH_VENDORS)
async def test_a_batched_reply_is_the_reply_a_direct_call_gets(
    scheme: str, structured: bool, fake: FakeBatchVendor, vendor: FakeVendor,
    clients: dict[str, BatchClient],
) -> None:  # fmt: skip
    params = GenerationParams(max_tokens=50, answer_shape=SHAPE if structured else None)
    messages = (Message(role="user", content="Which job fits best?"),)
    direct = build_model(spec_for(scheme, vendor))
    assert isinstance(direct, VendorModel)
    try:
        expected = await direct.complete(messages, params)
    finally:
        await direct.aclose()
    client = clients[scheme]
    requests = [BatchRequest("one", messages, params)]
    (result,) = await client.results(await run_to_end(client, requests, "same"))
    assert result.reply is not None
    assert result.reply.text == expected.text and result.reply.usage == expected.usage
    assert result.reply.finish_reason == expected.finish_reason
    if structured:
        # Each vendor got the schema its own way, in the batch as in the direct call.
        (batch,) = fake.batches.values()
        sent = str(batch.requests[0][1])
        assert "florist" in sent
    if scheme == "anthropic" and structured:
        assert SHAPE.read(result.reply.text) == ["nurse"]
    # Half the direct price, for the same tokens.
    assert expected.cost_usd is not None and result.reply.cost_usd is not None
    assert result.reply.cost_usd == pytest.approx(expected.cost_usd / 2)


@pytest.mark.parametrize("scheme", BATCH_VENDORS)
async def test_a_wave_past_the_vendors_limits_is_refused_before_sending(
    scheme: str, fake: FakeBatchVendor, clients: dict[str, BatchClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    client = clients[scheme]
    monkeypatch.setattr(type(client), "max_bytes", 2000)
    big = [
        BatchRequest(f"big_{i}", (Message(role="user", content="x" * 500),), GenerationParams())
        for i in range(5)
    ]
    with pytest.raises(BadRequestError, match="smaller waves"):
        await client.create(big, await client.upload(big), "too-big")
    assert fake.batches == {} and fake.files == {}
    assert (await client.create(big[:1], await client.upload(big[:1]), "fits")) in fake.batches


@pytest.mark.parametrize("scheme", BATCH_VENDORS)
async def test_the_fake_refuses_a_batch_past_its_enqueued_token_limit_as_the_vendor_does(
    scheme: str, fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    fake.enqueued_token_limit = 1000
    client = clients[scheme]
    heavy = [
        BatchRequest(
            custom_id=f"{prefix}_0",
            messages=(Message(role="user", content="x" * 2400),),  # about 600 input tokens
            params=GenerationParams(max_tokens=50),
        )
        for prefix in ("first", "second", "third")
    ]
    first = await client.create(heavy[:1], await client.upload(heavy[:1]), "first")
    # A second batch while the first is in flight takes the model past the limit.
    if scheme == "openai":  # OpenAI creates it, then fails it with token_limit_exceeded
        second = await client.create(heavy[1:2], await client.upload(heavy[1:2]), "second")
        assert (await client.status(second)).state == "failed"
    else:  # Anthropic and Gemini refuse the create call with a 429
        with pytest.raises(RateLimitedError):
            await client.create(heavy[1:2], None, "second")
    assert fake.stats()["rejected"] == 1
    # Once the first batch has ended its tokens are free again.
    while (await client.status(first)).state == "pending":
        pass
    third = await client.create(heavy[2:], await client.upload(heavy[2:]), "third")
    assert (await client.status(third)).state == "pending"
    assert fake.stats()["rejected"] == 1


async def test_batch_enqueued_tokens_is_a_positive_whole_number_or_a_config_error(
    fake: FakeBatchVendor, canary_keys: dict[str, str]
) -> None:
    limited = batch_client_for(spec("openai", fake, batch_enqueued_tokens=90_000))
    unlimited = batch_client_for(spec("google", fake))
    assert limited.enqueued_tokens == 90_000  # type: ignore[attr-defined]
    assert unlimited.enqueued_tokens is None  # type: ignore[attr-defined]
    for built in (limited, unlimited):
        await built.aclose()  # type: ignore[attr-defined]
    for bad in (0, -5, 1.5, "lots"):
        with pytest.raises(ConfigError) as refused:
            batch_client_for(spec("anthropic", fake, batch_enqueued_tokens=bad))
        assert "batch_enqueued_tokens" in str(refused.value.field) + str(refused.value)


@pytest.fixture
def gemini_file(clients: dict[str, BatchClient]) -> BatchClient:
    """Gemini's client with every wave above the inline size: through the Files API."""
    client = clients["google"]
    client.inline_bytes = 0  # type: ignore[attr-defined]
    return client


async def test_a_large_gemini_wave_goes_as_a_jsonl_file_and_its_results_come_back_in_one(
    fake: FakeBatchVendor, gemini_file: BatchClient, clients: dict[str, BatchClient]
) -> None:
    requests = wave(6)
    file_id = await gemini_file.upload(requests)
    assert file_id is not None and file_id.startswith("files/") and file_id in fake.files
    lines = [json.loads(line) for line in fake.files[file_id].decode().splitlines()]
    assert [line["key"] for line in lines] == [r.custom_id for r in requests]
    batch_id = await gemini_file.create(requests, file_id, "file-wave")
    batch = fake.batches[batch_id]
    assert batch.input_file_id == file_id and batch.tag == "file-wave"
    # Each line holds the request the inline path would have sent, byte for byte.
    inline = batch_client_for(spec("google", fake))
    try:
        await inline.create(requests, await inline.upload(requests), "inline-wave")
    finally:
        await inline.aclose()  # type: ignore[attr-defined]
    inlined = next(b for b in fake.batches.values() if b.tag == "inline-wave")
    assert batch.requests == inlined.requests
    while (await gemini_file.status(batch_id)).state == "pending":
        pass
    assert fake.batches[batch_id].output_file_id in fake.files  # a responses file, not inline
    results = by_id(await gemini_file.results(batch_id))
    assert sorted(results) == [r.custom_id for r in requests]
    for i, request in enumerate(requests):
        reply = results[request.custom_id].reply
        assert reply is not None and reply.text == f"echo: question number {i}"
        assert reply.cost_usd is not None and reply.cost_usd > 0
    assert await gemini_file.find("file-wave") == batch_id


async def test_a_gemini_file_wave_s_errors_are_a_direct_call_s_and_expiry_keeps_the_rest(
    fake: FakeBatchVendor, gemini_file: BatchClient
) -> None:
    fake.chooser = lambda _custom_id, index: FATES[index]
    batch_id = await run_to_end(gemini_file, wave(6), "mixed-file")
    errors = {cid: r.error for cid, r in by_id(await gemini_file.results(batch_id)).items()}
    assert len(errors) == 6
    assert isinstance(errors["req_000"], BadRequestError) and not errors["req_000"].retryable
    assert isinstance(errors["req_001"], RateLimitedError) and errors["req_001"].retryable
    assert isinstance(errors["req_002"], ServerError) and errors["req_002"].retryable
    assert isinstance(errors["req_003"], ContentRefusedError)
    assert errors["req_004"] is None
    assert isinstance(errors["req_005"], OverloadedError)
    assert sorted(fake.billed) == ["req_003", "req_004"]

    fake.billed.clear()
    fake.chooser = lambda _custom_id, index: "expire" if index % 2 else "ok"
    late = await run_to_end(gemini_file, wave(6, prefix="late"), "late-file")
    assert (await gemini_file.status(late)).state == "expired"
    results = by_id(await gemini_file.results(late))
    assert sorted(results) == ["late_000", "late_002", "late_004"]
    assert all(r.reply is not None for r in results.values())
    assert sorted(fake.billed) == ["late_000", "late_002", "late_004"]

    fake.fail_batch = True
    broken = await run_to_end(gemini_file, wave(2, prefix="broken"), "broken-file")
    assert (await gemini_file.status(broken)).state == "failed"
    assert await gemini_file.results(broken) == []


async def test_a_gemini_wave_past_the_file_limit_is_refused_before_uploading(
    fake: FakeBatchVendor, gemini_file: BatchClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(type(gemini_file), "max_bytes", 2000)
    big = [
        BatchRequest(f"big_{i}", (Message(role="user", content="x" * 500),), GenerationParams())
        for i in range(5)
    ]
    with pytest.raises(BadRequestError, match="smaller waves"):
        await gemini_file.upload(big)
    assert fake.files == {} and fake.batches == {}


async def finish(client: BatchClient, batch_id: str) -> None:
    while (await client.status(batch_id)).state == "pending":
        pass


async def test_anthropic_finds_a_batch_by_its_requests_and_verifies_it_by_their_ids(
    fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    import time

    from harness.models.providers._anthropic_batch import AnthropicBatchClient

    client = clients["anthropic"]
    assert isinstance(client, AnthropicBatchClient)
    queued_at = time.time()
    ours = wave(3, prefix="ours")
    ids = [r.custom_id for r in ours]
    made = await client.create(ours, None, "lost-id")  # created; its id never recorded
    # Still in progress: adopted provisionally, its id marked with the wave's ids' digest.
    found = await client.find_by_requests("lost-id", ids, queued_at, known=())
    assert found is not None and found.startswith(made + "#ids=")
    # Another wave's provisional adoption of the same batch does not hide it: digests decide.
    other = made + "#ids=" + "0" * 32
    assert await client.find_by_requests("lost-id", ids, queued_at, known=(other,)) == found
    await finish(client, found)
    assert sorted(r.custom_id for r in await client.results(found)) == ids
    # Ended: adopted only when its results hold exactly the wave's custom_ids.
    assert await client.find_by_requests("lost-id", ids, queued_at, known=()) == made
    assert await client.find_by_requests("lost-id", ids, queued_at, known=(made,)) is None
    assert await client.find_by_requests("x", [*ids[:2], "other_1"], queued_at, ()) is None
    # A batch created long before the wave was queued is never a candidate.
    assert await client.find_by_requests("lost-id", ids, queued_at + 3600, known=()) is None
    assert fake.stats()["billed_requests"] == 3


async def test_anthropic_never_ingests_a_provisional_batch_that_is_not_the_wave_s(
    fake: FakeBatchVendor, clients: dict[str, BatchClient]
) -> None:
    import time

    client = clients["anthropic"]
    queued_at = time.time()
    # Someone else's batch with as many requests, in progress: the only candidate.
    other = await client.create(wave(3, prefix="theirs"), None, "theirs")
    ids = [r.custom_id for r in wave(3, prefix="ours")]
    found = await client.find_by_requests("lost", ids, queued_at, known=())  # type: ignore[attr-defined]
    assert found is not None and found.startswith(other + "#ids=")
    await finish(client, found)
    assert await client.results(found) == []  # none of its results is ours: none ingested
    assert len(await client.results(other)) == 3  # (they are there for their owner)
    # Two candidates in progress cannot be told apart: none is adopted.
    await client.create(wave(3, prefix="a"), None, "a")
    await client.create(wave(3, prefix="b"), None, "b")
    assert await client.find_by_requests("lost", ids, queued_at, known=()) is None  # type: ignore[attr-defined]


async def test_a_gemini_batch_s_counts_are_unknown_until_its_inline_responses_come(
    fake: FakeBatchVendor, gemini_file: BatchClient
) -> None:
    requests = wave(3)
    file_batch = await gemini_file.create(requests, await gemini_file.upload(requests), "f")
    inline = batch_client_for(spec("google", fake))
    try:
        inline_batch = await inline.create(requests, await inline.upload(requests), "i")
        for client, batch_id in ((gemini_file, file_batch), (inline, inline_batch)):
            statuses = [await client.status(batch_id)]
            while statuses[-1].state == "pending":
                statuses.append(await client.status(batch_id))
            # Running, the SDK surfaces no counts: unknown, not "0 done".
            assert all(not s.counted for s in statuses[:-1])
            end = statuses[-1]
            if client is inline:  # the inline responses are in the job: counted at the end
                assert end.counted and (end.total, end.completed, end.failed) == (3, 3, 0)
            else:  # a responses file is read only with the results
                assert not end.counted
                assert len(await client.results(batch_id)) == 3
    finally:
        await inline.aclose()  # type: ignore[attr-defined]
