"""mkdocs hook (mkdocs.yml `hooks:`): the Reference pages' generated parts, made from the
code at every build (scripts/docs_reference.py), so the site cannot drift from it.

A page holds a marker line, `<!-- generated: config -->` or `<!-- generated: commands -->`,
which the build replaces with the generated Markdown.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # mkdocs loads a hook by its path, not as part of a package
    sys.path.insert(0, str(ROOT))

from scripts.docs_reference import commands_reference, config_reference  # noqa: E402

GENERATORS = {"<!-- generated: config -->": config_reference, "<!-- generated: commands -->": commands_reference}


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker, generate in GENERATORS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
