"""Per-model vendor options (``[[models]] options = {...}`` in a campaign file).

Validated with pydantic before the first call; errors name the field, e.g.
``models[0].options.rpm``, and say how to fix it. Keys never appear here: only the *name*
of the environment variable that holds one.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from harness.models.providers._http_options import HttpOptions, check_http_options
from harness.models.providers._option_fields import VendorOptions as VendorOptions
from harness.vocabulary.config_errors import config_error
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.model import ModelSpec

# The schemes served by vendor SDKs (the others: sim, local, replay). Options, gates and the
# cost estimate all depend on it, so it lives here, below them.
# ``http`` (an application's own endpoint) goes through the same gates and budgets.
VENDOR_SCHEMES = frozenset({"openai", "anthropic", "google", "openai-compat", "http"})


def parse_options(spec: ModelSpec, where: str | None = None) -> VendorOptions:
    where = where or f"models[{spec.name}]"
    if "api_key" in spec.options:
        raise ConfigError(
            "a key must never be written in the campaign file (it would be logged)",
            field=f"{where}.options.api_key",
            fix="remove it; export the key in the environment and, if the variable has an "
            'unusual name, set api_key_env = "NAME"',
        )
    kind: type[VendorOptions] = VendorOptions
    if spec.scheme == "http":
        kind = HttpOptions
    try:
        options = kind.model_validate(spec.options)
    except ValidationError as exc:
        raise config_error(
            exc,
            fix="see docs/targets.md" if kind is not VendorOptions else "see docs/vendors.md",
            where=f"{where}.options",
            data=spec.options,
            known=kind.model_fields,
        ) from None
    if spec.scheme == "http":
        check_http_options(options, where)  # type: ignore[arg-type]
    return options


def read_key(env_names: tuple[str, ...], where: str, *, option: str | None) -> str:
    """The first set variable of ``env_names`` (or the one named by ``api_key_env``)."""
    names = (option,) if option else env_names
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    shown = " or ".join(names)
    raise ConfigError(
        f"no API key: environment variable {shown} is not set",
        field=f"{where}.options.api_key_env" if option else where,
        fix=f"export {names[0]}=<your key> before running (keys come from the environment only)",
    )


def check_vendor_options(config: Any) -> None:
    """Validate every vendor model's options with index-based field names, before any call."""
    for group in ("models", "judges"):
        for i, spec in enumerate(getattr(config, group)):
            if spec.scheme in VENDOR_SCHEMES:
                parse_options(spec, f"{group}[{i}]")
