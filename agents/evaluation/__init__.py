"""`make eval`: how well the agents turn requests into merged changes, on
code nobody here wrote (docs/eval.md).

A case is a file (cases.py): a repository source (a release from PyPI or
npm pinned by sha256, an archive, a git commit or a folder), the break that
makes its base (sources.py), a request, the tests that must go from failing
to passing and those that must keep passing, the reference patch and the
hidden tests. A suite is a folder of cases; `suites/real` ships with Codex.

Each case runs through the whole pipeline on the local forge (runner.py),
with the configured models or scripted agents (scripted.py: `gold` applies
the reference patch, `empty` changes nothing), and the judge (judge.py) runs
its lists on the merged main branch in the jail. results.py writes
results.json and results.md; validate.py checks cases without the pipeline;
swebench.py runs SWE-bench instances and writes predictions for the
official harness. Runs keep their own database under var/eval/
(agents.isolation).
"""
