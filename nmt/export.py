"""`python -m nmt.export`: export a model for CTranslate2. The command's code is nmt/commands/export.py;
its names can also be imported from here (`from nmt.export import main`)."""

from nmt.commands import names_from, run

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    run("export")

__getattr__ = names_from("export")
