"""Notification channels: the only code that talks to outside notification systems.

`senders.get_sender()` returns the configured channel (CODEX_NOTIFY_SENDER);
the outbox (codex.notifications) calls its `send` once per claimed row.
"""
