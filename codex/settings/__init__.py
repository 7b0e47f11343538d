"""Codex settings, driven by environment variables, in parts by topic.

Every variable is read through the typed helpers of `codex.env`, which refuse
bad values at start-up; README.md has the table of variables. The parts are
read in this order, and a part may use the values of the parts before it:

- `base`: paths, the run mode, the installed apps, middleware, templates,
  static files and logging;
- `security`: keys, host names, sign-in lockout, security headers;
- `database`: the database and the caches;
- `api`: the REST API and its schema;
- `workers`: django-q2, leases, heartbeats, recovery and the scheduled jobs;
- `pipeline`: how a task moves (cycles, retries, CI, merges, gates, fan-out);
- `integrations`: notifications, GitHub, git, the outside credentials;
- `claude`: the roles' models and the agents' budgets;
- `sandbox`: the command jail and the checks run in it.
"""

# The parts load in the order above, not alphabetically.
# isort: off
from codex.settings.base import *  # noqa: F403
from codex.settings.security import *  # noqa: F403
from codex.settings.database import *  # noqa: F403
from codex.settings.api import *  # noqa: F403
from codex.settings.workers import *  # noqa: F403
from codex.settings.pipeline import *  # noqa: F403
from codex.settings.integrations import *  # noqa: F403
from codex.settings.claude import *  # noqa: F403
from codex.settings.sandbox import *  # noqa: F403

# A star import leaves out names that start with "_"; Django reads this one as
# a setting all the same (upper case), so it stays where it was.
from codex.settings.security import _LOOPBACK_HOSTS  # noqa: F401
