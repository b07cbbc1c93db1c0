"""The HTTP connection pools of a vendor model, sized by its ``max_in_flight``.

Two costs of the SDKs' defaults at hundreds of calls in flight, both measured with
``bench/bench_http.py``:

- The SDKs keep 100 idle connections (OpenAI, Anthropic) or 20 (httpx2's default, Gemini):
  with more calls in flight, every call returning its connection past that closes it and
  the next call opens a new one. `pool_limits` keeps one connection per call the gate may
  let out, all of them alive between calls.
- httpcore2's pool checks every idle connection (a ``getpeername`` and a ``poll`` each) on
  every request and every response. A campaign's connections sit idle while their workers
  wait for commits, so one pool of 256 spent 40 % of a call's CPU in that scan. `ClientPool`
  spreads the calls over several SDK clients of at most `SHARD_CONNECTIONS` connections
  each, always leasing the least busy: as many connections in all, a short scan each.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

import httpx2

# httpx2's default closes a connection idle for 5 s; with the least busy client leased first,
# the last clients' connections wait longer than that between calls whenever fewer calls
# than max_in_flight are under way (a loaded machine, a retry pause), and were reopened.
# A connection the server has closed meanwhile is noticed before reuse (httpcore2 checks it).
KEEPALIVE_EXPIRY_S = 60.0
SHARD_CONNECTIONS = 32

Client = TypeVar("Client")


def pool_limits(connections: int) -> httpx2.Limits:
    """At most ``connections`` connections, every one of them kept alive between calls."""
    return httpx2.Limits(
        max_connections=connections,
        max_keepalive_connections=connections,
        keepalive_expiry=KEEPALIVE_EXPIRY_S,
    )


class ClientPool(Generic[Client]):
    """SDK clients sharing a model's calls; ``make(n)`` builds one with ``n`` connections.

    With at most ``max_in_flight`` calls under way (the model's gate), the least busy client
    always has a free connection: the clients' connections add up to ``max_in_flight``.
    """

    def __init__(self, make: Callable[[int], Client], max_in_flight: int) -> None:
        count = max(1, math.ceil(max_in_flight / SHARD_CONNECTIONS))
        self.connections = math.ceil(max_in_flight / count)  # per client
        self.clients: list[Client] = [make(self.connections) for _ in range(count)]
        self.busy = [0] * count

    @property
    def first(self) -> Client:
        return self.clients[0]

    @contextlib.contextmanager
    def lease(self) -> Iterator[Client]:
        """The least busy client, for one call (the first of equals: one call alone always
        goes to the first client)."""
        i = min(range(len(self.busy)), key=self.busy.__getitem__)
        self.busy[i] += 1
        try:
            yield self.clients[i]
        finally:
            self.busy[i] -= 1


def stainless_pool(
    client_cls: Callable[..., Client],
    http_client_cls: Callable[..., object],
    *,
    key: str,
    base_url: str,
    timeout: float | None,
    max_in_flight: int,
) -> ClientPool[Client]:
    """A pool of ``openai``/``anthropic`` clients (``client_cls``, with its SDK's default HTTP
    client class): the SDK's own retries off (the engine retries and logs every attempt), its
    defaults (timeouts, redirects) kept, its connections sized by ``max_in_flight``."""
    kwargs: dict[str, object] = {"api_key": key, "max_retries": 0, "base_url": base_url}
    if timeout:
        kwargs["timeout"] = timeout
    return ClientPool(
        lambda n: client_cls(**kwargs, http_client=http_client_cls(limits=pool_limits(n))),
        max_in_flight,
    )
