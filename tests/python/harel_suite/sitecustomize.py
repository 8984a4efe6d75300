"""In a process harel's tests start (a worker), execstore's stores in place of harel's SQLite
ones, as in the test process (see swap.py)."""

import os

if os.environ.get("EXECSTORE_HAREL_SWAP"):
    import swapping

    swapping.swap()
