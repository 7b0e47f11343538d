"""The agent runtime and one module per role (arrives with the agents issue)."""
