"""The adapters drive the real SDKs over real HTTP against the fake vendor servers."""

from __future__ import annotations

import pytest
from vendor_fakes import FakeVendor
from vendor_support import CANARY, IDENTIFIERS, VENDORS, ModelMaker, base_url

from harness.plugins.assembly import build_model
from harness.vocabulary import errors
from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.errors import ConfigError, ModelError
from harness.vocabulary.model import GenerationParams, Message, ModelSpec

MESSAGES = [
    Message(role="system", content="You are terse."),
    Message(role="user", content="Name a colour."),
    Message(role="assistant", content="Blue."),
    Message(role="user", content="Another one?"),
]
PARAMS = GenerationParams(temperature=0.3, max_tokens=40, seed=7, top_p=0.9)


@pytest.mark.parametrize("scheme", VENDORS)
async def test_reply_carries_text_usage_and_request_id(
    scheme: str, vendor: FakeVendor, make_model: ModelMaker
) -> None:
    model = make_model(scheme)
    reply = await model.complete(MESSAGES, PARAMS)
    assert reply.text == "echo: Another one?"
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    assert reply.finish_reason in {"stop", "end_turn", "STOP"}
    assert reply.request_id and ("0" in reply.request_id)
    assert reply.latency_s > 0
    if scheme == "openai-compat":
        assert reply.cost_usd is None  # no list price for a local server
    else:
        assert reply.cost_usd is not None and reply.cost_usd > 0
    assert len(vendor.requests) == 1


async def test_openai_request_shape(vendor: FakeVendor, make_model: ModelMaker) -> None:
    await make_model("openai").complete(MESSAGES, PARAMS)
    body = vendor.requests[0].body
    assert body["model"] == "gpt-4o-mini"
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["temperature"] == 0.3 and body["seed"] == 7 and body["top_p"] == 0.9
    assert body["max_completion_tokens"] == 40 and "max_tokens" not in body
    assert vendor.requests[0].headers["authorization"] == f"Bearer {CANARY['OPENAI_API_KEY']}"


async def test_compat_sends_max_tokens_and_no_openai_key(
    vendor: FakeVendor, make_model: ModelMaker
) -> None:
    await make_model("openai-compat").complete(MESSAGES, PARAMS)
    request = vendor.requests[0]
    assert request.body["max_tokens"] == 40
    assert CANARY["OPENAI_API_KEY"] not in request.headers.get("authorization", "")


async def test_anthropic_request_shape(vendor: FakeVendor, make_model: ModelMaker) -> None:
    await make_model("anthropic").complete(MESSAGES, PARAMS)
    body = vendor.requests[0].body
    assert body["system"] == "You are terse."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["max_tokens"] == 40 and body["temperature"] == 0.3 and "seed" not in body
    headers = vendor.requests[0].headers
    presented = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert presented == CANARY["ANTHROPIC_API_KEY"]


async def test_gemini_request_shape(vendor: FakeVendor, make_model: ModelMaker) -> None:
    await make_model("google").complete(MESSAGES, PARAMS)
    request = vendor.requests[0]
    assert request.path.endswith("/models/gemini-2.0-flash:generateContent")
    body = request.body
    assert body["systemInstruction"]["parts"][0]["text"] == "You are terse."
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    config = body["generationConfig"]
    assert config["maxOutputTokens"] == 40 and config["seed"] == 7 and config["temperature"] == 0.3


# Every fault, through every adapter: the exact harness error, one request (SDK retries
# off), the vendor's wait advice parsed, and no key in the message.
EXPECTED: dict[str, type[ModelError]] = {
    "429": errors.RateLimitedError,
    "429-ms": errors.RateLimitedError,
    "429-reset": errors.RateLimitedError,
    "429-date": errors.RateLimitedError,
    "500": errors.ServerError,
    "503": errors.OverloadedError,
    "529": errors.OverloadedError,
    "401": errors.AuthenticationError,
    "403": errors.PermissionDeniedError,
    "400": errors.BadRequestError,
    "404": errors.NotFoundError,
    "slow": errors.ModelTimeoutError,
    "reset": errors.ConnectionFailedError,
    "malformed": errors.MalformedResponseError,
    "empty": errors.MalformedResponseError,
    "refusal": errors.ContentRefusedError,
}
RESET_WAIT = {"openai": 1.5, "openai-compat": 1.5, "anthropic": 2.0, "google": 1.25}


@pytest.mark.parametrize("fault", sorted(EXPECTED))
@pytest.mark.parametrize("scheme", VENDORS)
async def test_every_fault_becomes_its_harness_error(
    scheme: str, fault: str, vendor: FakeVendor, make_model: ModelMaker
) -> None:
    vendor.slow_s = 1.5
    # Only the slow fault is about the timeout: the others get a generous one, else a busy
    # machine turns a 503 answered after 0.4 s into a timeout (seen in CI).
    model = make_model(scheme, timeout=0.4 if fault == "slow" else 10.0)
    vendor.queue(fault)
    with pytest.raises(ModelError) as caught:
        await model.complete(MESSAGES, PARAMS)
    err = caught.value
    assert type(err) is EXPECTED[fault], f"{fault} -> {type(err).__name__}: {err}"
    assert len(vendor.requests) == 1, "the SDK retried on its own"
    for key in CANARY.values():
        assert key not in str(err)
    if fault[:3].isdigit():
        assert err.status == int(fault[:3])
    waits = {"429": 1.0, "429-ms": 0.25, "429-reset": RESET_WAIT[scheme], "429-date": 3.0}
    if fault in waits:
        slack = 1.05 if fault == "429-date" else 0.1  # an HTTP date has whole seconds
        assert err.retry_after == pytest.approx(waits[fault], abs=slack)
    elif err.status not in (503, 529, 500):
        assert err.retry_after is None
    # The server is fine afterwards: the adapter's client is still usable.
    assert (await model.complete(MESSAGES, PARAMS)).text.startswith("echo")


@pytest.mark.parametrize("scheme", ["openai", "anthropic", "google"])
async def test_sdk_base_urls_from_environment(
    scheme: str, vendor: FakeVendor, canary_keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        "openai": "OPENAI_BASE_URL",
        "anthropic": "ANTHROPIC_BASE_URL",
        "google": "GOOGLE_GEMINI_BASE_URL",
    }[scheme]
    monkeypatch.setenv(env, base_url(scheme, vendor))
    model = build_model(ModelSpec(name=f"{scheme}:{IDENTIFIERS[scheme]}"))
    try:
        reply = await model.complete(MESSAGES, PARAMS)
    finally:
        await model.aclose()
    assert reply.text == "echo: Another one?"
    assert len(vendor.requests) == 1


@pytest.mark.parametrize(
    ("scheme", "variable"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("google", "GEMINI_API_KEY"),
    ],
)
def test_missing_key_fails_when_the_model_is_built(
    scheme: str, variable: str, canary_keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(variable)
    with pytest.raises(ConfigError) as caught:
        build_model(ModelSpec(name=f"{scheme}:{IDENTIFIERS[scheme]}"))
    assert variable in str(caught.value)
    assert caught.value.fix and variable in caught.value.fix


def test_google_key_may_come_from_google_api_key(
    canary_keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaTEST-other-0123456789abcdef")
    assert build_model(ModelSpec(name="google:gemini-2.0-flash")).name == "google:gemini-2.0-flash"


def test_api_key_env_names_another_variable(
    canary_keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = ModelSpec(name="openai:gpt-4o-mini", options={"api_key_env": "TEAM_OPENAI_KEY"})
    with pytest.raises(ConfigError) as caught:
        build_model(spec)
    assert caught.value.field == "models[openai:gpt-4o-mini].options.api_key_env"
    assert "TEAM_OPENAI_KEY" in str(caught.value)
    monkeypatch.setenv("TEAM_OPENAI_KEY", "sk-team-0123456789")
    build_model(spec)


def test_compat_needs_a_base_url(canary_keys: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as caught:
        build_model(ModelSpec(name="openai-compat:smollm2"))
    assert caught.value.field == "models[openai-compat:smollm2].options.base_url"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"rpm": -5}, "rpm"),
        ({"tpm": "lots"}, "tpm"),
        ({"price_in_per_mtok": -1}, "price_in_per_mtok"),
        ({"rmp": 10}, "rmp"),
        ({"base_url": "localhost:8080"}, "base_url"),
        ({"api_key_env": "sk-live-abcdef0123456789"}, "api_key_env"),
        ({"api_key": "sk-live-abcdef0123456789"}, "api_key"),
    ],
)
def test_bad_options_name_the_field_and_never_echo_a_key(
    options: dict[str, object], field: str, canary_keys: dict[str, str]
) -> None:
    from harness.models.providers import check_vendor_options

    class Config:
        def __init__(self) -> None:
            self.models = [
                ModelSpec(name="sim:default"),
                ModelSpec(name="openai:gpt-4o", options=options),
            ]
            self.judges: list[ModelSpec] = []

    with pytest.raises(ConfigError) as caught:
        check_vendor_options(Config())
    assert caught.value.field == f"models[1].options.{field}"
    assert caught.value.fix
    assert "abcdef0123456789" not in str(caught.value)


# --- structured answers: each vendor's own way of constraining the reply ------------------

SHAPE = AnswerShape.terms(["nurse", "pilot", "florist"])
STRUCTURED = PARAMS.model_copy(update={"answer_shape": SHAPE})


@pytest.mark.parametrize("scheme", ["openai", "openai-compat"])
async def test_openai_structured_sends_the_json_schema(
    scheme: str, vendor: FakeVendor, make_model: ModelMaker
) -> None:
    await make_model(scheme).complete(MESSAGES, STRUCTURED)
    fmt = vendor.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == SHAPE.json_schema()
    assert fmt["json_schema"]["schema"]["properties"]["terms"]["items"]["enum"] == [
        "nurse",
        "pilot",
        "florist",
    ]


@pytest.mark.parametrize("scheme", VENDORS)
async def test_free_requests_carry_no_schema(
    scheme: str, vendor: FakeVendor, make_model: ModelMaker
) -> None:
    await make_model(scheme).complete(MESSAGES, PARAMS)
    body = vendor.requests[0].body
    assert "response_format" not in body and "tools" not in body and "tool_choice" not in body
    assert "responseSchema" not in body.get("generationConfig", {})


async def test_anthropic_structured_is_a_forced_tool_call(
    vendor: FakeVendor, make_model: ModelMaker
) -> None:
    reply = await make_model("anthropic").complete(MESSAGES, STRUCTURED)
    body = vendor.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}
    assert body["tools"][0]["input_schema"] == SHAPE.json_schema()
    # The tool call's input is the reply, read by the relation like any structured answer.
    assert SHAPE.read(reply.text) == ["nurse"]
    assert SHAPE.free_text(reply.text) == "[nurse]"


async def test_gemini_structured_sends_a_response_schema(
    vendor: FakeVendor, make_model: ModelMaker
) -> None:
    score = AnswerShape(kind="score", low=1, high=5)
    await make_model("google").complete(MESSAGES, PARAMS.model_copy(update={"answer_shape": score}))
    config = vendor.requests[0].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = config["responseSchema"]
    assert schema["required"] == ["score"]
    value = schema["properties"]["score"]
    assert value["type"].lower() == "integer"
    assert (value["minimum"], value["maximum"]) == (1, 5) and "enum" not in value
    assert "additionalProperties" not in schema


async def test_compat_json_object_dialect_sends_the_schema_beside_the_type(
    vendor: FakeVendor, make_model: ModelMaker
) -> None:
    # llama-cpp-python's server takes {"type": "json_object", "schema": ...} only.
    model = make_model("openai-compat", response_format="json_object")
    await model.complete(MESSAGES, STRUCTURED)
    fmt = vendor.requests[0].body["response_format"]
    assert fmt == {"type": "json_object", "schema": SHAPE.json_schema()}


@pytest.mark.parametrize("scheme", ["openai", "openai-compat"])
@pytest.mark.parametrize("response_format", ["json_schema", "json_object"])
@pytest.mark.parametrize("shape", [None, AnswerShape.yes_no()])
async def test_openai_body_is_what_create_would_send(
    scheme: str, response_format: str, shape: AnswerShape | None, make_model: ModelMaker
) -> None:
    # The adapter posts its body through the SDK's generic `post`, skipping the typed
    # transform of `chat.completions.create`: sound only while that transform leaves every
    # body the adapter builds unchanged.
    from openai._utils import async_maybe_transform
    from openai.types.chat import completion_create_params

    from harness.models.providers import OpenAIChatModel

    model = make_model(scheme, response_format=response_format)
    assert isinstance(model, OpenAIChatModel)
    params = PARAMS.model_copy(update={"answer_shape": shape})
    body = model.request(MESSAGES, params)
    typed = completion_create_params.CompletionCreateParamsNonStreaming
    assert await async_maybe_transform(body, typed) == body
