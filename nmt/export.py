"""`python -m nmt.export`: export a model for CTranslate2. The command's code is nmt/commands/export.py;
its names can also be imported from here (`from nmt.export import main`)."""

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    from nmt.commands import run

    run("export")


def __getattr__(name):
    import importlib

    return getattr(importlib.import_module("nmt.commands.export"), name)
