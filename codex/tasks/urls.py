"""Pages for team members (filled in by the web pages work)."""

urlpatterns: list = []
