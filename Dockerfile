# Codex: web console (gunicorn, the default) or worker (`python manage.py qcluster`).
#
#   docker build -t codex .
#   docker run -e SECRET_KEY=... -e DATABASE_URL=postgres://... -e REDIS_URL=redis://... \
#       -p 8000:8000 codex                                  # web console + API
#   docker run -e ... codex python manage.py qcluster      # a worker
#   docker run -e ... codex python manage.py migrate       # before the first start

# --- build stage: wheels for every dependency ---------------------------------
FROM python:3.11-slim AS build
WORKDIR /src
COPY requirements/ requirements/
RUN pip wheel --no-cache-dir --wheel-dir /wheels -r requirements/prod.txt

# --- runtime: slim, non-root ----------------------------------------------------
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    CODEX_VAR_DIR=/var/lib/codex \
    CODEX_STATIC_ROOT=/app/static \
    CODEX_REQUIRE_SECRET_KEY=1 \
    PORT=8000
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
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
RUN SECRET_KEY=collectstatic-only python manage.py collectstatic --no-input --verbosity 0
USER codex
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import os,sys,urllib.request; sys.exit(0 if urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"PORT\",\"8000\")}/healthz', timeout=4).status == 200 else 1)"
CMD ["sh", "-c", "exec gunicorn codex.wsgi --bind 0.0.0.0:${PORT} --workers ${GUNICORN_WORKERS:-3} --access-logfile -"]
