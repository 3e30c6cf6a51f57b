# Sourced by the scripts that keep a venv of their own on a given Python (test-django6.sh, test-oldest.sh).
#
#   find_python 3.12 test-django6    # prints the interpreter's path, or says how to get one and exits
#
# The candidates, in order: $PYTHON312 (for 3.12; $PYTHON311 for 3.11...), python3.12 on PATH, then pyenv's. A
# pyenv shim named python3.12 is on PATH even where no 3.12 is selected: each candidate is tried, not its name.
find_python() {
    local version=$1 caller=$2 override found
    override="PYTHON${version//./}"
    for found in ${!override:-} "$(command -v "python$version" || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version"*/bin/python; do
        if [[ -n $found ]] && "$found" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$version'.split('.'))))" >/dev/null 2>&1; then
            echo "$found"
            return
        fi
    done
    echo "$caller: no Python $version (set $override, or install it: pyenv install $version)" >&2
    exit 1
}
