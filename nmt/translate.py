"""`python -m nmt.translate`: translate with a trained model. The command's code is nmt/commands/translate.py;
its names can also be imported from here (`from nmt.translate import main`)."""

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    from nmt.commands import run

    run("translate")


def __getattr__(name):
    import importlib

    return getattr(importlib.import_module("nmt.commands.translate"), name)
