# Sourced by the ensure-*.sh scripts: `split_url URL DEFAULT_PORT` splits a server's URL,
# scheme://[user[:password]@]host[:port][/path][?query], into the globals userinfo, host and port: host 127.0.0.1
# when empty, DEFAULT_PORT when none is given. An IPv6 host is written in brackets: redis://[::1]:6379/0.

split_url() {
    local hostport=${1#*://}
    hostport=${hostport%%/*}      # drop /path
    userinfo=
    if [[ $hostport == *@* ]]; then
        userinfo=${hostport%@*}
        hostport=${hostport##*@}  # drop user:password@
    fi
    hostport=${hostport%%\?*}     # drop ?query
    if [[ $hostport == \[* ]]; then # [::1]:6379
        host=${hostport%%]*}; host=${host#[}
        port=${hostport##*]}; port=${port#:}
    elif [[ $hostport == *:* ]]; then
        host=${hostport%%:*}; port=${hostport##*:}
    else
        host=$hostport; port=
    fi
    host=${host:-127.0.0.1}
    port=${port:-$2}
}
