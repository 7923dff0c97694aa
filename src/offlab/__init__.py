"""offlab: the network offload lab."""

__version__ = "0.1.0"
