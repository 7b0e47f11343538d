"""Fixtures for notification tests: a logged-in operator."""

from __future__ import annotations
