#!/usr/bin/env bash
# Make sure a PostgreSQL server answers, and lets the URL's user in, at the given URL (default: $TEST_POSTGRES_URL,
# else postgres://postgres@127.0.0.1:5432/postgres). Used by scripts/test-postgres.sh, as scripts/ensure-redis.sh is
# by `make test`. If none answers and the host is local: start the installed cluster on that port
# (pg_ctlcluster), or install Debian's postgresql when missing. A cluster installed here is a throwaway one for
# development and tests, so its loopback connections are made `trust` (no password), as CI's is. A remote server
# that does not answer is an error: we never try to start something on another machine.
#
# Usage: scripts/ensure-postgres.sh [postgres://user@host:port/name]
set -euo pipefail

url=${1:-${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}}

scheme=${url%%://*}
case $scheme in
    postgres|postgresql|pgsql) ;;
    *)
        echo "ensure-postgres: only postgres:// URLs can be checked or started here, got scheme '$scheme'" >&2
        exit 2
        ;;
esac
source "$(dirname "$0")/split-url.sh"
split_url "$url" 5432
user=${userinfo%%:*}
user=${user:-postgres}
password=
[[ $userinfo == *:* ]] && password=${userinfo#*:}

source "$(dirname "$0")/apt-install.sh"

answers() {
    command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h "$host" -p "$port" -t 2
}

# The maintenance database, not the URL's: the test runner creates its own (test_<name>) from there.
lets_in() {
    PGPASSWORD=$password PGCONNECT_TIMEOUT=5 psql -X -q -h "$host" -p "$port" -U "$user" -d postgres \
        -c 'SELECT 1' >/dev/null 2>&1
}

check_login() {
    if lets_in; then
        exit 0
    fi
    echo "ensure-postgres: PostgreSQL answers at $host:$port but does not let user '$user' in: give the password" \
        "in the URL (postgres://$user:PASSWORD@$host:$port/...) or allow the user in pg_hba.conf" >&2
    PGPASSWORD=$password psql -X -h "$host" -p "$port" -U "$user" -d postgres -c 'SELECT 1' 2>&1 | tail -n 3 >&2 || true
    exit 1
}

if answers; then
    check_login
fi

case $host in
    127.*|localhost|::1) ;;
    *)
        echo "ensure-postgres: PostgreSQL at $host:$port does not answer, and it is not local, so not starting one." >&2
        exit 1
        ;;
esac

installed_here=false
if ! command -v pg_ctlcluster >/dev/null 2>&1 || [[ -z $(pg_lsclusters -h 2>/dev/null) ]]; then
    apt_install ensure-postgres "no PostgreSQL server installed" postgresql postgresql-client
    installed_here=true
    # A server of another installation may have been there all along, unseen without the client tools.
    if answers; then
        check_login
    fi
fi

# The cluster set to listen on this port (Debian's `main` on 5432), whatever its version, and whether it runs.
read -r version cluster status < <(pg_lsclusters -h | awk -v port="$port" '$3 == port { print $1, $2, $4; exit }') \
    || true
if [[ -z ${version:-} ]]; then
    echo "ensure-postgres: no PostgreSQL cluster is set to listen on port $port (pg_lsclusters lists:" \
        "$(pg_lsclusters -h | awk '{ print $1 "/" $2 " on " $3 }' | paste -sd, -))" >&2
    exit 1
fi

# A cluster installed here, or one the machine's image ships stopped (Debian's package, never started), is a
# throwaway one that this script starts: its loopback connections need no password, as on CI's machines. Our lines
# go first, as pg_hba.conf's first match wins, and only once. A cluster that already runs is someone's: left as is.
if $installed_here || [[ $status != online ]]; then
    hba=/etc/postgresql/$version/$cluster/pg_hba.conf
    if ! as_root grep -q '^host all all 127.0.0.1/32 trust$' "$hba"; then
        echo "ensure-postgres: letting loopback connections in without a password ($hba)" >&2
        as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
    fi
fi

if [[ $status == online ]]; then
    if ! $installed_here; then
        echo "ensure-postgres: PostgreSQL $version/$cluster runs on port $port but does not answer at $host" \
            "(its listen_addresses in /etc/postgresql/$version/$cluster/postgresql.conf?)" >&2
        exit 1
    fi
    # Started by the package's postinst: have it read the new pg_hba.conf.
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" "$cluster" reload
else
    echo "ensure-postgres: starting PostgreSQL $version/$cluster on port $port" >&2
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" "$cluster" start
fi

for _ in $(seq 1 50); do
    if answers; then
        check_login
    fi
    sleep 0.2
done
echo "ensure-postgres: PostgreSQL $version/$cluster on port $port did not answer within 10 s" >&2
tail -n 20 "/var/log/postgresql/postgresql-$version-$cluster.log" >&2 2>/dev/null || true
exit 1
