from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "codex.notifications"
    label = "notifications"
