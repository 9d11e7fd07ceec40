"""`python -m nmt.train`: train a model. The command's code is nmt/commands/train.py;
its names can also be imported from here (`from nmt.train import main`)."""

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    from nmt.commands import run

    run("train")


def __getattr__(name):
    import importlib

    return getattr(importlib.import_module("nmt.commands.train"), name)
