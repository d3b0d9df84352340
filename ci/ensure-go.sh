#!/usr/bin/env bash
# Make sure a Go toolchain >= 1.26 is on PATH; print the directory to add to
# PATH on stdout (empty when the one on PATH is good).
#
# Only package registries are reachable on CI machines, so when Go is
# missing or too old: take Debian's Go 1.19 as a bootstrap and have it
# download the golang.org/toolchain module of the wanted release through
# the Go module proxy (the same module `GOTOOLCHAIN` switching uses).
set -euo pipefail
want=${HARNESS_GO_VERSION:-1.26.8}
need_minor=26
cache="${XDG_CACHE_HOME:-$HOME/.cache}/harness/go-toolchain"

go_ok() {
  local go=$1 v major rest minor
  v=$(GOTOOLCHAIN=local "$go" env GOVERSION 2>/dev/null) || return 1
  v=${v#go}; major=${v%%.*}; rest=${v#*.}; minor=${rest%%.*}
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge "$need_minor" ]; }
}

if command -v go >/dev/null 2>&1 && go_ok go; then
  exit 0
fi
dest="$cache/go$want"
if [ -x "$dest/bin/go" ] && go_ok "$dest/bin/go"; then
  echo "$dest/bin"
  exit 0
fi
boot=""
if command -v go >/dev/null 2>&1; then
  boot=$(command -v go)
else
  if [ ! -x /usr/lib/go-1.19/bin/go ]; then
    echo "ensure-go: no Go toolchain; installing Debian's golang-1.19-go as a bootstrap" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-1.19-go >&2
  fi
  boot=/usr/lib/go-1.19/bin/go
fi
mod="golang.org/toolchain@v0.0.1-go$want.linux-amd64"
echo "ensure-go: downloading $mod with $("$boot" version)" >&2
tmp=$(mktemp -d)
dir=$(cd "$tmp" && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$boot" mod download -json "$mod" \
      | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
rm -rf "$tmp"
[ -n "$dir" ] && [ -d "$dir" ] || { echo "ensure-go: go mod download $mod failed" >&2; exit 3; }
mkdir -p "$cache"
rm -rf "$dest.tmp"
cp -r "$dir" "$dest.tmp"
chmod -R u+w "$dest.tmp"
# Module zips do not keep file modes.
chmod +x "$dest.tmp"/bin/* "$dest.tmp"/pkg/tool/*/*
rm -rf "$dest"
mv "$dest.tmp" "$dest"
go_ok "$dest/bin/go" || { echo "ensure-go: $dest/bin/go does not work" >&2; exit 3; }
echo "$dest/bin"
