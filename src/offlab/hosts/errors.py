"""The error every part of `hosts` raises, at the bottom of the wing so that the modules
`Host` builds on (batch.py) raise it without importing `Host`."""


class HostError(Exception):
    """A host that cannot do what was asked; the message names the host and the fix."""
