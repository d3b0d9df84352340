#!/usr/bin/env python3
"""Check every internal link and anchor of the built book (mdbook build's
HTML output): each href/src that is not an external URL must name a file
of the book, and its #fragment an id in that file. Usage:
check-book-links.py BOOK_DIR. Exit 1 listing each broken link, 0 when none."""
import html.parser
import os
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif name in ("href", "src") and tag in ("a", "img", "link", "script"):
                self.links.append((self.getpos()[0], value))


def main():
    if len(sys.argv) != 2:
        print("usage: check-book-links.py BOOK_DIR", file=sys.stderr)
        return 2
    root = os.path.abspath(sys.argv[1])
    pages = {}
    for folder, _, files in os.walk(root):
        for f in files:
            if f.endswith(".html"):
                path = os.path.join(folder, f)
                page = Page()
                with open(path, encoding="utf-8") as fh:
                    page.feed(fh.read())
                pages[path] = page
    if not pages:
        print(f"{root}: no HTML pages (run mdbook build first)", file=sys.stderr)
        return 2
    broken, checked = [], 0
    for path, page in sorted(pages.items()):
        for line, link in page.links:
            url = urllib.parse.urlsplit(link)
            if url.scheme or link.startswith("//"):
                continue  # external: not checked here (no internet)
            checked += 1
            target = path
            if url.path:
                target = os.path.normpath(
                    os.path.join(os.path.dirname(path), urllib.parse.unquote(url.path)))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                if not os.path.exists(target):
                    broken.append(f"{os.path.relpath(path, root)}:{line}: {link}: no such file")
                    continue
            if url.fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else set()
                if urllib.parse.unquote(url.fragment) not in ids:
                    broken.append(
                        f"{os.path.relpath(path, root)}:{line}: {link}: no anchor "
                        f"#{url.fragment} in {os.path.relpath(target, root)}")
    for b in broken:
        print(b)
    print(f"{len(pages)} pages, {checked} internal links, {len(broken)} broken",
          file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
