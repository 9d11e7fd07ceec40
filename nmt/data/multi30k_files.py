"""Multi30k task 1 as its authors publish it, and a folder of it made safely.

The files are those of the Multi30k authors' repository (github.com/multi30k/dataset,
`data/task1/raw/NAME.LANG.gz`, gzip-compressed raw text, one sentence a line) at the
commit `SOURCE_COMMIT`, with their SHA-256 checksums. `fetch_multi30k` copies them
from there, or from a mirror or a local copy with the same file names, into a folder
that `data.path` takes as it is (nmt.data.corpora reads the .gz files).

Every file is fetched into a temporary name beside its place, checked against its
checksum, and renamed only when all the files asked for are good: a failure leaves
the folder as it was. A file already there with the right checksum is kept; one that
differs is replaced only with `overwrite`.

Only the standard library is imported: the command answers before torch would load.
"""

import hashlib
import os
import socket
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from nmt.base import signals
from nmt.base.errors import NmtError

SOURCE_COMMIT = "a3d2e0d26b56f3846f66a952536ffed4e401d05a"
SOURCE_URL = f"https://raw.githubusercontent.com/multi30k/dataset/{SOURCE_COMMIT}/data/task1/raw/"
LANGUAGES = ("de", "en", "fr", "cs")

# SHA-256 of each published file. The 14 files of MAIN_SETS were computed from copies
# identical to the repository's (the same git blob ids); the rest from the repository.
SHA256 = {
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "train.cs.gz": "a65adb8b32e3bc664f21ecba7a6e7f6950fd1f405e135f7c312faabdb6255077",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
    "val.cs.gz": "b63226e05c4bd5dd6a42897d74b86a1b9d2c31498252c572b1ea7f7996927fcc",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
    "test_2016_flickr.cs.gz": "200a4a74cc9560f051924abb9803be008d1908d77f747e9141aeb86dfd2797f1",
    "test_2017_flickr.de.gz": "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee",
    "test_2017_flickr.en.gz": "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074",
    "test_2017_flickr.fr.gz": "3ba671ceb2299f3304ffafefea7a833d08632fbaf0ba18546f8a2ec2391af496",
    "test_2017_mscoco.de.gz": "799e4854c25d601cb6cb6be29eabe5667734c61ace2f495e03e429031a0bc338",
    "test_2017_mscoco.en.gz": "aab300bfb4427697987e02cd0aacd44bfe8aa50456231b6474c08038bbed2b58",
    "test_2017_mscoco.fr.gz": "754f3072ba9f124569ba5258b32730fc1d214bbf8e0c6dfb2b74401676220db0",
    "test_2018_flickr.de.gz": "ddd0130c7d97482dc5197a02141dae8dd79f20f03586c480d675c09a32daf608",
    "test_2018_flickr.en.gz": "ef4f4844037d4c5dea75c9a8ed5fd78905967a26f67c255e230cc9780032654d",
    "test_2018_flickr.fr.gz": "fb2b83fcceb937a4f7e3e93c1c51c22aba92f1e342391e6b5ba392b16a920501",
    "test_2018_flickr.cs.gz": "7d0a9db904f94c554a8c58049a9f3a5357c27f46cc3d710d70cb0b4a2585b8c2",
}
# what training, validation, the test and the study's confirmation read (test_2017_flickr: de, en)
MAIN_SETS = ("train", "val", "test_2016_flickr", "test_2017_flickr")
# the other test sets of task 1: test_2017_flickr.fr, test_2017_mscoco (no cs), test_2018_flickr
OTHER_TESTS = ("test_2017_flickr.fr.gz", "test_2017_mscoco", "test_2018_flickr")
CHUNK = 1 << 16


def file_names(languages=LANGUAGES, all_tests: bool = False) -> list[str]:
    """The published files of `languages` (the main sets; with `all_tests` every test set)."""
    names = []
    for name in SHA256:
        base, lang = name[:-3].rsplit(".", 1)
        if lang not in languages:
            continue
        other = name in OTHER_TESTS or base in OTHER_TESTS
        if (base in MAIN_SETS and not other) or (all_tests and other):
            names.append(name)
    return names


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def source_of(source: str | None) -> str:
    """`--from` as a URL ending in '/': a folder path becomes a file:// URL."""
    if source is None:
        return SOURCE_URL
    scheme = urllib.parse.urlparse(source).scheme
    if scheme in ("http", "https", "file"):
        return source if source.endswith("/") else source + "/"
    if scheme and len(scheme) > 1:
        raise NmtError(f"--from {source}: a folder, a file:// URL or an http(s):// URL, not {scheme}://")
    folder = Path(source).expanduser()
    if not folder.is_dir():
        raise NmtError(f"--from {source}: no such folder (a folder, a file:// URL or an http(s):// URL "
                       "holding Multi30k task 1's NAME.LANG.gz files)")
    return folder.resolve().as_uri() + "/"


def _unreachable(url: str, reason) -> NmtError:
    host = urllib.parse.urlparse(url).hostname or url
    offline = isinstance(reason, socket.gaierror)
    why = "offline? its name does not resolve" if offline else str(getattr(reason, "strerror", None) or reason)
    return NmtError(f"cannot reach {host} ({why}); fetch from a mirror or a local copy with --from DIR_OR_URL "
                    "(a folder or URL holding the same NAME.LANG.gz files)")


def _download(url: str, name: str, folder: Path) -> str:
    """Fetch `url` into a temporary file in `folder` and check its checksum; its path."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
    signals.temporary_files.add(tmp)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
            for chunk in iter(lambda: response.read(CHUNK), b""):
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as error:
        _discard(tmp)
        raise NmtError(f"{url}: HTTP {error.code} {error.reason}; --from must hold Multi30k task 1's "
                       "files by their published names; nothing was written") from None
    except urllib.error.URLError as error:
        _discard(tmp)
        if isinstance(error.reason, FileNotFoundError) or "No such file" in str(error.reason):
            raise NmtError(f"{url}: no such file; --from must hold Multi30k task 1's files by their "
                           "published names; nothing was written") from None
        raise _unreachable(url, error.reason) from None
    except (OSError, ValueError) as error:
        _discard(tmp)
        if isinstance(error, (socket.timeout, ConnectionError)):
            raise _unreachable(url, error) from None
        raise NmtError(f"cannot write {folder / name}: {getattr(error, 'strerror', None) or error}; "
                       "nothing was written") from None
    if digest.hexdigest() != SHA256[name]:
        _discard(tmp)
        raise NmtError(f"{url}: SHA-256 {digest.hexdigest()[:16]}... is not Multi30k's {SHA256[name][:16]}... "
                       "(a changed or damaged copy); nothing was written")
    return tmp


def _discard(tmp: str) -> None:
    if os.path.exists(tmp):
        os.unlink(tmp)
    signals.temporary_files.discard(tmp)


def _make_folder(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; the ones made, innermost first."""
    made = []
    for path in [folder, *folder.parents]:
        if path.exists():
            break
        made.append(path)
    if folder.exists() and not folder.is_dir():
        raise NmtError(f"{folder} is a file, not a folder; choose another DEST")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise NmtError(f"cannot create {folder}: {error.strerror or error}") from None
    return made


def _to_fetch(folder: Path, names: list[str], overwrite: bool) -> list[str]:
    """The names not already in `folder` with the right checksum; a different file there
    is refused (before anything is fetched) unless `overwrite`."""
    wanted = []
    for name in names:
        path = folder / name
        if path.is_file() and sha256_of(path) == SHA256[name]:
            continue
        if (path.exists() or path.is_symlink()) and not overwrite:
            raise NmtError(f"{path} exists and is not Multi30k's {name} (another checksum); "
                           "--overwrite replaces it, or choose another DEST")
        wanted.append(name)
    return wanted


def fetch_multi30k(dest, source: str | None = None, languages=LANGUAGES, all_tests: bool = False,
                   overwrite: bool = False, say=print) -> list[str]:
    """Write Multi30k task 1's files of `languages` into the folder `dest`; the names
    fetched (those already there and right are kept). `say(line)` reports each file."""
    folder = Path(dest).expanduser()
    base = source_of(source)
    names = file_names(languages, all_tests)
    made = _make_folder(folder)
    temporary = {}
    try:
        wanted = _to_fetch(folder, names, overwrite)
        for name in wanted:
            temporary[name] = _download(base + name, name, folder)
            say(f"fetched {name} ({os.path.getsize(temporary[name]):,} bytes, SHA-256 checked)")
        umask = os.umask(0)
        os.umask(umask)
        for name, tmp in temporary.items():
            os.chmod(tmp, 0o666 & ~umask)           # a new file's usual mode (mkstemp's is private)
            os.replace(tmp, folder / name)
            signals.temporary_files.discard(tmp)
        temporary.clear()
    finally:
        for tmp in temporary.values():
            _discard(tmp)
        if made and not any(folder.iterdir()):          # a folder this call made, left empty
            for path in made:
                if path.is_dir() and not any(path.iterdir()):
                    path.rmdir()
    return wanted
