"""Concrete problems; importing this registers them."""

from problems import algorithmic  # noqa: F401
