from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "codex.fleet"
    label = "fleet"
    verbose_name = "Fleet"

    def ready(self) -> None:
        from codex.core.workers import on_dead_worker, on_given_up_job
        from codex.fleet import heartbeats

        # What a dead worker held, and a job given up, are the fleet's to
        # record (docs/architecture.md#layers: the core names no app).
        on_dead_worker(heartbeats.release_dead_worker)
        on_given_up_job(heartbeats.give_up_job)
