"""Claude through the `anthropic` SDK: the only package that imports it.

`model_client(api_key=...)` builds the client the settings describe with the
key its caller gives; `ModelClient.send()` makes one Messages API call and
returns a plain `Response` (content blocks as dicts, stop reason, usage, cost)
or raises the one classified error. `pricing` prices the usage;
`prepare_response_parsers()` builds the SDK's response models ahead of a
worker's first call.
"""

from integrations.anthropic.client import (
    DEFAULT_MODEL,
    ModelClient,
    ModelNotConfigured,
    Response,
    classify_sdk_error,
    is_context_overflow,
    model_client,
    model_for,
)
from integrations.anthropic.parsers import prepare_response_parsers
from integrations.anthropic.pricing import Price, Usage, cost_of, price_for

__all__ = [
    "DEFAULT_MODEL",
    "ModelClient",
    "ModelNotConfigured",
    "Price",
    "Response",
    "Usage",
    "classify_sdk_error",
    "is_context_overflow",
    "cost_of",
    "model_client",
    "model_for",
    "prepare_response_parsers",
    "price_for",
]
