# Sourced by the ensure-*.sh scripts: install Debian packages with apt-get, as root or through sudo, or fail
# saying what needed root. `apt_install WHO WHY PACKAGE...` prints "WHO: installing PACKAGE... (WHY)".

as_root() {
    if [[ $(id -u) == 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        # Ask for a password only where someone can type it (make run); CI has no terminal and must not hang.
        if [[ -t 0 ]]; then sudo "$@"; else sudo -n "$@"; fi
    else
        echo "${APT_INSTALL_WHO:-apt-install}: need root (or sudo) to run: $*" >&2
        return 1
    fi
}

apt_install() {
    local who=$1 why=$2
    shift 2
    APT_INSTALL_WHO=$who
    echo "$who: installing $* ($why)" >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}
