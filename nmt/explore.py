"""`python -m nmt.explore`: the attention explorer in a browser. The command's code is nmt/commands/explore.py;
its names can also be imported from here (`from nmt.explore import main`)."""

from nmt.commands import names_from, run

if __name__ == "__main__":  # first: stop signals are one line while torch loads
    run("explore")

__getattr__ = names_from("explore")
