# Codex: web console (gunicorn, the default) or workers (`python manage.py codex_workers`).
# docker-compose.yml starts web, worker, PostgreSQL and Redis with one command;
# by hand:
#
#   docker build -t codex .
#   docker volume create codex-data
#   KEYS="-e SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))') \
#         -e CODEX_FERNET_KEYS=<python3 -c 'from cryptography.fernet import Fernet; \
#                                print(Fernet.generate_key().decode())'>"
#   docker run $KEYS -e DATABASE_URL=postgres://... -e REDIS_URL=redis://... \
#       -e ALLOWED_HOSTS=codex.example.com -v codex-data:/var/lib/codex \
#       codex python manage.py migrate                      # before the first start
#   docker run $KEYS ... -p 8000:8000 codex                  # web console + API
#   docker run $KEYS ... --security-opt seccomp=unconfined \
#       --security-opt apparmor=unconfined --security-opt systempaths=unconfined \
#       codex python manage.py codex_workers               # workers (the jail:
#                                                           # docs/containers.md)
#
# Keep the same SECRET_KEY and CODEX_FERNET_KEYS for web and workers, and keep
# them: stored secrets cannot be read without the Fernet key. It is linted
# with hadolint and checked by tests/deploy/; docs/containers.md says how it
# was built and run under compose, the demo included, from a locally made base.

# --- build stage: wheels for every dependency ---------------------------------
FROM python:3.11-slim AS build
WORKDIR /src
COPY requirements/ requirements/
# prod.txt is a lock (`make lock`): every package pinned, each file checked by its hash.
RUN pip wheel --no-cache-dir --require-hashes --wheel-dir /wheels -r requirements/prod.txt

# --- runtime: slim, non-root ----------------------------------------------------
FROM python:3.11-slim
# CODEX_IN_CONTAINER: the jail's advice names the container's security options.
# CODEX_REQUIRE_SECRET_KEY holds no secret: it makes a missing key an error.
# hadolint ignore=DL3064
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    CODEX_IN_CONTAINER=1 \
    CODEX_VAR_DIR=/var/lib/codex \
    CODEX_STATIC_ROOT=/app/static \
    CODEX_REQUIRE_SECRET_KEY=1 \
    PORT=8000
# git for the forges; bubblewrap for the command jail. Unpinned on purpose: the
# base image's Debian release fixes their versions and brings security fixes.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --uid 10001 codex \
    && mkdir -p /var/lib/codex && chown codex:codex /var/lib/codex
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index /wheels/* && rm -rf /wheels
WORKDIR /app
COPY --chown=codex:codex manage.py ./
COPY --chown=codex:codex codex/ codex/
COPY --chown=codex:codex agents/ agents/
COPY --chown=codex:codex integrations/ integrations/
COPY --chown=codex:codex templates/ templates/
# Bytecode made once here: with PYTHONDONTWRITEBYTECODE every process would
# otherwise compile each module it imports from source.
RUN python -m compileall -q codex agents integrations
# Settings refuse to load without keys: collectstatic gets throwaway ones.
RUN SECRET_KEY=collectstatic-only ALLOWED_HOSTS=build.invalid \
    CODEX_FERNET_KEYS="$(python -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())')" \
    python manage.py collectstatic --no-input --verbosity 0
USER 10001
# The data folder: the SQLite fallback, mirrors, worktrees, agents' files.
VOLUME ["/var/lib/codex"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=4).status == 200 else 1)"]
CMD ["sh", "-c", "exec gunicorn codex.wsgi --bind 0.0.0.0:${PORT} --workers ${GUNICORN_WORKERS:-3} --access-logfile -"]
