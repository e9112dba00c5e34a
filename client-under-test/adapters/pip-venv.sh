# Sourced by the adapters' install scripts (grpcio, envoy): a project-local
# Python venv with a hash-locked requirements file installed into it.
#
#   pip_venv_install VENV LOCK PYTHON_CHECK
#
# VENV          where the venv lives (under .peers/<adapter>/)
# LOCK          the requirements lock file (every package pinned with its sha256)
# PYTHON_CHECK  a Python expression that must be true of the interpreter the
#               lock was made for, e.g. `sys.version_info[:2] == (3, 11)`;
#               `sys` and `platform` are imported
#
# Uses `python3` from PATH, or $PYTHON. Reuses a venv that still runs and
# passes the check (the interpreter it points at may be gone). Installs
# with --require-hashes (a dependency missing from the lock fails) and
# --only-binary (never builds from source), then runs `pip check`.
pip_venv_install() {
    local venv="$1" lock="$2" check="$3"
    local python="${PYTHON:-python3}"
    local probe="import sys, platform; sys.exit(0 if ($check) else 1)"
    if ! "$python" -c "$probe"; then
        echo "install.sh: $lock needs a Python where \`$check\`; got: $("$python" -c 'import sys, platform; print(sys.version.split()[0], platform.system(), platform.machine())')" >&2
        return 1
    fi
    if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "$probe" 2>/dev/null; then
        echo "install.sh: reusing $venv"
    else
        rm -rf "$venv"
        "$python" -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install \
        --disable-pip-version-check --no-input --quiet \
        --require-hashes --only-binary=:all: \
        -r "$lock"
    "$venv/bin/python" -m pip check --disable-pip-version-check
}
