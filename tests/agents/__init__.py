"""Tests of the agent runtime, its tools and prompt helpers."""
