"""The one load generator of the benchmarks: Locust (its Python API,
FastHttpUser), a closed loop of concurrent users with no think time (Locust's default
wait_time, constant(0)) unless a user class sets its own.

Locust monkey-patches the process with gevent, so it runs in a subprocess
(`python -m bench.load ...`) and never in the bench process itself. Each mode
is a user class built in that subprocess by a factory named "module:function",
called with the `params` dict (JSON) and returning a FastHttpUser subclass. The
modes run one after the other, each with `users` users, `warmup` seconds
unrecorded, then `seconds` recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, percentile


def healthz_user(params: dict):
    """GET /healthz (one SELECT 1): the ceiling of every load figure."""
    from locust import FastHttpUser, task

    class Healthz(FastHttpUser):
        @task
        def send(self) -> None:
            self.client.get("/healthz", name="healthz")

    return Healthz


def run_load(
    base: str,
    modes: dict[str, str],
    *,
    users: int,
    seconds: float,
    warmup: float = 0,
    params: dict | None = None,
) -> dict[str, dict]:
    """Each of `modes` (name -> "module:factory") under `users` users for
    `seconds` after `warmup`, in one Locust subprocess, in order. Returns per
    mode: requests, statuses (status code or exception name -> count), rps,
    p50, p99, max (ms), and the raw latencies_ms."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        pass
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec:
        json.dump(params or {}, spec)
    command = [
        sys.executable,
        "-m",
        "bench.load",
        f"--url={base}",
        "--modes=" + ",".join(f"{name}={factory}" for name, factory in modes.items()),
        f"--users={users}",
        f"--seconds={seconds}",
        f"--warmup={warmup}",
        f"--params={spec.name}",
        f"--out={out.name}",
    ]
    try:
        done = subprocess.run(
            command,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=len(modes) * (seconds + warmup) + 60,
        )
        if done.returncode != 0:
            raise RuntimeError(f"load generator failed: {done.stderr[-1500:]}")
        results = json.loads(Path(out.name).read_text())
    finally:
        os.unlink(out.name)
        os.unlink(spec.name)
    summary = {}
    for mode, result in results.items():
        lat = result["latencies_ms"]
        summary[mode] = {
            "requests": len(lat),
            "statuses": result["statuses"],
            "rps": len(lat) / result["seconds"] if result["seconds"] else 0,
            "p50": percentile(lat, 50),
            "p99": percentile(lat, 99),
            "max": max(lat) if lat else None,
            "latencies_ms": lat,
        }
    return summary


def _factory(spec: str):
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--modes", required=True, help="name=module:factory,...")
    parser.add_argument("--users", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--warmup", type=float, default=0)
    parser.add_argument("--params", help="a JSON file: the factories' params")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    from collections import Counter

    import gevent
    from locust.env import Environment

    params = json.loads(Path(args.params).read_text()) if args.params else {}
    params.setdefault("users", args.users)
    results = {}
    for item in args.modes.split(","):
        mode, _, factory = item.partition("=")
        user_class = _factory(factory)(params)
        user_class.host = args.url
        latencies: list[float] = []
        statuses: Counter = Counter()
        recording = [False]
        env = Environment(user_classes=[user_class])

        def on_request(response_time, response=None, exception=None, **_):
            if not recording[0]:  # noqa: B023 - this mode's list, used right here
                return
            latencies.append(response_time)  # noqa: B023
            status = getattr(response, "status_code", None)
            statuses[str(status or type(exception).__name__)] += 1  # noqa: B023

        env.events.request.add_listener(on_request)
        runner = env.create_local_runner()
        runner.start(args.users, spawn_rate=10_000)
        gevent.sleep(args.warmup)
        recording[0] = True
        started = time.perf_counter()
        gevent.sleep(args.seconds)
        recording[0] = False
        elapsed = time.perf_counter() - started
        runner.quit()
        results[mode] = {
            "latencies_ms": latencies,
            "statuses": dict(statuses),
            "seconds": elapsed,
        }
    Path(args.out).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
