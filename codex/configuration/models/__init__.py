"""Models of the configuration app: settings and the credentials in use."""

from codex.configuration.models.credential import ActiveCredential
from codex.configuration.models.setting import Setting

__all__ = [
    "ActiveCredential",
    "Setting",
]
