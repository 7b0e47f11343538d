"""Claude through the `anthropic` SDK: the only package that imports it.

`model_client()` builds the configured client; `ModelClient.send()` makes one
Messages API call and returns a plain `Response` (content blocks as dicts,
stop reason, usage, cost) or raises the one classified error.
"""

from integrations.anthropic.client import (
    DEFAULT_MODEL,
    ModelClient,
    ModelNotConfigured,
    Price,
    Response,
    Usage,
    classify_sdk_error,
    cost_of,
    model_client,
    model_for,
    price_for,
)

__all__ = [
    "DEFAULT_MODEL",
    "ModelClient",
    "ModelNotConfigured",
    "Price",
    "Response",
    "Usage",
    "classify_sdk_error",
    "cost_of",
    "model_client",
    "model_for",
    "price_for",
]
