"""Shared test helpers (imported by tests, not by conftest magic)."""
