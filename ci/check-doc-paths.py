#!/usr/bin/env python3
"""Fails if a rendered page of the facade's docs shows an example naming another
crate, or an intra-doc link rustdoc left unresolved.

A user depends on `pmc` alone; the facade re-exports pmc-core's items (and
pmc-analyze's under `pmc::analyze`), and rustdoc renders the re-exported items'
examples on pmc's own pages exactly as their source crate wrote them. An example
there that says `use pmc_core::...` fails with E0432 when copied into a crate
that depends on `pmc`. This script reads the HTML `cargo doc -p pmc` wrote
(default: target/doc/pmc) and lists every code block (```rust and ```text
examples; not the item declarations) that names a workspace crate other than
`pmc` by path (`pmc_core::`, `use pmc_linux`, `extern crate pmc_log`...).

It also lists intra-doc links that resolve in their own crate (so that crate's
`cargo doc -D warnings` passes) but not on pmc's pages: rustdoc renders them
literally (`[`LinuxPmc::log_counts`]`) or as an href that is a Rust path
(`href="crate::Backend::log_error"`). This happens to links to a backend's own
items in the docs of its trait implementations, which pmc shows under
"Implementations on Foreign Types".

Usage: ci/check-doc-paths.py [DOC_DIR]   (run after `cargo doc -p pmc`)
       ci/check-doc-paths.py --markdown FILE...   (the ```rust blocks of a README)
Exit status 1 if anything is found, 2 if DOC_DIR has no pages.
"""

import html
import os
import re
import sys
from html.parser import HTMLParser

# The workspace's library crates a user of the facade does not depend on.
OTHER_CRATES = (
    "pmc_core",
    "pmc_process",
    "pmc_linux",
    "pmc_freebsd",
    "pmc_unsupported",
    "pmc_log",
    "pmc_analyze",
    "pmc_unwind",
    "pmc_events",
    "pmc_testkit",
)
PATH_RE = re.compile(
    r"\b(?:(?:use|extern\s+crate)\s+(?:" + "|".join(OTHER_CRATES) + r")\b"
    r"|(?:" + "|".join(OTHER_CRATES) + r")\s*::)"
)


# A link rustdoc could not resolve: `[<code>Path</code>]` left as text, or a Rust path as href.
RAW_LINK_RE = re.compile(r"\[<code>[^<]*</code>\]")
PATH_HREF_RE = re.compile(r'<a href="([^"]*::[^"]*)"')


class Examples(HTMLParser):
    """Collects the text of every <pre> block except item declarations."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # nesting inside a collected <pre>
        self.buf = []
        self.blocks = []

    def handle_starttag(self, tag, attrs):
        if tag != "pre":
            return
        if self.depth:
            self.depth += 1
            return
        classes = (dict(attrs).get("class") or "").split()
        if "item-decl" in classes:
            return
        self.depth = 1
        self.buf = []

    def handle_endtag(self, tag):
        if tag == "pre" and self.depth:
            self.depth -= 1
            if self.depth == 0:
                self.blocks.append("".join(self.buf))

    def handle_data(self, data):
        if self.depth:
            self.buf.append(data)


def check_markdown(paths):
    """The ```rust blocks of Markdown files (the README's library examples)."""
    bad = 0
    for path in paths:
        fence = None
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                stripped = line.strip()
                if stripped.startswith("```"):
                    fence = None if fence is not None else stripped[3:].strip()
                    continue
                if fence == "rust" and PATH_RE.search(line):
                    bad += 1
                    print(f"{path}:{n}: {stripped}")
    if bad:
        print(f"check-doc-paths: {bad} lines of Rust examples name another crate than `pmc`")
        return 1
    print(f"ok: the Rust examples of {' '.join(paths)} name no other crate than `pmc`")
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--markdown":
        return check_markdown(sys.argv[2:])
    root = sys.argv[1] if len(sys.argv) > 1 else "target/doc/pmc"
    pages = bad_pages = bad_blocks = bad_links = 0
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if not name.endswith(".html"):
                continue
            path = os.path.join(dirpath, name)
            pages += 1
            parser = Examples()
            with open(path, encoding="utf-8") as f:
                text = f.read()
            parser.feed(text)
            rel = os.path.relpath(path, root)
            for m in RAW_LINK_RE.finditer(text):
                bad_links += 1
                print(f"{rel}: unresolved intra-doc link rendered as text: {html.unescape(m.group(0))}")
            for m in PATH_HREF_RE.finditer(text):
                bad_links += 1
                print(f"{rel}: unresolved intra-doc link rendered as href: {html.unescape(m.group(1))}")
            hits = []
            for block in parser.blocks:
                lines = [ln for ln in html.unescape(block).splitlines() if PATH_RE.search(ln)]
                if lines:
                    hits.append(lines)
            if hits:
                bad_pages += 1
                bad_blocks += len(hits)
                for lines in hits:
                    for ln in lines:
                        print(f"{rel}: {ln.strip()}")
    if pages == 0:
        print(f"check-doc-paths: no pages under {root} (run `cargo doc -p pmc` first)", file=sys.stderr)
        return 2
    if bad_pages:
        print(
            f"check-doc-paths: {bad_pages} of {pages} pages of pmc's docs show another crate's "
            f"path in {bad_blocks} examples (a user of `pmc` alone gets E0432): write them with `pmc::`"
        )
    if bad_links:
        print(
            f"check-doc-paths: {bad_links} intra-doc links unresolved on pmc's pages: link to a "
            f"pmc-core item, or write a backend's own item as plain `code`"
        )
    if bad_pages or bad_links:
        return 1
    print(f"ok: no example on pmc's {pages} pages names another crate; no unresolved link")
    return 0


if __name__ == "__main__":
    sys.exit(main())
