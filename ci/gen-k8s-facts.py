#!/usr/bin/env python3
"""Regenerate harness/data/k8s/<minor>.json: the feature gates and API
group/versions of each Kubernetes release `harness validate` knows.

Facts are read from the release's Go modules (through the Go module proxy,
with the local `go`), not copied: gate names, stages and defaults from the
`featuregate.Feature` constants and their versioned specs; API
group/versions from the k8s.io/api (plus apiextensions and aggregator)
package directories. Tests compare the result with the real servers
(kube-apiserver --help, discovery) for the releases the harness runs.

    python3 ci/gen-k8s-facts.py            # all releases below
    python3 ci/gen-k8s-facts.py 1.38       # only these minors
"""
import json
import os
import re
import subprocess
import sys
import tempfile

RELEASES = {
    "1.35": "1.35.4",
    "1.36": "1.36.4",
    "1.37": "1.37.1",
    # A pre-release minor (harness/src/k8s/release.rs PRERELEASES).
    "1.38": "1.38.0-beta.0",
}
# The Go toolchain a release's modules ask for when newer than the
# machine's (harness/src/tools/versions.rs GO_TOOLCHAINS).
TOOLCHAIN = {"1.38": "go1.27.3"}
OUT = os.path.join(os.path.dirname(__file__), "..", "harness", "data", "k8s")

# Where feature gates are declared, per module (path prefixes inside it).
GATE_SOURCES = {
    "k8s.io/kubernetes": ["pkg/features"],
    "k8s.io/apiserver": ["pkg/features"],
    "k8s.io/apiextensions-apiserver": ["pkg/features"],
    "k8s.io/client-go": ["features"],
    "k8s.io/component-base": ["featuregate", "logs/api/v1", "metrics/features", "zpages/features"],
    "k8s.io/controller-manager": ["pkg/features"],
}
# Where API types live: module -> directory holding <group>/<version>/.
API_SOURCES = {
    "k8s.io/api": "",
    "k8s.io/apiextensions-apiserver": "pkg/apis/apiextensions",
    "k8s.io/kube-aggregator": "pkg/apis/apiregistration",
}


def module_dir(module, version, toolchain="local"):
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            cwd=tmp, capture_output=True, text=True,
            env={**os.environ, "GOTOOLCHAIN": toolchain, "GOFLAGS": "-mod=mod"},
        )
    info = json.loads(out.stdout)
    if "Error" in info:
        sys.exit(f"go mod download {module}@{version}: {info['Error']}")
    return info["Dir"]


CONST = re.compile(r'^\s*(\w+)\s+(?:featuregate\.)?Feature\s*=\s*"(\w+)"', re.M)
# Untyped constants in a typed const block: `Name = "Name"` (kept only when
# a versioned spec exists for them).
UNTYPED = re.compile(r'^\s*(\w+)\s*=\s*"(\w+)"', re.M)
STAGE = re.compile(r"PreRelease:\s*(?:featuregate\.)?(Alpha|Beta|GA|Deprecated)\b")
DEFAULT = re.compile(r"Default:\s*(true|false)")


def go_files(root):
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".go") and not f.endswith("_test.go"):
                yield os.path.join(d, f)


def gates(dirs):
    consts, text = {}, ""
    for root in dirs:
        for path in go_files(root):
            src = open(path, encoding="utf-8").read()
            text += src
            for ident, name in CONST.findall(src):
                consts[ident] = (name, True)
            for ident, name in UNTYPED.findall(src):
                if ident == name and ident not in consts:
                    consts[ident] = (name, False)
    out = {}
    for ident, (name, typed) in consts.items():
        # The versioned spec block: `Ident: {` ... up to the closing `},` at the same indent.
        m = re.search(r"\n(\t+)(?:\w+\.)?" + re.escape(ident) + r":\s*\{(.*?)\n\1\},", text, re.S)
        stage, default = None, None
        if not m and not typed:
            continue
        if m:
            stages = STAGE.findall(m.group(2))
            defaults = DEFAULT.findall(m.group(2))
            stage = stages[-1].upper() if stages else None
            default = defaults[-1] == "true" if defaults else None
        out[name] = {"stage": stage, "default": default}
    return dict(sorted(out.items()))


GROUP = re.compile(r'GroupName\s*=\s*"([^"]*)"')
VERSION_DIR = re.compile(r"^v\d+((alpha|beta)\d+)?$")


def api_versions(module_dirs):
    out = set()
    for module, sub in API_SOURCES.items():
        base = os.path.join(module_dirs[module], sub)
        groups = [base] if sub else [os.path.join(base, g) for g in os.listdir(base)]
        for gdir in groups:
            if not os.path.isdir(gdir):
                continue
            for v in os.listdir(gdir):
                vdir = os.path.join(gdir, v)
                if not (VERSION_DIR.match(v) and os.path.isfile(os.path.join(vdir, "register.go"))):
                    continue
                src = open(os.path.join(vdir, "register.go"), encoding="utf-8").read()
                for cand in [src] + [open(p, encoding="utf-8").read() for p in go_files(gdir) if os.path.dirname(p) == gdir]:
                    m = GROUP.search(cand)
                    if m:
                        out.add(f"{m.group(1)}/{v}" if m.group(1) else v)
                        break
    return sorted(out)


def main():
    os.makedirs(OUT, exist_ok=True)
    wanted = sys.argv[1:] or list(RELEASES)
    unknown = [m for m in wanted if m not in RELEASES]
    if unknown:
        sys.exit(f"unknown minors {unknown}: this script knows {list(RELEASES)}")
    for minor in wanted:
        version = RELEASES[minor]
        staging = "v0." + version.split(".", 1)[1]
        go = TOOLCHAIN.get(minor, "local")
        dirs = {"k8s.io/kubernetes": module_dir("k8s.io/kubernetes", "v" + version, go)}
        for m in set(GATE_SOURCES) | set(API_SOURCES):
            if m not in dirs:
                dirs[m] = module_dir(m, staging, go)
        gate_dirs = [os.path.join(dirs[m], p) for m, ps in GATE_SOURCES.items() for p in ps]
        facts = {
            "generatedBy": "ci/gen-k8s-facts.py",
            "kubernetesVersion": version,
            "featureGates": gates([d for d in gate_dirs if os.path.isdir(d)]),
            "apiVersions": api_versions(dirs),
        }
        path = os.path.join(OUT, f"{minor}.json")
        with open(path, "w") as f:
            json.dump(facts, f, indent=1, sort_keys=False)
            f.write("\n")
        print(f"{path}: {len(facts['featureGates'])} gates, {len(facts['apiVersions'])} group/versions")


if __name__ == "__main__":
    main()
