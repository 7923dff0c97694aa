"""Where the built guest is: the kernel, the initramfs and the manifest that
`make guest` (guest/build.sh) writes under build/guest. The manifest is written last,
so its presence means a complete guest."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_DIR = REPO_ROOT / "build" / "guest"
ENV_DIR = "OFFLAB_GUEST_DIR"
"""Set to use a guest built somewhere else (guest/build.sh DIR)."""


class GuestImageMissing(FileNotFoundError):
    """No complete guest where it was looked for; the message is one line with the fix."""


@dataclass(frozen=True)
class GuestImage:
    directory: Path
    kernel: Path
    initramfs: Path
    manifest: dict[str, str]
    """`kernel`, `vmlinuz_bytes`, … and `package NAME` → version, as build.sh wrote them."""

    @property
    def packages(self) -> dict[str, str]:
        return {k.split(" ", 1)[1]: v for k, v in self.manifest.items() if k.startswith("package ")}


def parse_manifest(text: str) -> dict[str, str]:
    """`key value` lines; a `package NAME VERSION` line is keyed "package NAME"."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        words = line.split()
        if words[0] == "package" and len(words) == 3:
            found[f"package {words[1]}"] = words[2]
        else:
            found[words[0]] = " ".join(words[1:])
    return found


def find_image(directory: str | Path | None = None) -> GuestImage:
    where = Path(directory or os.environ.get(ENV_DIR) or DEFAULT_DIR)
    manifest = where / "manifest.txt"
    kernel, initramfs = where / "vmlinuz", where / "initramfs.gz"
    for path in (manifest, kernel, initramfs):
        if not path.is_file():
            raise GuestImageMissing(f"no guest at {where} ({path.name} missing); build it with `make guest`")
    return GuestImage(where, kernel, initramfs, parse_manifest(manifest.read_text()))
