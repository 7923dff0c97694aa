"""Files offlab needs on a server (the guest's kernel and initramfs, the offlab-fwd and
offlab-udpload binaries), copied over the run's own SSH connection — nothing is
installed by hand — and kept in one directory on the server, named by content:

    /var/lib/offlab/cache/<sha256>/<name>

A file whose directory is already there with the same hash is not copied again (the
next run on that server starts at once); a copy arrives under a temporary name and is
checked by hash on the server (`sha256sum`) before it is renamed into place, so a cut
connection never leaves a half file under a valid name. `offlab restore --purge`
removes the whole directory (`purge`).

The interface (`ensure(host, path) -> remote path`, `purge(host)`) is what any part of
offlab that runs a local file on a server uses — the only one: the guests,
offlab-fwd as a router or a vhost-user backend (topology/remote_fwd.py), udpload.
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path
from typing import Protocol, Sequence

from ..proc import Completed

CACHE_DIR = "/var/lib/offlab/cache"
CHUNK = 1 << 20


class FileHost(Protocol):
    name: str

    def run(self, args: Sequence[str], *, timeout: float = ..., check: bool = ...,
            input_text: str | None = ...) -> Completed: ...

    def send_file(self, source: Path, command: Sequence[str], timeout: float = ...) -> Completed: ...


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        while chunk := data.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def cached_path(digest: str, name: str, root: str = CACHE_DIR) -> str:
    return f"{root}/{digest}/{name}"


# Receives the file on stdin under a name of its own (two copies at once — two roles on
# one machine — never mix), checks its hash, then renames it into place (atomic).
_RECEIVE = r"""
set -e
umask 022
dir=$1; name=$2; want=$3; mode=$4
mkdir -p "$dir"
part="$dir/.$name.part.$$"
cat > "$part"
got=$(sha256sum "$part" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then rm -f "$part"; echo "hash $got, expected $want" >&2; exit 3; fi
chmod "$mode" "$part"
mv "$part" "$dir/$name"
"""


def ensure(host: FileHost, source: Path, *, executable: bool = False, root: str = CACHE_DIR) -> tuple[str, bool]:
    """The path of `source` on the host, copied there first unless a file with its hash
    already is; (remote path, whether it was copied)."""
    digest = sha256(source)
    target = cached_path(digest, source.name, root)
    present = host.run(["sha256sum", target], check=False, timeout=60)
    if present.returncode == 0 and present.stdout.split()[:1] == [digest]:
        return target, False
    host.send_file(source, ["sh", "-c", _RECEIVE, "offlab-copy", f"{root}/{digest}", source.name, digest,
                            "755" if executable else "644"])
    return target, True


def purge(host: FileHost, root: str = CACHE_DIR) -> str:
    """Remove every cached file from the host; a line saying what went."""
    listing = host.run(["sh", "-c", f"du -sk {shlex.quote(root)} 2>/dev/null | cut -f1"], check=False, timeout=30)
    kib = listing.stdout.strip()
    host.run(["rm", "-rf", root], timeout=60)
    return f"{host.name}: removed {root}" + (f" ({int(kib) // 1024} MiB)" if kib.isdigit() else " (was empty)")
