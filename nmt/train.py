"""`python -m nmt.train`: train a model. The command's code is nmt/commands/train.py;
its names can also be imported from here (`from nmt.train import main`)."""

from nmt.commands import names_from, run

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    run("train")

__getattr__ = names_from("train")
