#!/usr/bin/env bash
# Builds kuma-cp, Kuma's control plane (github.com/kumahq/kuma/v2 v2.14.3),
# into .peers/kuma/ (project-local, nothing global):
#   .peers/kuma/bin/kuma-cp        built from the wrapper module beside this
#                                  file (go.mod, go.sum, main.go) with
#                                  -mod=readonly -trimpath, CGO_ENABLED=0, and
#                                  the version stamped as Kuma's release does
#   .peers/kuma/gomodcache, gocache, gopath
#                                  the go command's module cache, build cache
#                                  and GOPATH, all kept here
#   .peers/kuma/.installed         the marker the harness checks; written last,
#                                  its first line the sha256 of the lock files
#                                  (go.mod, go.sum, main.go, install.sh)
#
# Run from the repository root. Idempotent: when the marker's hash matches the
# lock files and the binary is there, it does nothing. Needs Go >= 1.26.5 (Kuma
# v2.14.3's go line; `go` on PATH, /usr/local/go/bin/go, or $GO); GOTOOLCHAIN=local,
# so the go command never fetches a toolchain. Modules come from the machine's
# GOPROXY; the go command checks each against go.sum. The caller's GOFLAGS are
# kept (e.g. GOFLAGS=-p=1 on a busy machine); -mod=readonly is added.
#
# Where ../shared/goproxy exists beside the repository (this project's
# machines and CI), it is put in front of the machine's GOPROXY: that proxy
# refuses every github.com/kumahq/* module (HTTP 403), and the folder serves
# exactly those five (kuma/v2 v2.14.3 and the four go-control-plane fork
# modules Kuma's replace lines name; its README.md). Elsewhere the public
# proxy serves the same versions, and go.sum judges the bytes either way.
set -euo pipefail

here="client-under-test/adapters/kuma"
if [[ ! -f "$here/go.mod" ]]; then
    echo "install.sh: run me from the repository root (no $here/go.mod here)" >&2
    exit 1
fi

go="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
if [[ ! -x "$go" ]]; then
    echo "install.sh: no go command (Go >= 1.26.5 needed; set \$GO)" >&2
    exit 1
fi

root="$PWD"
peers="$root/.peers/kuma"
marker="$peers/.installed"
bin="$peers/bin/kuma-cp"

lock_hash() {
    (cd "$here" && cat go.mod go.sum main.go install.sh 2>/dev/null) | sha256sum | cut -d' ' -f1
}

if [[ -f "$marker" && -x "$bin" ]] && [[ "$(head -n1 "$marker")" == "$(lock_hash)" ]]; then
    echo "install.sh: kuma-cp up to date ($bin)"
    exit 0
fi
mkdir -p "$peers/bin"
rm -f "$marker"

if [[ ! -s "$here/go.sum" ]]; then
    cat >&2 <<EOF
install.sh: $here/go.sum is missing: it is written by 'go mod tidy' in $here,
which needs a module proxy that serves github.com/kumahq/kuma/v2 v2.14.3 and
github.com/kumahq/go-control-plane{,/contrib,/envoy,/ratelimit} (*-kong-1):
the public one does; this project's refuses them (HTTP 403), and
../shared/goproxy serves them (see its README.md and $here/README.md).
EOF
    exit 1
fi

# The local proxy only where the folder is; the checksum database refuses the
# kumahq modules too, and go.sum already holds their hashes (four of them
# Kuma v2.14.3's own go.sum lines), so it is not asked for them.
shared_proxy="$root/../shared/goproxy"
if [[ -d "$shared_proxy" ]]; then
    export GOPROXY="file://$(cd "$shared_proxy" && pwd),$("$go" env GOPROXY)"
    export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/kumahq/*"
    echo "install.sh: GOPROXY=$GOPROXY"
fi

export GOMODCACHE="$peers/gomodcache"
export GOCACHE="$peers/gocache"
export GOPATH="$peers/gopath"
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly"
export GOTOOLCHAIN=local
export CGO_ENABLED=0

# What Kuma's release build stamps (its mk/build.mk LD_FLAGS): the zone sends
# these in node metadata (version.kumaCp) and the `version` header.
v=github.com/kumahq/kuma/v2/pkg/version
ldflags="-s -w"
ldflags+=" -X $v.version=2.14.3"
ldflags+=" -X $v.gitTag=v2.14.3"
ldflags+=" -X $v.gitCommit=0c7aaec033b7dad03c3a9f4d5b56eb6d941bfff9"
ldflags+=" -X $v.buildDate=2026-08-07T15:05:59Z"
ldflags+=" -X $v.Envoy=1.38.2"

"$go" version
# -modcacherw: the module cache stays deletable (rm -rf .peers/kuma).
(cd "$here" && "$go" build -mod=readonly -modcacherw -trimpath -ldflags "$ldflags" -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"

# Smoke checks: the binary carries the pinned Kuma and says its version.
if ! "$go" version -m "$bin" | grep -Eq '^\s+dep\s+github\.com/kumahq/kuma/v2\s+v2\.14\.3\s'; then
    echo "install.sh: kuma-cp was not built with github.com/kumahq/kuma/v2 v2.14.3:" >&2
    "$go" version -m "$bin" >&2
    exit 1
fi
if ! "$bin" version 2>/dev/null | grep -q '2\.14\.3'; then
    echo "install.sh: '$bin version' does not say 2.14.3:" >&2
    "$bin" version >&2 || true
    exit 1
fi

tmp="$(mktemp "$peers/.installed.XXXXXX")"
{
    lock_hash
    echo "kuma-cp v2.14.3 built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $("$go" env GOVERSION)"
} >"$tmp"
mv "$tmp" "$marker"
echo "install.sh: kuma-cp ready ($bin)"
