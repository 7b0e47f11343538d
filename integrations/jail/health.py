"""Whether the jail works where this process runs, and the fix that is right
for the place: a container needs other steps than a machine of its own.

Workers report `jail_health()` with their clusters' beats (docs/jail.md), so
the console shows the jail of the machines that run commands, never the web
server's. The probe builds a new backend each time: a worker's answer must
change once an operator has installed bubblewrap, without a restart.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from django.conf import settings

# The security options Docker's defaults lack for bubblewrap, and why:
# - seccomp=unconfined: the default seccomp profile refuses the unshare and
#   clone calls that make user namespaces;
# - apparmor=unconfined: the docker-default AppArmor profile refuses mount,
#   which bubblewrap needs to build the jail's filesystem;
# - systempaths=unconfined: Docker masks parts of /proc (and makes others
#   read-only), and the kernel lets a new PID namespace mount a fresh /proc
#   only where no part of the container's /proc is hidden ("Can't mount proc
#   on /newroot/proc").
CONTAINER_SECURITY_OPTIONS = (
    "seccomp=unconfined",
    "apparmor=unconfined",
    "systempaths=unconfined",
)


def in_container() -> bool:
    """Whether this process runs in a container. Only explicit signs count:
    CODEX_IN_CONTAINER (Codex's image sets it), the `container` variable
    (podman, LXC, systemd-nspawn), podman's /run/.containerenv, Kubernetes'
    service variables. Not /.dockerenv: machines made from an image keep it."""
    flag = os.environ.get("CODEX_IN_CONTAINER", "").strip().lower()
    if flag in ("1", "true", "yes"):
        return True
    if flag in ("0", "false", "no"):
        return False
    return bool(
        os.environ.get("container")  # noqa: SIM112 - its name is lowercase
        or os.environ.get("KUBERNETES_SERVICE_HOST")
        or Path("/run/.containerenv").exists()
    )


def container_options_fix() -> str:
    """The fix inside a container: the security options bubblewrap needs."""
    flags = " ".join(
        f"--security-opt {option}" for option in CONTAINER_SECURITY_OPTIONS
    )
    return (
        f"run the worker's container with {flags} (docker-compose.yml's worker "
        "service has them; docs/containers.md says why)"
    )


def missing_bubblewrap_fix() -> str:
    """What to do when bwrap is not installed, where this process runs."""
    if in_container():
        return (
            "install bubblewrap in the worker's image (Codex's Dockerfile does: "
            "build the image from it), or set CODEX_SANDBOX=docker"
        )
    return "apt-get install bubblewrap (or set CODEX_SANDBOX=docker)"


def no_namespaces_fix() -> str:
    """What to do when bwrap is installed but cannot make its namespaces."""
    if in_container():
        return container_options_fix()
    return (
        "allow unprivileged user namespaces "
        "(sysctl -w kernel.unprivileged_userns_clone=1, or "
        "kernel.apparmor_restrict_unprivileged_userns=0), "
        "or set CODEX_SANDBOX=docker"
    )


@dataclass(frozen=True)
class JailHealth:
    """What a worker says of its jail: the backend CODEX_SANDBOX chose, whether
    it isolates commands, and if it cannot run, why and the fix."""

    backend: str
    jailed: bool
    problem: str = ""
    fix: str = ""
    in_container: bool = False

    @property
    def works(self) -> bool:
        return not self.problem

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def jail_health() -> JailHealth:
    """Probe the configured backend afresh (a new backend object: nothing
    cached from an earlier probe)."""
    from integrations.jail.backends import (
        BubblewrapBackend,
        ContainerBackend,
        JailUnavailable,
    )

    name = (settings.CODEX_SANDBOX or "auto").strip().lower()
    here = in_container()
    if name == "none":
        return JailHealth("none", False, in_container=here)
    if name in ("docker", "podman"):
        backend = ContainerBackend(name)
    elif name in ("auto", "bubblewrap"):
        backend = BubblewrapBackend()
        name = "bubblewrap"
    else:
        return JailHealth(
            name,
            False,
            f"CODEX_SANDBOX={name!r} is not a backend",
            "set CODEX_SANDBOX to auto, bubblewrap, docker, podman or none",
            here,
        )
    problem: JailUnavailable | None = backend.problem()
    if problem is None:
        return JailHealth(name, True, in_container=here)
    return JailHealth(name, True, problem.reason, problem.fix, here)
