"""Optional LLM access for judgments that benefit from one (supersede judgment, topic keys).

memoryd works without an LLM; when one is configured it is asked first and the heuristic is
the fallback. Configuration comes from the environment, checked in this order:

- ``ANTHROPIC_API_KEY`` → Anthropic Messages API through the official ``anthropic`` SDK
  (imported lazily, on the first call). Model: ``MEMORYD_LLM_MODEL``, default
  ``DEFAULT_ANTHROPIC_MODEL``.
- ``MEMORYD_LLM_BASE_URL`` → any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio,
  OpenAI …): ``POST {base_url}/chat/completions`` with ``response_format=json_object``. The base
  URL includes the version prefix, as with the OpenAI SDK (``http://127.0.0.1:11434/v1``).
  ``MEMORYD_LLM_MODEL`` is required; ``MEMORYD_LLM_API_KEY`` is optional.
- otherwise no LLM (``llm_from_env`` returns None).

Every failure (network, HTTP status, missing SDK, a reply without a JSON object) is raised as
`LLMError`, so callers have one thing to catch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Protocol

from memoryd.shared.errors import MemorydError

__all__ = [
    "DEFAULT_ANTHROPIC_MODEL",
    "LLM",
    "LLMError",
    "AnthropicLLM",
    "OpenAICompatibleLLM",
    "llm_from_env",
    "parse_json_object",
]

DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"
TIMEOUT_S = 20.0


class LLMError(MemorydError):
    """The LLM is misconfigured, unreachable, or answered something unusable."""

    code = "llm_error"


class LLM(Protocol):
    name: str

    def complete_json(self, system: str, user: str, *, max_tokens: int = 400) -> dict[str, Any]: ...


def parse_json_object(text: str, who: str = "the LLM") -> dict[str, Any]:
    """The first JSON object in a reply (code fences and surrounding prose are skipped)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(value, dict):
                return value
        start = text.find("{", start + 1)
    raise LLMError(f"{who} replied with no JSON object: {text[:120]!r}")


class AnthropicLLM:
    def __init__(self, api_key: str, model: str = DEFAULT_ANTHROPIC_MODEL, timeout: float = TIMEOUT_S) -> None:
        self.name = f"anthropic:{model}"
        self.model = model
        self._api_key = api_key
        self._timeout = timeout
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import anthropic  # deferred: an optional dependency, only needed when configured
            except ImportError as exc:
                msg = "ANTHROPIC_API_KEY is set but the 'anthropic' package is not installed"
                raise LLMError(msg) from exc
            self._client = anthropic.Anthropic(api_key=self._api_key, timeout=self._timeout, max_retries=1)
        return self._client

    def complete_json(self, system: str, user: str, *, max_tokens: int = 400) -> dict[str, Any]:
        client = self._get_client()
        try:
            reply = client.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                system=system,
                messages=[{"role": "user", "content": user}],
            )
        except Exception as exc:  # the SDK's error tree (APIError, timeouts, connection errors)
            raise LLMError(f"{self.name} call failed: {type(exc).__name__}: {exc}") from exc
        text = "".join(getattr(block, "text", "") for block in reply.content)
        return parse_json_object(text, self.name)


def _http_module() -> Any:
    try:
        import httpx
    except ImportError:
        import httpx2 as httpx  # the fork that mcp depends on; same API
    return httpx


class OpenAICompatibleLLM:
    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"openai-compatible:{model}@{self.base_url}"
        self._api_key = api_key
        self._timeout = timeout

    def complete_json(self, system: str, user: str, *, max_tokens: int = 400) -> dict[str, Any]:
        httpx = _http_module()
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        url = f"{self.base_url}/chat/completions"
        try:
            response = httpx.post(url, json=body, headers=headers, timeout=self._timeout)
        except httpx.HTTPError as exc:
            raise LLMError(f"{self.name} unreachable: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise LLMError(f"{self.name} answered HTTP {response.status_code}: {response.text[:200]}")
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.name} sent no chat completion: {response.text[:200]!r}") from exc
        if not isinstance(content, str):
            raise LLMError(f"{self.name} sent a non-text message: {content!r:.120}")
        return parse_json_object(content, self.name)


def llm_from_env(env: Mapping[str, str] = os.environ) -> LLM | None:
    """The configured LLM, or None; raises `LLMError` for an incomplete configuration."""
    model = env.get("MEMORYD_LLM_MODEL", "").strip()
    if key := env.get("ANTHROPIC_API_KEY", "").strip():
        return AnthropicLLM(key, model or DEFAULT_ANTHROPIC_MODEL)
    if base_url := env.get("MEMORYD_LLM_BASE_URL", "").strip():
        if not model:
            raise LLMError(
                "MEMORYD_LLM_BASE_URL is set but MEMORYD_LLM_MODEL is not: set MEMORYD_LLM_MODEL "
                "to a model the server at that URL serves"
            )
        return OpenAICompatibleLLM(base_url, model, env.get("MEMORYD_LLM_API_KEY", "").strip() or None)
    return None
