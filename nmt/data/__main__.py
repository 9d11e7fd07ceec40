"""nmt-data multi30k DEST: fetch Multi30k task 1 into a folder that data.path takes.

    nmt-data multi30k data/multi30k                      # from the Multi30k authors' GitHub repository
    nmt-data multi30k data/multi30k --languages de en    # German and English only
    nmt-data multi30k data/multi30k --from /media/usb/multi30k      # a local copy (or file://, http(s)://)
    python -m nmt.train experiment=first_run data.path=data/multi30k

The files are the published ones (train, val, test_2016_flickr in de, en, fr, cs;
test_2017_flickr in de and en; --all-tests adds test_2017_flickr.fr, test_2017_mscoco
in de, en, fr and test_2018_flickr in all four), kept gzip-compressed as published,
each checked against its SHA-256 before it takes its name. A failure leaves DEST as
it was; a file there with another checksum is replaced only with --overwrite.
"""

if __name__ == "__main__":      # first: stop signals are one line from the start
    from nmt.base.cli import run_command

    run_command("nmt.data.__main__", "; no file was left half-written")

from nmt.base.cli import command
from nmt.base.cli_checks import ArgumentParser, write_stdout
from nmt.data.multi30k_files import LANGUAGES, SOURCE_URL, fetch_multi30k, file_names


@command
def main(argv=None) -> int:
    parser = ArgumentParser(prog="nmt-data", description=__doc__.split("\n")[0])
    corpora = parser.add_subparsers(dest="corpus", required=True, metavar="CORPUS",
                                    help="the corpus to fetch: multi30k")
    multi30k = corpora.add_parser("multi30k", help="Multi30k task 1 (de, en, fr, cs)",
                                  description="Fetch Multi30k task 1's published files into DEST and check "
                                              "their SHA-256 checksums; then train with data.path=DEST.")
    multi30k.add_argument("dest", metavar="DEST", help="the folder to write (created if missing), e.g. data/multi30k")
    multi30k.add_argument("--from", dest="source", metavar="DIR_OR_URL",
                          help=f"a mirror or a local copy with the same file names: a folder, a file:// URL or "
                               f"an http(s):// URL (default: {SOURCE_URL})")
    multi30k.add_argument("--languages", nargs="+", choices=LANGUAGES, default=list(LANGUAGES), metavar="LANG",
                          help="the languages to fetch, of de, en, fr, cs (default: all four)")
    multi30k.add_argument("--all-tests", action="store_true",
                          help="also the other test sets of task 1 (test_2017_flickr.fr, test_2017_mscoco, "
                               "test_2018_flickr)")
    multi30k.add_argument("--overwrite", action="store_true",
                          help="replace a file in DEST that differs from the published one")
    args = parser.parse_args(argv)
    fetched = fetch_multi30k(args.dest, args.source, tuple(args.languages), args.all_tests, args.overwrite,
                             say=lambda line: write_stdout(line + "\n"))
    total = len(file_names(tuple(args.languages), args.all_tests))
    kept = total - len(fetched)
    write_stdout(f"{args.dest}: {total} files of Multi30k task 1 ({', '.join(args.languages)}; "
                 f"{len(fetched)} fetched, {kept} already there); train with data.path={args.dest}\n")
    return 0


def cli() -> None:
    """The console script `nmt-data` (what `python -m nmt.data` runs)."""
    from nmt.base.cli import run_command

    run_command("nmt.data.__main__", "; no file was left half-written")
