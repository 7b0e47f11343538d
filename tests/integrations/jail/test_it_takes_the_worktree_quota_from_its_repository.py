"""A worktree's disk quota is its repository's (`worktree_quota_mb`, set in
the console), found from the worktree itself as the phase runner builds its
jail; a folder of no repository gets the default of 1 GiB."""

from __future__ import annotations

from codex.repositories.models import Repository
from integrations.jail import Jail


def test_the_jail_of_a_task_worktree_has_its_repositorys_quota(
    bubblewrap, git_worktree
):
    worktree, _mirror, _remote = git_worktree
    assert Repository._meta.get_field("worktree_quota_mb").default == 1024
    Repository.objects.update(worktree_quota_mb=20)
    jail = Jail.for_worktree(worktree, backend=bubblewrap)
    assert jail.limits.worktree_quota_mb == 20
    result = jail.run(["bash", "-c", "head -c 40M /dev/zero > big.bin; sleep 30"])
    assert result.limit == "disk"
    assert "disk quota of 20 MB" in result.note


def test_a_folder_of_no_repository_gets_the_default(db, bubblewrap, tmp_path):
    assert Jail.for_worktree(tmp_path, backend=bubblewrap).limits.worktree_quota_mb == (
        1024
    )


def test_the_console_shows_the_quota_for_editing(admin_client, git_worktree):
    repository = Repository.objects.get()
    url = f"/admin/repositories/repository/{repository.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert 'name="worktree_quota_mb"' in page and 'value="1024"' in page


def test_a_caller_that_knows_the_repository_gives_its_quota_without_a_lookup(
    bubblewrap, git_worktree, django_assert_num_queries
):
    # The phase runner and the base commit's checks hold the repository: its
    # quota goes to the jail as given, with no read of the repositories.
    worktree, _mirror, _remote = git_worktree
    with django_assert_num_queries(0):
        jail = Jail.for_worktree(worktree, backend=bubblewrap, worktree_quota_mb=20)
    assert jail.limits.worktree_quota_mb == 20


def test_the_lookup_finds_its_repository_among_others(
    bubblewrap, git_worktree, django_assert_num_queries
):
    worktree, _mirror, _remote = git_worktree
    Repository.objects.update(worktree_quota_mb=30)
    for number in range(5):
        Repository.objects.create(
            url=f"https://github.com/acme/other-{number}", worktree_quota_mb=5
        )
    with django_assert_num_queries(1):
        jail = Jail.for_worktree(worktree, backend=bubblewrap)
    assert jail.limits.worktree_quota_mb == 30
