"""Per-process snapshots of users' items on disk: a cold first search reads one file, not Chroma.

`Snapshots` keeps, in one folder of this process (by default beside the embedded Chroma
folder), one file per user: the live items' columns as `UserItems.columns` gives them (ids,
texts and metadata as UTF-8 blobs, float32 vectors, times, scope and exchange codes,
the BM25 index state as flat arrays), and the user's version (`memory.semantic.versions`) they
are current for, as one uncompressed `.npz` read with `allow_pickle=False`. A snapshot is only a
faster way to read what Chroma holds, never a source of truth: `memory.semantic` uses it as it
is only when the user's version record in Chroma still holds the version kept; otherwise it checks it against the ids
Chroma has for that user now, dropping the rows Chroma no longer has and fetching only the
ones missing (items never change once stored, so the ids say everything). So a stale
snapshot is never served: an add or forget made by any process since it was written is
honoured.

Rules:
- A file is written whole to a temporary file in the folder, fsynced, then renamed over the
  old one (`os.replace`), so a crash part-way leaves the old snapshot (or none) and a stray
  `.tmp` file, which the next `Snapshots` on the folder removes. A file that cannot be read
  (truncated, of another format, of another user or embedding model, written by another
  version of the code that decides what is indexed) is ignored and removed.
- Forgetting wins: `drop(user_id)` removes the user's file and bumps the user's generation;
  a save prepared under an older generation is discarded instead of renamed, so a snapshot
  being written while the user forgets never brings the forgotten items back to disk.
- Files are named by a hash of the user id (no user text in a path) and created 0600 in a
  0700 folder.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np

from memory.semantic import keyword_index, ranking, user_items, validation
from memory.semantic.user_items import UserItems

__all__ = ["Snapshots", "write_npz"]

log = logging.getLogger(__name__)

SUFFIX = ".npz"
WRITE_BYTES = 1 << 20  # bytes of an array written at a time


def _code_version() -> str:
    """A hash of the modules that decide what a snapshot holds (tokenizer, indexed text,
    columns, this format): a snapshot of other code is not restored."""
    digest = hashlib.sha256()
    for module in (ranking, keyword_index, user_items, validation):
        digest.update(Path(str(module.__file__)).read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()


CODE_VERSION = _code_version()


def write_npz(out: BinaryIO, arrays: Mapping[str, np.ndarray]) -> None:
    """Write `arrays` as `np.savez(out, **arrays)` does (an uncompressed zip of `.npy` files,
    read back by `np.load`), without its copies; a Fortran-ordered array is stored in C order,
    and an array of Python objects is refused (ValueError).

    Why not `np.savez` itself: it writes each array through `tobytes()` of 16 MiB chunks, each a
    copy into fresh pages made holding the GIL, which kept the event loop waiting while a worker saved a heavy user
    (docs/decisions/0013-snapshots.md). Here each array's bytes go to the file straight from its memory, `WRITE_BYTES`
    at a time; zipfile's CRC and the file's write let the GIL go."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, value in arrays.items():
            if value.dtype.hasobject:
                raise ValueError(f"{name}: an array of Python objects has no place in a snapshot")
            array = value if value.flags.c_contiguous else np.ascontiguousarray(value)
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array_header_1_0(member, np.lib.format.header_data_from_array_1_0(array))
                data = array.reshape(-1).view(np.uint8)
                for start in range(0, len(data), WRITE_BYTES):
                    member.write(memoryview(data[start:start + WRITE_BYTES]))


class Snapshots:
    """One folder of per-user snapshots for one collection and one embedding model (thread-safe)."""

    def __init__(self, folder: str | os.PathLike[str], *, embedder: str) -> None:
        self.folder = Path(folder)
        self.embedder = embedder
        self._lock = threading.Lock()
        self._generations: dict[str, int] = {}
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for stray in self.folder.glob("*.tmp"):
            stray.unlink(missing_ok=True)

    def path(self, user_id: str) -> Path:
        return self.folder / (hashlib.sha256(user_id.encode()).hexdigest()[:40] + SUFFIX)

    def generation(self, user_id: str) -> int:
        """Give this to `save`: a `drop` after this call makes that save a no-op."""
        with self._lock:
            return self._generations.get(user_id, 0)

    def drop(self, user_id: str) -> None:
        """Remove the user's snapshot, and refuse saves prepared before now."""
        with self._lock:
            self._generations[user_id] = self._generations.get(user_id, 0) + 1
            self.path(user_id).unlink(missing_ok=True)

    def save(self, user_id: str, columns: dict[str, np.ndarray], version: str | None, generation: int) -> bool:
        """Write the user's live items (as `UserItems.columns` gives them) with the version they
        are current for (`memory.semantic.versions`; None: unknown); False when a `drop` came
        after `generation` was taken (nothing is written then)."""
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                write_npz(out, {"code": np.array(CODE_VERSION), "user": np.array(user_id),
                                "embedder": np.array(self.embedder), "version": np.array(version or ""),
                                **{f"c_{name}": value for name, value in columns.items()}})
                out.flush()
                os.fsync(out.fileno())
            with self._lock:
                if self._generations.get(user_id, 0) != generation:
                    return False
                os.replace(tmp, self.path(user_id))
                return True
        finally:
            Path(tmp).unlink(missing_ok=True)

    def load(self, user_id: str) -> tuple[UserItems, str | None] | None:
        """The user's snapshot as UserItems and the store version kept with it (None: unknown),
        or None when there is none or it cannot be used (then it is removed)."""
        path = self.path(user_id)
        try:
            with np.load(path, allow_pickle=False) as data:
                if (str(data["code"]) != CODE_VERSION or str(data["user"]) != user_id
                        or str(data["embedder"]) != self.embedder):
                    raise ValueError("written by other code, or for another user or model")
                kept = str(data["version"]) or None
                columns = {name[2:]: data[name] for name in data.files if name.startswith("c_")}
            return UserItems.from_columns(columns), kept
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            log.warning("semantic memory: snapshot %s not used (%s: %s); removed", path.name, type(exc).__name__, exc)
            path.unlink(missing_ok=True)
            return None
