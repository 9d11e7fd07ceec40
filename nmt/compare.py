"""`python -m nmt.compare`: compare the runs of a sweep. The command's code is nmt/commands/compare.py;
its names can also be imported from here (`from nmt.compare import main`)."""

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    from nmt.commands import run

    run("compare")


def __getattr__(name):
    import importlib

    return getattr(importlib.import_module("nmt.commands.compare"), name)
