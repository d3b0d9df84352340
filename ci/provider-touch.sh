#!/usr/bin/env bash
# Counts what adding a provider touches, as the architecture page's
# "Where a change goes" table says: a throw-away provider (a `Provider`
# variant and an `AnyCluster` variant, no code behind them) is added to a
# scratch copy of HEAD, and `cargo check` lists every place the compiler
# makes answer for it (E0004: a `match` that lacks it). Each place found
# gets a stand-in arm and the check runs again, so the crates above the
# library (the CLI, the suites) are read too. Prints the places and files
# and their count. Nothing in the working tree changes. With --check, it
# fails when the architecture page's "a provider" row
# (docs/src/architecture.md) does not name every file found.
#   bash ci/provider-touch.sh [--check] [scratch-dir]
set -euo pipefail
check=""
if [ "${1:-}" = "--check" ]; then
  check=1
  shift
fi
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
made=""
if [ -n "${1:-}" ]; then
  scratch=$1
else
  scratch=$(mktemp -d /tmp/provider-touch.XXXXXX)
  made=1
fi
tree="$scratch/tree"
# The scratch copy goes when the script ends, however it ends (and the
# scratch dir with it when the script made it).
cleanup() {
  git -C "$repo" worktree remove --force "$tree" >/dev/null 2>&1 || true
  if [ -n "$made" ]; then rm -rf "$scratch"; fi
}
trap cleanup EXIT
git -C "$repo" worktree add -q --detach "$tree" HEAD
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}
python3 - "$tree" "$check" "$repo/docs/src/architecture.md" <<'PY'
import re, subprocess, sys
tree, check, page = sys.argv[1], sys.argv[2], sys.argv[3]
src = f"{tree}/harness/src"
def add(path, head, variant):
    p = f"{src}/{path}"
    s = open(p).read()
    j = s.index("\n}", s.index(head))
    open(p, "w").write(s[:j] + "\n    " + variant + s[j:])
add("cluster/choice.rs", "pub enum Provider {", "Throwaway,")
add("cluster/any.rs", "pub enum AnyCluster {", "Throwaway(std::convert::Infallible),")
found = []
pat = re.compile(r"^([^:\s]+):(\d+):(\d+): error\[E0004\]: non-exhaustive patterns: (.*) not covered")
for round_ in range(8):
    out = subprocess.run(
        ["cargo", "check", "--workspace", "--all-targets", "--message-format", "short"],
        cwd=tree, capture_output=True, text=True).stderr
    hits = [m.groups() for m in map(pat.match, out.splitlines()) if m]
    other = [l for l in out.splitlines() if re.match(r"^\S+:\d+:\d+: error", l) and "E0004" not in l]
    if other:
        sys.exit("provider-touch: other errors than E0004:\n" + "\n".join(other[:20]))
    if not hits:
        break
    # Later places first, so line numbers of earlier ones hold.
    for f, line, col, pats in sorted(set(hits), key=lambda h: (h[0], -int(h[1]), -int(h[2]))):
        found.append(f"{f}:{line}")
        # The missing patterns, as paths that resolve where they stand
        # (rustc prints them relative to where they were declared), and
        # without `&` (binding modes take them by value or reference).
        root = "harness" if f.startswith(("suites/", "harness/src/cli/", "harness/src/main.rs")) else "crate"
        full = {"Provider": "cluster::Provider", "AnyCluster": "cluster::AnyCluster", "OnCluster": "lifecycle::OnCluster"}
        def path(m):
            return f"{root}::{full[m.group(1)]}::"
        arms = " | ".join(
            re.sub(r"&\s*(mut\s+)?", "", re.sub(r"\b(?:\w+::)*(Provider|AnyCluster|OnCluster)::", path, a))
            for a in re.findall(r"`([^`]*)`", pats))
        p = f"{tree}/{f}"
        lines = open(p).read().split("\n")
        at = sum(len(l) + 1 for l in lines[: int(line) - 1]) + int(col) - 1
        s = "\n".join(lines)
        if not s[:at].rstrip().endswith("match"):
            # Inside a macro's expansion: its `match` is in the macro,
            # answered once there.
            m = re.search(r"macro_rules!\s*\w+\s*\{.*?match \$", s, re.S)
            if not m:
                sys.exit(f"provider-touch: {f}:{line}: no match here and no macro with one")
            at = m.end()
            found[-1] = f"{f}:{s[:at].count(chr(10)) + 1} (macro)"
            if found.count(found[-1]) > 1:
                found.pop()
                continue
        brace = s.index("{", at)
        s = s[: brace + 1] + f"\n{arms} => unreachable!(\"throw-away provider\")," + s[brace + 1 :]
        open(p, "w").write(s)
else:
    sys.exit("provider-touch: still missing arms after 8 rounds")
if not found:
    sys.exit("provider-touch: no non-exhaustive match found: is the scan broken?")
files = sorted({x.split(":")[0] for x in found})
for x in sorted(found):
    print("  " + x)
print(f"provider-touch: {len(found)} places in {len(files)} files answer for a new provider (the compiler names each: E0004)")
for f in files:
    print("  file: " + f)
if check:
    row = next((l for l in open(page) if l.startswith("| a provider |")), "")
    named = {m for m in re.findall(r"`([^`]+\.rs)`", row)}
    missing = [f for f in files if f.removeprefix("harness/src/") not in named]
    if missing:
        sys.exit("provider-touch: docs/src/architecture.md's \"a provider\" row does not name: " + ", ".join(missing))
    print("provider-touch: the architecture page's \"a provider\" row names every file")
PY
