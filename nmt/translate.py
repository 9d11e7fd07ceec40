"""`python -m nmt.translate`: translate with a trained model. The command's code is nmt/commands/translate.py;
its names can also be imported from here (`from nmt.translate import main`)."""

from nmt.commands import names_from, run

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    run("translate")

__getattr__ = names_from("translate")
