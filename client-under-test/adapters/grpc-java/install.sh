#!/usr/bin/env bash
# Builds the grpc-java adapter into .peers/grpc-java/ (project-local, nothing global):
#   .peers/grpc-java/grpc-java-adapter.jar   one shaded jar: grpc-xds 1.85.1, its
#                                            dependencies and the adapter
#                                            (META-INF/services merged)
#   .peers/grpc-java/adapter.jsa             a class-data-sharing archive of the
#                                            classes a run loads up to its first
#                                            DiscoveryRequest (fast JVM start)
#   .peers/grpc-java/m2/                     Maven's local repository
#   .peers/grpc-java/settings.xml            the user settings Maven is given
#                                            (so ~/.m2/settings.xml is not read)
#   .peers/grpc-java/build/                  Maven's build directory
#   .peers/grpc-java/.installed              the marker the harness checks; written
#                                            last, with the sha256 of pom.xml,
#                                            maven.lock and the sources
#
# Run from the repository root (the harness does: see adapter.json).
# Idempotent: a second run reuses the local repository. Needs Java >= 17 and
# Maven >= 3.8 (`java`, `mvn` on PATH, or $JAVA / $MVN). Artifacts come from the
# repositories the machine's Maven is configured with (its global settings);
# Maven checks each download's checksum strictly (-C), and this script then
# checks every jar and pom in the local repository against the sha256s in
# maven.lock: an artifact that is not there, or differs, fails the install.
#
#   install.sh --update-lock   rebuilds from an empty local repository and
#                              rewrites maven.lock from what Maven downloaded
#                              (README.md, "The lock")
set -euo pipefail

here="client-under-test/adapters/grpc-java"
if [[ ! -f "$here/pom.xml" || ! -f "$here/maven.lock" ]]; then
    echo "install.sh: run me from the repository root (no $here/pom.xml or maven.lock here)" >&2
    exit 1
fi
update_lock=0
if [[ "${1:-}" == "--update-lock" ]]; then
    update_lock=1
fi

java="${JAVA:-java}"
mvn="${MVN:-mvn}"
command -v "$java" >/dev/null || { echo "install.sh: no java (Java >= 17 needed; set \$JAVA)" >&2; exit 1; }
command -v "$mvn" >/dev/null || { echo "install.sh: no mvn (Maven >= 3.8 needed; set \$MVN)" >&2; exit 1; }

root="$PWD"
peers=".peers/grpc-java"
repo="$root/$peers/m2"
marker="$peers/.installed"
jar="$peers/grpc-java-adapter.jar"
jsa="$peers/adapter.jsa"
mkdir -p "$peers"
rm -f "$marker"
if [[ $update_lock == 1 ]]; then
    rm -rf "$repo"
fi
mkdir -p "$repo"

# User settings of our own: the local repository here, offline off, nothing
# else (mirrors and proxies stay the machine's, from Maven's global settings).
cat >"$peers/settings.xml" <<EOF
<settings xmlns="http://maven.apache.org/SETTINGS/1.2.0">
  <localRepository>$repo</localRepository>
  <interactiveMode>false</interactiveMode>
</settings>
EOF

# -B batch, -C strict checksums, -s our settings, the repository and the build
# directory under .peers/. MAVEN_ARGS / MAVEN_OPTS from the caller are kept.
"$mvn" -B -C -q \
    -s "$peers/settings.xml" \
    -Dmaven.repo.local="$repo" \
    -Dadapter.build.dir="$root/$peers/build" \
    -f "$here/pom.xml" \
    package

# The lock: every jar and pom Maven put in the local repository (the
# dependencies and the plugins with theirs), with its sha256.
list_repo() {
    (cd "$repo" && find . -type f \( -name '*.jar' -o -name '*.pom' \) -printf '%P\n' | LC_ALL=C sort | xargs -r sha256sum)
}
if [[ $update_lock == 1 ]]; then
    {
        echo "# sha256 of every jar and pom the grpc-java adapter's build downloads (dependencies,"
        echo "# plugins and theirs), paths relative to the Maven local repository."
        echo "# Written by: bash $here/install.sh --update-lock (from an empty repository)."
        echo "# install.sh checks the local repository against it after every build."
        list_repo
    } >"$here/maven.lock.tmp"
    mv "$here/maven.lock.tmp" "$here/maven.lock"
    echo "install.sh: wrote $here/maven.lock ($(grep -vc '^#' "$here/maven.lock") artifacts)"
fi
if ! diff <(grep -v '^#' "$here/maven.lock") <(list_repo) >"$peers/lock.diff"; then
    echo "install.sh: the local repository does not match $here/maven.lock (< lock, > downloaded):" >&2
    cat "$peers/lock.diff" >&2
    echo "install.sh: if pom.xml changed on purpose, run: bash $here/install.sh --update-lock" >&2
    exit 1
fi
rm -f "$peers/lock.diff"

cp "$peers/build/grpc-java-adapter.jar" "$jar.tmp"
mv "$jar.tmp" "$jar"

# Smoke check: the services were merged (the xds: resolver is registered) and
# the build used grpc-xds 1.85.1 (the training run below checks what runs).
if ! unzip -p "$jar" META-INF/services/io.grpc.NameResolverProvider | grep -q '^io.grpc.xds.XdsNameResolverProvider$'; then
    echo "install.sh: $jar does not register io.grpc.xds.XdsNameResolverProvider (services not merged)" >&2
    exit 1
fi
if ! grep -q ' io/grpc/grpc-xds/1.85.1/grpc-xds-1.85.1.jar$' "$here/maven.lock"; then
    echo "install.sh: the build did not use io.grpc:grpc-xds 1.85.1" >&2
    exit 1
fi

# Class-data sharing: record the classes a run loads (Training.java: the
# adapter's own commands against a local server that answers nothing) into a
# dynamic AppCDS archive. The command and class path must be the ones
# adapter.json starts (same relative jar path, from the repository root).
rm -f "$jsa" "$jsa.tmp"
env -u GRPC_XDS_BOOTSTRAP -u GRPC_XDS_BOOTSTRAP_CONFIG -u XDS_CONFORMANCE_PROFILE \
    XDS_CONFORMANCE_JAVA_LOG_LEVEL=INFO \
    "$java" -XX:ArchiveClassesAtExit="$jsa.tmp" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Xlog:cds=off -Xlog:cds+dynamic=off \
    -jar "$jar" --train >"$peers/train.log" 2>&1 || {
        echo "install.sh: the class-data-sharing run failed:" >&2
        tail -40 "$peers/train.log" >&2
        exit 1
    }
if ! grep -q '^\[train\] grpc-java 1.85.1$' "$peers/train.log"; then
    echo "install.sh: the jar does not run grpc-java 1.85.1:" >&2
    tail -40 "$peers/train.log" >&2
    exit 1
fi
mv "$jsa.tmp" "$jsa"

tmp="$(mktemp "$peers/.installed.XXXXXX")"
{
    echo "grpc-java adapter built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $("$java" -version 2>&1 | head -1)"
    (cd "$here" && find pom.xml maven.lock src -type f | LC_ALL=C sort | xargs sha256sum)
} >"$tmp"
mv "$tmp" "$marker"
echo "install.sh: grpc-java adapter ready ($jar)"
