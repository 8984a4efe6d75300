"""execstore: the durable store for statechart, workflow and rule engines, in Rust.

- ``execstore.harel``: a drop-in store for harel 0.9 (``SqliteStore``, ``PostgresStore`` and
  their async twins), on harel's own tables.
- ``execstore.reflexr``: a drop-in storage for reflexr 0.1.1 (``MemoryStorage``,
  ``SqliteStorage``, ``PostgresStorage``), on reflexr's own tables.

Errors are ``execstore.StoreError`` subclasses, one per kind (``code`` says which); the engine
layers raise the engines' own exceptions where the engines name one.
"""

from execstore._core import (
    AlreadyExistsError,
    BackendError,
    ConflictError,
    CorruptError,
    InvalidInputError,
    NotFoundError,
    StoreError,
    __version__,
)

__all__ = [
    "AlreadyExistsError",
    "BackendError",
    "ConflictError",
    "CorruptError",
    "InvalidInputError",
    "NotFoundError",
    "StoreError",
    "__version__",
]
