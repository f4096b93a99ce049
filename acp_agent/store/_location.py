"""Which store the agent uses: a URL from the command line, the environment or the config file.

    --store URL        (serve, doctor; `sessions` and `exec` pass it on)
    ACP_AGENT_STORE    the environment's
    [store] url        in config.toml
    (none)             the SQLite file in the data directory: the default

The first one given wins. A URL is `postgresql://user@host:port/dbname?...`
(or `postgres://`, libpq's own form: every libpq parameter works, a password
is better kept in `~/.pgpass` or `PGPASSWORD` than in the URL), or
`sqlite:PATH` for an SQLite file elsewhere than the default. The lease timeout
of a PostgreSQL store is `ACP_AGENT_STORE_LEASE_TIMEOUT_S` or
`[store] lease_timeout_s` (default 30 s).

Nothing here imports a driver: choosing the store is cheap, and psycopg loads
only when a PostgreSQL store is opened. A URL is shown with its credentials
replaced (`StoreLocation.shown`), never as given.
"""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import attrs

from acp_agent.store._sqlite_file import default_database_path
from acp_agent.url_credentials import redact_url_credentials
from acp_agent.values import Value

if TYPE_CHECKING:
    from acp_agent.core import Store

__all__ = (
    "LEASE_TIMEOUT_ENV",
    "STORE_ENV",
    "StoreLocation",
    "StoreUrlInvalid",
    "open_store",
    "parse_store_url",
    "redact_store_url",
    "store_location",
)

logger = logging.getLogger(__name__)

#: The environment variable naming the store.
STORE_ENV: Final = "ACP_AGENT_STORE"
#: The environment variable giving a PostgreSQL store's lease timeout, in seconds.
LEASE_TIMEOUT_ENV: Final = "ACP_AGENT_STORE_LEASE_TIMEOUT_S"

_POSTGRES_SCHEMES: Final = ("postgresql://", "postgres://")
_SQLITE_SCHEME: Final = "sqlite:"
#: libpq takes a password as a URL parameter too (`?password=...`).
_PASSWORD_PARAMETER: Final = re.compile(r"([?&]password=)[^&\s]*", re.IGNORECASE)


class StoreUrlInvalid(ValueError):
    """A store URL this acp-agent cannot use; the message says what it takes."""


@attrs.frozen
class StoreLocation(Value):
    """Where the sessions are kept, and how it was chosen."""

    kind: Literal["sqlite", "postgresql"]
    #: The SQLite file's path, or the PostgreSQL URL as given (credentials included: never
    #: shown; see `shown`).
    target: str = attrs.field(repr=False)
    #: Where the choice came from: "--store", "ACP_AGENT_STORE", the config file, "default".
    source: str = "default"
    #: A PostgreSQL store's lease timeout (None: the store's default).
    lease_timeout_s: float | None = None

    @property
    def shown(self) -> str:
        """The location as a person may read it (a URL's credentials as `***`)."""
        return redact_store_url(self.target)

    @property
    def path(self) -> Path:
        """The SQLite file (only for `kind == "sqlite"`)."""
        assert self.kind == "sqlite"
        return Path(self.target)


def redact_store_url(text: str) -> str:
    """`text` with every URL's userinfo, and a `password=` parameter, as `***`."""
    return _PASSWORD_PARAMETER.sub(r"\g<1>***", redact_url_credentials(text))


def parse_store_url(
    text: str, *, source: str = "--store", base: Path | None = None
) -> StoreLocation:
    """The location a store URL names; `StoreUrlInvalid` if it names none we know."""
    value = text.strip()
    if value.startswith(_POSTGRES_SCHEMES):
        return StoreLocation("postgresql", value, source)
    if value.startswith(_SQLITE_SCHEME):
        rest = value[len(_SQLITE_SCHEME) :]
        if rest.startswith("//"):  # sqlite:///abs/path, as SQLAlchemy writes it
            rest = rest[2:]
        if not rest:
            raise StoreUrlInvalid(f"{source}: sqlite: needs a file path (sqlite:PATH)")
        path = Path(rest).expanduser()
        if not path.is_absolute():
            path = (base or Path.cwd()) / path
        return StoreLocation("sqlite", str(path), source)
    raise StoreUrlInvalid(
        f"{source}: {redact_store_url(value)!r} is not a store URL "
        "(postgresql://user@host/dbname, or sqlite:PATH)"
    )


def store_location(
    *,
    flag: str | None,
    env: Mapping[str, str],
    config_file: Path | None,
    data_dir: Path,
) -> StoreLocation:
    """The store to use: `flag`, else `ACP_AGENT_STORE`, else `[store] url`, else the default
    SQLite file in `data_dir`. `StoreUrlInvalid` for a URL (or config) it cannot use."""
    table = _store_table(config_file)
    timeout = _lease_timeout(env, table, config_file)
    configured = table.get("url")
    if flag:
        chosen = parse_store_url(flag, source="--store")
    elif env.get(STORE_ENV):
        chosen = parse_store_url(env[STORE_ENV], source=STORE_ENV)
    elif isinstance(configured, str) and configured:
        where = f"{config_file} [store] url"
        base = None if config_file is None else config_file.parent
        chosen = parse_store_url(configured, source=where, base=base)
    else:
        return StoreLocation("sqlite", str(default_database_path(data_dir)))
    return attrs.evolve(chosen, lease_timeout_s=timeout) if chosen.kind == "postgresql" else chosen


async def open_store(location: StoreLocation) -> Store:
    """Open the store at `location` (PostgreSQL's module and driver load only here)."""
    if location.kind == "postgresql":
        from acp_agent.store._postgres import PostgresStore

        if location.lease_timeout_s is None:
            return await PostgresStore.open(location.target)
        return await PostgresStore.open(location.target, lease_timeout_s=location.lease_timeout_s)
    from acp_agent.store._sqlite import SqliteStore

    return await SqliteStore.open(location.path)


def _store_table(config_file: Path | None) -> Mapping[str, object]:
    if config_file is None or not config_file.is_file():
        return {}
    try:
        document = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        # The models' loader reports an unreadable file; the store keeps its default.
        logger.warning("%s could not be read for [store]: %s", config_file, exc)
        return {}
    table = document.get("store", {})
    if not isinstance(table, Mapping):
        raise StoreUrlInvalid(f"{config_file}: store must be a table ([store] url = ...)")
    unknown = sorted(set(table) - {"url", "lease_timeout_s"})
    if unknown:
        raise StoreUrlInvalid(
            f"{config_file}: [store] has an unknown key {unknown[0]!r} "
            "(allowed: lease_timeout_s, url)"
        )
    return table


def _lease_timeout(
    env: Mapping[str, str], table: Mapping[str, object], config_file: Path | None
) -> float | None:
    given: object = env.get(LEASE_TIMEOUT_ENV) or table.get("lease_timeout_s")
    where = LEASE_TIMEOUT_ENV if env.get(LEASE_TIMEOUT_ENV) else f"{config_file} [store]"
    if given is None:
        return None
    try:
        value = float(given)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = -1.0
    if isinstance(given, bool) or not value > 0:
        raise StoreUrlInvalid(f"{where}: the lease timeout must be a positive number of seconds")
    return value
