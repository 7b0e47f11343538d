from django.apps import AppConfig


class EventsConfig(AppConfig):
    name = "codex.events"
    label = "events"
    verbose_name = "Event log"

    def ready(self) -> None:
        from codex.core.store import register_event_row_factory
        from codex.events.models import Event

        # Logged state changes in codex.core write their events as these rows.
        register_event_row_factory(Event)
