#!/usr/bin/env bash
# Builds the grpc-go adapter into .peers/grpc-go/ (project-local, nothing global):
#   .peers/grpc-go/bin/grpc-go-adapter   the adapter (main.go), built with
#                                        -mod=readonly -trimpath against the
#                                        modules go.mod and go.sum pin
#   .peers/grpc-go/gomodcache, gocache, gopath
#                                        the go command's module cache, build
#                                        cache and GOPATH, all kept here
#   .peers/grpc-go/.installed            the marker the harness checks; written
#                                        last, with the sha256 of go.mod, go.sum
#                                        and the sources
#
# Run from the repository root (the harness does: see adapter.json).
# Idempotent: a second run reuses the module and build caches. Needs Go >= 1.26
# (`go` on PATH, /usr/local/go/bin/go, or $GO); GOTOOLCHAIN=local, so the go
# command never fetches a toolchain. Modules come from the machine's GOPROXY;
# the go command checks every module against the hashes in go.sum.
set -euo pipefail

here="client-under-test/adapters/grpc-go"
if [[ ! -f "$here/go.sum" ]]; then
    echo "install.sh: run me from the repository root (no $here/go.sum here)" >&2
    exit 1
fi

go="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
if [[ ! -x "$go" ]]; then
    echo "install.sh: no go command (Go >= 1.26 needed; set \$GO)" >&2
    exit 1
fi

root="$PWD"
peers="$root/.peers/grpc-go"
marker="$peers/.installed"
mkdir -p "$peers/bin"
rm -f "$marker"

export GOMODCACHE="$peers/gomodcache"
export GOCACHE="$peers/gocache"
export GOPATH="$peers/gopath"
export GOFLAGS=-mod=readonly
export GOTOOLCHAIN=local
export CGO_ENABLED=0

"$go" version
# -modcacherw: the module cache stays deletable (rm -rf .peers/grpc-go).
(cd "$here" && "$go" build -mod=readonly -modcacherw -trimpath -o "$peers/bin/grpc-go-adapter.tmp" .)
mv "$peers/bin/grpc-go-adapter.tmp" "$peers/bin/grpc-go-adapter"

# Smoke check: the binary carries the pinned grpc-go.
if ! "$go" version -m "$peers/bin/grpc-go-adapter" | grep -Eq '^\s+dep\s+google\.golang\.org/grpc\s+v1\.85\.0\s'; then
    echo "install.sh: the adapter was not built with google.golang.org/grpc v1.85.0:" >&2
    "$go" version -m "$peers/bin/grpc-go-adapter" >&2
    exit 1
fi

tmp="$(mktemp "$peers/.installed.XXXXXX")"
{
    echo "grpc-go adapter built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $("$go" env GOVERSION)"
    (cd "$here" && sha256sum go.mod go.sum ./*.go)
} >"$tmp"
mv "$tmp" "$marker"
echo "install.sh: grpc-go adapter ready ($peers/bin/grpc-go-adapter)"
