"""`python -m nmt.average`: average checkpoints. The command's code is nmt/commands/average.py;
its names can also be imported from here (`from nmt.average import main`)."""

from nmt.commands import names_from, run

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    run("average")

__getattr__ = names_from("average")
