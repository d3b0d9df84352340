#!/usr/bin/env bash
# Install the pinned helm and kind (harness/src/tools/versions.rs) under the
# harness cache dir and print the directory to put on PATH.
#   helm: the release tarball from get.helm.sh, checked against the pinned
#         SHA-256 (linux amd64); where get.helm.sh cannot be reached, built
#         from its Go module (helm.sh/helm/v4) at the same version;
#   kind: built from its Go module (needs Go, see ci/ensure-go.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
helm_version=$(bash ci/pinned.sh HELM_VERSION)
helm_sha=$(bash ci/pinned.sh HELM_LINUX_AMD64_SHA256)
kind_version=$(bash ci/pinned.sh KIND_VERSION)
bin="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness}/ci-bin"
mkdir -p "$bin"

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "install-tools: only linux amd64 is pinned; install helm $helm_version and kind $kind_version yourself" >&2
  exit 3
fi
if [ ! -x "$bin/helm-$helm_version" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if curl -fsSL --connect-timeout 10 -o "$tmp/helm.tgz" "https://get.helm.sh/helm-v$helm_version-linux-amd64.tar.gz"; then
    echo "$helm_sha  $tmp/helm.tgz" | sha256sum -c --quiet - >&2
    tar -xzf "$tmp/helm.tgz" -C "$tmp" linux-amd64/helm
    install -m 0755 "$tmp/linux-amd64/helm" "$bin/helm-$helm_version"
  else
    # No release download (a machine that reaches only package
    # registries): the same release built from its Go module, which the
    # module proxy serves and go.sum's checksum database vouches for.
    echo "install-tools: get.helm.sh cannot be reached; building helm $helm_version from its Go module" >&2
    GOBIN="$tmp/helm-build" GOTOOLCHAIN=local CGO_ENABLED=0 \
      go install "helm.sh/helm/v${helm_version%%.*}/cmd/helm@v$helm_version" >&2
    install -m 0755 "$tmp/helm-build/helm" "$bin/helm-$helm_version"
  fi
fi
ln -sf "helm-$helm_version" "$bin/helm"
if [ ! -x "$bin/kind-$kind_version" ]; then
  GOBIN="$bin/kind-build" GOTOOLCHAIN=local CGO_ENABLED=0 \
    go install "sigs.k8s.io/kind@v$kind_version" >&2
  mv "$bin/kind-build/kind" "$bin/kind-$kind_version"
fi
ln -sf "kind-$kind_version" "$bin/kind"
echo "$bin"
