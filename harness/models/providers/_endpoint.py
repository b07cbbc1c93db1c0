"""Where a vendor model's calls go: the effective base URL, where it came from, and what
URL shape its SDK expects.

The adapters pass this URL to their SDK explicitly, so the URL recorded in the log
(`CampaignStarted.endpoints`), printed with the cost estimate and named in errors is the
one the SDK uses, even when it came from an environment variable. Every URL leaving this
module for a log, a report or an error has its credentials removed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from harness.models.providers._options import VENDOR_SCHEMES, VendorOptions, parse_options
from harness.vocabulary.errors import strip_url_credentials
from harness.vocabulary.model import ModelSpec

# The environment variable each SDK reads when no base URL is given, and its default.
ENV_VARS = {
    "openai": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "google": "GOOGLE_GEMINI_BASE_URL",
}
DEFAULT_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "google": "https://generativelanguage.googleapis.com/",
}
URL_SHAPES = {
    "openai": "the OpenAI SDK wants the API root ending in /v1 (https://api.openai.com/v1)",
    "openai-compat": "an OpenAI-compatible server wants the root ending in /v1 "
    "(llama-server http://127.0.0.1:8080/v1, Ollama http://127.0.0.1:11434/v1)",
    "anthropic": "the Anthropic SDK wants the bare host, without /v1 (https://api.anthropic.com)",
    "google": "the Gemini SDK wants the bare host, without /v1beta "
    "(https://generativelanguage.googleapis.com)",
    "http": "an http: target wants the full URL of the application's endpoint",
}


@dataclass(frozen=True)
class Endpoint:
    """The base URL a vendor model's SDK is given. ``url`` may hold credentials; ``shown``
    never does."""

    scheme: str
    url: str
    source: str  # "options.base_url", the environment variable's name, or "SDK default"

    @property
    def shown(self) -> str:
        return strip_url_credentials(self.url)

    def describe(self) -> str:
        """The URL, where it came from, and the URL shape the SDK expects."""
        return f"base URL {self.shown} (from {self.source}); {URL_SHAPES[self.scheme]}"


def endpoint_for(spec: ModelSpec, options: VendorOptions | None = None) -> Endpoint:
    """The effective base URL of one vendor model: its ``base_url`` option, else the SDK's
    environment variable, else the SDK's default."""
    options = options if options is not None else parse_options(spec)
    url = getattr(options, "url", None)  # an http: target's endpoint (HttpOptions)
    if isinstance(url, str):
        return Endpoint(spec.scheme, url, "options.url")
    if options.base_url:
        return Endpoint(spec.scheme, options.base_url, "options.base_url")
    env = ENV_VARS.get(spec.scheme)
    value = os.environ.get(env, "").strip() if env else ""
    if env and value:
        return Endpoint(spec.scheme, value, env)
    if spec.scheme not in DEFAULT_URLS:
        return Endpoint(spec.scheme, "", "nowhere: set options.base_url")  # openai-compat
    return Endpoint(spec.scheme, DEFAULT_URLS[spec.scheme], "SDK default")


def campaign_endpoints(config: Any) -> dict[str, dict[str, str]]:
    """Model name -> ``{"url", "source"}`` of every vendor model and judge of a campaign,
    credentials removed: what `CampaignStarted.endpoints` records."""
    out: dict[str, dict[str, str]] = {}
    for group in ("models", "judges"):
        for i, spec in enumerate(getattr(config, group)):
            if spec.scheme in VENDOR_SCHEMES and spec.name not in out:
                endpoint = endpoint_for(spec, parse_options(spec, f"{group}[{i}]"))
                out[spec.name] = {"url": endpoint.shown, "source": endpoint.source}
    return out
