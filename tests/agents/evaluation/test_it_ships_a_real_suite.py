"""The suite shipped with Codex: at least 20 cases from at least 4 projects
in Python and JavaScript, each a registry release pinned by sha256 with a
break, and among them multi-file changes, a case needing the repository's
own setup from the registry, and a project with tests failing on the base.
(Read only: nothing is downloaded here; `make eval` runs them.)"""

from __future__ import annotations

from agents.evaluation.cases import load_suite, suite_folder


def test_the_real_suite_has_the_cases_it_promises():
    cases = load_suite(suite_folder("real"))

    assert len(cases) >= 20
    assert len({case.project for case in cases}) >= 4
    assert {case.language for case in cases} >= {"python", "javascript"}
    for case in cases:
        assert case.source.kind == "registry" and len(case.source.sha256) == 64
        assert case.break_patch.startswith("diff --git"), case.id
        assert case.tests.fail_to_pass and case.tests.pass_to_pass, case.id
        assert case.toolchain_folder() is not None and case.toolchain_folder().is_dir()
    tags = {tag for case in cases for tag in case.tags}
    assert {"multi-file", "setup", "preexisting-failure", "bug", "ci"} <= tags


def test_its_multi_file_cases_change_several_files():
    for case in load_suite(suite_folder("real")):
        if "multi-file" in case.tags:
            changed = {
                line.split(" b/", 1)[1]
                for line in case.break_patch.splitlines()
                if line.startswith("diff --git ")
                and not case.is_test_file(line.split(" b/", 1)[1])
            }
            assert len(changed) >= 2, (case.id, changed)


def test_its_setup_case_installs_from_the_registry_through_the_proxy():
    setup = [c for c in load_suite(suite_folder("real")) if "setup" in c.tags]

    assert setup
    for case in setup:
        assert case.setup_command and "pip install" in case.setup_command
        assert set(case.setup_hosts) == {"pypi.org", "files.pythonhosted.org"}


def test_the_ci_subset_has_both_languages():
    ci = [c for c in load_suite(suite_folder("real")) if "ci" in c.tags]

    assert {c.language for c in ci} == {"python", "javascript"}
