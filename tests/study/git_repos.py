"""A throwaway git repository for the study's tests of commits."""

import subprocess


def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def new_repo(path):
    """`path` made a repository with a committer that the tests' commits name."""
    git(path, "init", "--quiet")
    git(path, "config", "user.name", "study test")
    git(path, "config", "user.email", "study@example.invalid")
    return path
