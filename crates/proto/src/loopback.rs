//! Which hosts are this machine: the one place where plain HTTP may carry a token or a key (the
//! console's gateway URL, the gateway's provider URLs).

use std::net::IpAddr;

/// `localhost` (any case), 127.0.0.0/8 and ::1, as a URL's host (IPv6 in brackets or bare).
pub fn is_loopback_host(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
