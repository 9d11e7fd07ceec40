"""`python -m nmt.average`: average checkpoints. The command's code is nmt/commands/average.py;
its names can also be imported from here (`from nmt.average import main`)."""

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    from nmt.commands import run

    run("average")


def __getattr__(name):
    import importlib

    return getattr(importlib.import_module("nmt.commands.average"), name)
