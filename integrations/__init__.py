"""One package per outside system (github, anthropic, git, notify).

Only these packages import the outside system's SDK or run its tools; each turns
that system's errors into the one classified error and owns its retry policy.
"""
