"""What one hopgraph process holds while it runs, in one place: the process-wide caches (chat
models, embedded servers, knowledge bases, memories, GRAIL steerers), each registered here so
``close_all`` releases every one, and ``fan_out``, the one way a question's independent calls
run side by side.

Standard library only: every layer may import it.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

log = logging.getLogger(__name__)
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
R = TypeVar("R")


class ProcessCache(Generic[K, V]):
    """A named map of objects a process makes once and shares across threads."""

    def __init__(self, name: str, close: Callable[[V], object] | None = None):
        self.name = name
        self._close = close
        self._items: dict[K, V] = {}
        self._lock = threading.Lock()

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The object under ``key``, made by ``make`` on first use (once, whatever the
        threads)."""
        with self._lock:
            if key not in self._items:
                self._items[key] = make()
            return self._items[key]

    def values(self) -> list[V]:
        with self._lock:
            return list(self._items.values())

    def clear(self) -> None:
        """Forget every object, closing each (a failure is logged and the rest still close)."""
        with self._lock:
            items, self._items = list(self._items.values()), {}
        for item in items:
            if self._close is not None:
                try:
                    self._close(item)
                except Exception:  # one that fails to close must not keep the others open
                    log.exception("closing %s from %s failed", item, self.name)


_CACHES: list[ProcessCache] = []


def process_cache(name: str, close: Callable[[V], object] | None = None) -> ProcessCache[K, V]:
    """A new registered cache (at import of the module that owns its kind of object)."""
    cache: ProcessCache[K, V] = ProcessCache(name, close)
    _CACHES.append(cache)
    return cache


def caches() -> dict[str, int]:
    """How many objects each registered cache holds."""
    return {c.name: len(c.values()) for c in _CACHES}


def close_all() -> None:
    """Close and forget every cached object, the last registered first (what uses a model
    goes before the model)."""
    for cache in reversed(_CACHES):
        cache.clear()


def fan_out(fn: Callable[[V], R], items: Iterable[V], workers: int) -> list[R]:
    """``fn`` over ``items`` with at most ``workers`` in flight, results in the items' order.
    Each call runs in a copy of the caller's context, so the events it emits reach the graph's
    stream. One worker (or one item) runs them in order in this thread: against the embedded
    server, calls in the order their prompts were laid out share its KV cache."""
    items = list(items)
    if workers <= 1 or len(items) < 2:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, item) for item in items]
        return [f.result() for f in futures]
