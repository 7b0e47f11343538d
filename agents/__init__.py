"""The agents: the phase runner, the tool-use loop (runtime.py), one module per
role (roles/), their tools and the scripted model of the demo. The top layer:
agents reach codex and integrations; codex reaches agents only through
settings (docs/architecture.md)."""
