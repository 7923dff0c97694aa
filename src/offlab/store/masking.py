"""No password in anything offlab shows or records: store URLs rendered by SQLAlchemy with
the password hidden, in a command line as in a message.

A command line is recorded in the shared database and printed in every report and
export, so each argument that is a URL (``--store URL``, ``--store=URL``, ``--to URL``)
is masked before it is stored, and again when a stored one is read (runs recorded by an
offlab that did not mask yet).
"""

from __future__ import annotations

import shlex
from typing import Sequence

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

MASK = "***"
_SECRET_QUERY_KEYS = ("password", "passfile_password")


def mask_url(text: str) -> str:
    """A URL as SQLAlchemy renders it with the password hidden (in the userinfo and in a
    ``password=`` query argument); text that is not a URL comes back as it is, and a
    URL-like text SQLAlchemy cannot parse keeps only its scheme."""
    if "://" not in text:
        return text
    try:
        url = make_url(text)
    except (ArgumentError, ValueError):
        return text.split("://", 1)[0] + "://" + MASK
    hidden = {key: MASK for key in _SECRET_QUERY_KEYS if key in url.query}
    if hidden:
        url = url.update_query_dict(hidden)
    return url.render_as_string(hide_password=True)


def _mask_argument(argument: str) -> str:
    if argument.startswith("-") and "=" in argument:  # --store=URL
        flag, _, value = argument.partition("=")
        return f"{flag}={mask_url(value)}"
    return mask_url(argument)


def mask_argv(argv: Sequence[str]) -> str:
    """A process's arguments as one shell-quoted line, every URL in it masked."""
    return shlex.join(_mask_argument(a) for a in argv)


def mask_command_line(line: str) -> str:
    """A recorded command line with every URL in it masked (a line shlex cannot split is
    masked word by word)."""
    try:
        return mask_argv(shlex.split(line))
    except ValueError:
        return " ".join(_mask_argument(word) for word in line.split())


def without_password(url: URL) -> URL:
    return URL.create(url.drivername, url.username, None, url.host, url.port, url.database, url.query)


def password_to_environment(argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Arguments to hand to child processes (a campaign's pairs) without the store's
    password, and the environment that carries it instead (libpq's PGPASSWORD): a
    process's arguments are readable by every user of the machine, its environment only
    by its owner. A second, different password stays where it is (masked when recorded)."""
    out, env = [], {}
    for argument in argv:
        flag, eq, value = argument.partition("=") if argument.startswith("-") else ("", "", argument)
        try:
            url = make_url(value) if "://" in value else None
        except (ArgumentError, ValueError):
            url = None
        if url is None or url.password is None or env.get("PGPASSWORD", url.password) != url.password:
            out.append(argument)
            continue
        env["PGPASSWORD"] = url.password
        out.append(flag + eq + without_password(url).render_as_string(hide_password=False))
    return out, env
