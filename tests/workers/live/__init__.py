"""Live-worker tests: real `manage.py qcluster` processes, killed on purpose."""
