"""`python -m nmt.compare`: compare the runs of a sweep. The command's code is nmt/commands/compare.py;
its names can also be imported from here (`from nmt.compare import main`)."""

from nmt.commands import names_from, run

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    run("compare")

__getattr__ = names_from("compare")
