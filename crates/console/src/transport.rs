//! How the console reaches a gateway: HTTPS, trusting the system's roots and any CA this process
//! was told to trust, or plain HTTP to a loopback address only.

use std::path::Path;
use std::sync::RwLock;

use countersign_proto::loopback::is_loopback_host;

use crate::error::ConsoleError;

/// Certificates trusted beyond the system's roots (a private CA, a self-signed gateway).
static EXTRA_ROOTS: RwLock<Vec<reqwest::Certificate>> = RwLock::new(Vec::new());

/// Trusts every certificate in the PEM file at `path` for the clients made from now on
/// (`--ca-cert`, `COUNTERSIGN_CA_CERT`).
pub fn trust_ca_file(path: &Path) -> Result<(), ConsoleError> {
    let pem = std::fs::read(path)
        .map_err(|e| ConsoleError::Invalid(format!("cannot read {}: {e}", path.display())))?;
    let certificates = reqwest::Certificate::from_pem_bundle(&pem)
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            ConsoleError::Invalid(format!("{} holds no PEM certificate", path.display()))
        })?;
    EXTRA_ROOTS
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .extend(certificates);
    Ok(())
}

/// A client builder that trusts the system's roots and the extra ones, and follows no redirect:
/// the protocol has none, and a followed one could carry the token to another scheme or host.
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    let roots = EXTRA_ROOTS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    roots.iter().fold(
        reqwest::Client::builder()
            .use_rustls_tls()
            .redirect(reqwest::redirect::Policy::none()),
        |builder, root| builder.add_root_certificate(root.clone()),
    )
}

/// Accepts `https://` anywhere and `http://` to loopback (127.0.0.0/8, ::1, localhost) only:
/// anywhere else the token, the enrollment and the plans would cross the network in the clear.
/// A URL with a user part (`https://gw.example.com@relay.example`) or a control character (which
/// the parser drops silently) reads as something it is not; it is refused, not cleaned.
pub fn check_url(url: &str) -> Result<(), ConsoleError> {
    if url.chars().any(char::is_control) {
        return Err(ConsoleError::Invalid(format!(
            "{url:?}: a gateway URL holds no control characters"
        )));
    }
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| ConsoleError::Invalid(format!("{url:?} is not a gateway URL: {e}")))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(ConsoleError::Invalid(format!(
            "{url:?}: a gateway URL names no user; the host is the part after '@'"
        )));
    }
    let host = parsed.host_str().unwrap_or_default();
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback_host(host) => Ok(()),
        "http" => Err(ConsoleError::InsecureTransport(format!(
            "{url} is plain HTTP to {host}, which is not this machine: use https://"
        ))),
        other => Err(ConsoleError::Invalid(format!(
            "{url:?}: a gateway URL is https:// (or http:// to loopback), not {other}://"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_for_loopback_only() {
        for fine in [
            "https://gateway.example.com",
            "https://203.0.113.7:7780",
            "http://127.0.0.1:7780",
            "http://127.8.9.10",
            "http://[::1]:7780",
            "http://localhost:7780",
            "http://LOCALHOST",
        ] {
            assert!(check_url(fine).is_ok(), "{fine}");
        }
        for insecure in [
            "http://gateway.example.com",
            "http://203.0.113.7:7780",
            "http://[2001:db8::1]",
            "http://localhost.example.com",
            "http://128.0.0.1",
            "http://0.0.0.0:7780",
        ] {
            let e = check_url(insecure).unwrap_err();
            assert_eq!(e.code(), "insecure_transport", "{insecure}: {e}");
        }
        for invalid in [
            "ftp://127.0.0.1",
            "127.0.0.1:7780",
            "not a url",
            "https://gw.example.com@relay.example",
            "https://user:pw@gw.example.com",
            "https://relay.example/#\n\nto   https://gw.example.com",
            "https://gw.exa\tmple.com",
        ] {
            assert_eq!(check_url(invalid).unwrap_err().code(), "invalid_input");
        }
    }

    #[test]
    fn a_file_without_certificates_is_refused() {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), "not a certificate").unwrap();
        assert_eq!(
            trust_ca_file(file.path()).unwrap_err().code(),
            "invalid_input"
        );
    }
}
