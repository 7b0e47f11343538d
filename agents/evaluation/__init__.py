"""`make eval`: how well the agents turn small feature requests into merged
changes, measured on a built-in suite (agents.evaluation.suite: sample
repositories in Python and JavaScript, each request judged by acceptance
tests the agents never see).

Each request runs through the whole pipeline on the local forge, as the demo
does. Then its main branch is checked out and the hidden tests run in the
command jail: the request is resolved when they pass. The run writes a table
(Markdown) and JSON with, per request and in total: resolved, cycles, agent
turns, tokens, cost and time.

With ANTHROPIC_API_KEY set it measures the configured models; without it (or
with --scripted) each agent answers from a script that makes the intended
change, which checks the harness itself (CI runs two requests of it).
"""
