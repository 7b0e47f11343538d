"""Tests of the Claude client (integrations/anthropic)."""
