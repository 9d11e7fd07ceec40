"""mkdocs hook (mkdocs.yml `hooks:`): the Reference pages' generated parts, made from the
code at every build (scripts/docs_reference.py), so the site cannot drift from it.

A page holds a marker line, `<!-- generated: config -->` or `<!-- generated: commands -->`,
which the build replaces with the generated Markdown.
"""

# mkdocs loads a hook by its path with the hook's own folder (scripts/) first on the
# import path, so its sibling module is imported by its plain name.
from docs_reference import commands_reference, config_reference

GENERATORS = {"<!-- generated: config -->": config_reference, "<!-- generated: commands -->": commands_reference}


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker, generate in GENERATORS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
