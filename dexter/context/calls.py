"""One blocking model call with the provider retry policy, for the context stages' calls."""

from __future__ import annotations

from dexter.providers.base import ChatModel, ModelRequest, ModelResponse
from dexter.providers.call import generate
from dexter.providers.errors import ProviderError

DEFAULT_CALL_RETRIES = 2


async def call_model(
    model: ChatModel, request: ModelRequest, *, max_retries: int = DEFAULT_CALL_RETRIES
) -> ModelResponse:
    """The response of ``request`` (no streaming: nobody watches a summary being written).

    Transient failures are retried by ``generate``; anything else raises ``ProviderError``.
    """
    async for item in generate(model, request, max_retries=max_retries, stream=False):
        if isinstance(item, ModelResponse):
            return item
    raise ProviderError("unknown", "The model call ended without a reply.",
                        provider=model.provider_id, model=model.model)
