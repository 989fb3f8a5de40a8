"""Workspace adaptation: fine-tune the loaded masked LM on the user's own source files, in a low-priority process,
and use the result only when it measurably fills the workspace's held-out lines better.

No torch here or in ``files``, ``holes``, ``store``: the server reads the cache and starts the adapter process
(``python -m engine.adapt``, ``engine/adapt/run.py``) without loading torch itself.
"""

from .files import SourceFile, held_out, workspace_files
from .store import AdaptRecord, cache_root, entry_dir, model_digest, read_record, remove

__all__ = ["AdaptRecord", "SourceFile", "cache_root", "entry_dir", "held_out", "model_digest", "read_record",
           "remove", "workspace_files"]
