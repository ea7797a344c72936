"""How a failed step is retried: the one retry layer of tether (the provider SDKs' own retries are off).

The session runner retries a step that failed with a retryable :class:`~tether.errors.ProviderError` (a 429, a 5xx,
a reset connection, a passed deadline), at most ``attempts`` times per step in all (the total budget: every kind of
failure counts against it). Before each retry it waits what the server asked for (``Retry-After`` /
``retry-after-ms``, carried as ``retry_after``) or, when the server said nothing, a jittered exponential backoff;
either way never longer than ``max_retry_after`` seconds, so ``Retry-After: 99999999`` cannot park a session.
"""

from __future__ import annotations

import random

from .._record import record
from ..errors import ProviderError

__all__ = ["RetryPolicy"]


@record
class RetryPolicy:
    """Retries of retryable provider errors.

    ``attempts`` tries per step in all (4: the first and three retries). The wait before retry ``n`` is the server's
    ``retry_after`` when it sent one, else ``base * 2**(n-1)`` (capped at ``cap``) scaled by a random factor in
    [0.5, 1) so that clients that failed together do not retry together; never more than ``max_retry_after``.
    """

    attempts: int = 4
    max_retry_after: float = 60.0
    base: float = 1.0
    cap: float = 30.0

    def delay(self, attempt: int, error: ProviderError) -> float:
        """Seconds to wait before retry number ``attempt`` (1 for the first retry) after ``error``."""
        if error.retry_after is not None:
            wait = max(0.0, error.retry_after)
        else:
            wait = min(self.cap, self.base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
        return min(wait, self.max_retry_after)
