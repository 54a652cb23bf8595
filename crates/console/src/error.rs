//! Console errors; what crosses into a UI is `{code, message}`.

use countersign_proto::ErrorCode;
use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The gateway answered with a protocol error.
    #[error("{message}")]
    Gateway {
        code: ErrorCode,
        message: String,
        details: Value,
    },
    /// A well-formed error whose code this console does not know (a newer gateway's): kept with
    /// its message, status and details, never turned into a protocol failure.
    #[error("{message}")]
    UnknownGateway {
        code: String,
        status: u16,
        message: String,
        details: Value,
    },
    #[error("the gateway at {url} is unreachable: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the gateway sent something that is not the protocol: {0}")]
    Protocol(String),
    #[error("the plan's digest does not match: the gateway says {claimed}, the plan hashes to {computed}")]
    DigestMismatch { claimed: String, computed: String },
    #[error("this plan cannot be approved: {0}")]
    NotApprovable(String),
    #[error("not enrolled with this gateway")]
    NotEnrolled,
    /// Plain HTTP to a host that is not this machine.
    #[error("refusing an unencrypted connection: {0}")]
    InsecureTransport(String),
    /// The gateway did not prove the identity key the invite names, or did not sign what it
    /// registered: a relay, or another gateway.
    #[error("the gateway's identity does not match the invite: {0}")]
    GatewayIdentity(String),
    /// This machine already holds credentials for the gateway; they are kept, not replaced.
    #[error(
        "this machine is already enrolled with gateway {gateway_id}; its credentials are kept"
    )]
    AlreadyEnrolled { gateway_id: String },
    /// The credential for this gateway belongs to another origin: its token is not sent here.
    #[error(
        "this machine's credential for gateway {gateway_id} was enrolled with {enrolled} and is \
         sent nowhere else; it was not sent to {asked}. If the gateway moved, move the \
         credential (Settings, or `countersign move-credential`)"
    )]
    CredentialElsewhere {
        gateway_id: String,
        enrolled: String,
        asked: String,
    },
    #[error("the OS keyring failed: {0}")]
    Keyring(String),
    #[error("the local journal failed: {0}")]
    Storage(String),
    /// Signed and written to the outbox, but not yet answered: it will be sent again.
    #[error("the decision is queued and will be sent again: {0}")]
    Queued(String),
    /// The approver declined the confirmation: nothing was signed or written.
    #[error("not approved: the confirmation was declined")]
    Cancelled,
    #[error("{0}")]
    Invalid(String),
}

/// The form errors take across IPC and in `--json` output.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ErrorView {
    pub code: String,
    pub message: String,
}

impl ConsoleError {
    /// A stable snake_case code: the gateway's own, or one of the console's.
    pub fn code(&self) -> String {
        match self {
            ConsoleError::Gateway { code, .. } => code.as_str().to_owned(),
            ConsoleError::UnknownGateway { code, .. } => code.clone(),
            ConsoleError::Unreachable { .. } => "unreachable".to_owned(),
            ConsoleError::Protocol(_) => "protocol_error".to_owned(),
            ConsoleError::DigestMismatch { .. } => "digest_mismatch".to_owned(),
            ConsoleError::NotApprovable(_) => "not_approvable".to_owned(),
            ConsoleError::NotEnrolled => "not_enrolled".to_owned(),
            ConsoleError::InsecureTransport(_) => "insecure_transport".to_owned(),
            ConsoleError::GatewayIdentity(_) => "gateway_identity_mismatch".to_owned(),
            ConsoleError::AlreadyEnrolled { .. } => "already_enrolled".to_owned(),
            ConsoleError::CredentialElsewhere { .. } => "credential_elsewhere".to_owned(),
            ConsoleError::Keyring(_) => "keyring_error".to_owned(),
            ConsoleError::Storage(_) => "storage_error".to_owned(),
            ConsoleError::Queued(_) => "queued".to_owned(),
            ConsoleError::Cancelled => "cancelled".to_owned(),
            ConsoleError::Invalid(_) => "invalid_input".to_owned(),
        }
    }

    /// This error's code with a message of the caller's, one that says what to do here.
    pub fn view_with(&self, message: String) -> ErrorView {
        ErrorView {
            code: self.code(),
            message,
        }
    }

    pub fn view(&self) -> ErrorView {
        ErrorView {
            code: self.code(),
            message: self.to_string(),
        }
    }
}

impl From<keyring::Error> for ConsoleError {
    fn from(e: keyring::Error) -> Self {
        ConsoleError::Keyring(e.to_string())
    }
}
