"""Where the lab finds the project's own binaries (offlab-fwd, offlab-udpload): the
file an environment variable names, else the workspace's release build, else PATH."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

WORKSPACE_RELEASE = Path(__file__).resolve().parents[2] / "target" / "release"


def find(name: str, env_var: str, workspace: Path, error: type[Exception]) -> Path:
    """`$env_var` (which must be an executable file), else `workspace` if it exists, else
    `name` on PATH; `error` with one line saying where it looked and how to build it."""
    named = os.environ.get(env_var)
    if named:
        path = Path(named)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise error(f"${env_var}={named} is not an executable file")
        return path
    if workspace.is_file():
        return workspace
    found = shutil.which(name)
    if found:
        return Path(found)
    raise error(f"{name} not found (looked at ${env_var}, {workspace} and PATH); build it with `make build`")
