#!/usr/bin/env bash
# Build the book (docs/, an mdBook) and check its internal links and
# anchors. mdbook is pinned and installed from crates.io into the harness
# cache the first time (search only: no server, no file watcher).
set -euo pipefail
cd "$(dirname "$0")/.."
MDBOOK_VERSION=0.4.52
cache=${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness}
root="$cache/mdbook/$MDBOOK_VERSION"
mdbook="$root/bin/mdbook"
if ! [ -x "$mdbook" ] || [ "$("$mdbook" --version)" != "mdbook v$MDBOOK_VERSION" ]; then
  echo "installing mdbook $MDBOOK_VERSION into $root" >&2
  cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features \
    --features search --root "$root"
fi
rm -rf docs/book
"$mdbook" build docs
command -v python3 >/dev/null || { echo "python3 is missing: the link check needs it" >&2; exit 3; }
python3 ci/check-book-links.py docs/book
