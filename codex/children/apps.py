from django.apps import AppConfig


class ChildrenConfig(AppConfig):
    name = "codex.children"
    label = "children"
