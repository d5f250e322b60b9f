#!/usr/bin/env bash
# Fails when the committed BPF object or its Go bindings are stale: it
# regenerates them with bpf2go (go generate ./bpf) and compares with git.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang >/dev/null || { echo "check-generated: clang missing: run scripts/setup.sh" >&2; exit 1; }
go generate ./bpf
if ! git diff --quiet -- bpf/ || [ -n "$(git ls-files --others --exclude-standard bpf/)" ]; then
  echo "check-generated: FAIL: bpf/ generated files are stale; commit the output of 'go generate ./bpf':" >&2
  git status --short -- bpf/ >&2
  exit 1
fi
echo "check-generated: bpf/ generated files match the C sources"
