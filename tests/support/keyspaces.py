"""Scratch keyspaces on the shared Cassandra: a name of their own (a prefix and a random
suffix, so tests and reruns against a kept stack never collide), the project's schema when
asked, and ``DROP KEYSPACE`` when the context ends, whatever the test did::

    with scratch_keyspace(cassandra_session, "storage_test") as keyspace:
        ...  # migrated: the results tables exist

    with scratch_repository("aggt") as repo:  # Repository.connect creates the schema
        ...
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

__all__ = ["keyspace_name", "scratch_keyspace", "scratch_repository"]


def keyspace_name(prefix: str) -> str:
    """A keyspace name no other test or run uses (Cassandra names: letters, digits, ``_``)."""
    return f"{prefix.replace('-', '_')}_{uuid.uuid4().hex[:10]}"


@contextlib.contextmanager
def scratch_keyspace(
    session: Any, prefix: str, *, migrated: bool = True, alerts: bool = False
) -> Iterator[str]:
    """A keyspace of this test's own, with the results schema (``migrated``) and the alert
    tables (``alerts``); dropped at the end. Unmigrated, it is only a name to be created."""
    from storage.schema import migrate

    keyspace = keyspace_name(prefix)
    try:
        if migrated or alerts:
            migrate(session, keyspace, retention_days=30)
        if alerts:
            from storage.alerts import migrate_alerts

            migrate_alerts(session, keyspace)
        yield keyspace
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")


@contextlib.contextmanager
def scratch_repository(prefix: str, **storage: Any) -> Iterator[Any]:
    """A Repository connected (``StorageSettings`` from the environment, ``storage`` over it)
    to a new keyspace, which it creates; the keyspace is dropped and the cluster closed at
    the end. A failed drop (Cassandra already gone) does not hide the test's own error."""
    from storage.repository import Repository
    from storage.settings import StorageSettings

    keyspace = keyspace_name(prefix)
    settings = StorageSettings.model_validate({**storage, "keyspace": keyspace})
    repo = Repository.connect(settings)
    try:
        yield repo
    finally:
        with contextlib.suppress(Exception):
            repo.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        repo.close()
