"""`python -m nmt.explore`: the attention explorer in a browser. The command's code is nmt/commands/explore.py;
its names can also be imported from here (`from nmt.explore import main`)."""

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    from nmt.commands import run

    run("explore")


def __getattr__(name):
    import importlib

    return getattr(importlib.import_module("nmt.commands.explore"), name)
