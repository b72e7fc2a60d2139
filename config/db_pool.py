"""When the server's connection pool (settings.DB_POOL_SIZE) has no connection free within ``DB_POOL_TIMEOUT``
seconds, the request is answered 503 with ``Retry-After`` (the recorder and API clients retry 5xx), not 500."""

from django.conf import settings
from django.db import OperationalError

RETRY_AFTER = 5  # seconds
CODE = "busy"


def pool_exhausted(error: BaseException) -> bool:
    """Django's OperationalError for psycopg_pool's PoolTimeout (no connection came free in time)."""
    from psycopg_pool import PoolTimeout  # a pinned requirement; imported here, where a pool may be in use

    return isinstance(error, OperationalError) and isinstance(error.__cause__, PoolTimeout)


def busy_detail() -> str:
    seconds = settings.DATABASES["default"].get("OPTIONS", {}).get("pool", {}).get("timeout")
    return f"the server is busy: no database connection came free within {seconds} s (DB_POOL_TIMEOUT); retry"
