"""WSGI entry point (gunicorn codex.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codex.settings")
application = get_wsgi_application()
