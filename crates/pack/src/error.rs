//! The one error every layer answers with: a stable code of the protocol, a message for people,
//! and details; the server renders it into seed 002's error envelope.

use countersign_proto::plan::{Violation, ViolationDetail};
use countersign_proto::ErrorCode;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Value,
    /// The model provider whose failure this reports; `None` is the gateway itself ("system").
    pub provider: Option<&'static str>,
    /// Whether this very request may succeed later, where the code alone would say otherwise
    /// (a provider's rate limit on a plan the failed call used up).
    pub retryable: Option<bool>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            details: Value::Object(Default::default()),
            provider: None,
            retryable: None,
        }
    }

    pub fn from_provider(mut self, provider: &'static str) -> Self {
        self.provider = Some(provider);
        self
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    pub fn not_found(what: &str) -> Self {
        ApiError::new(ErrorCode::NotFound, format!("No such {what}."))
    }

    /// A `validation_error` whose `details.violations` has seed 000's violation form.
    pub fn validation(pointer: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        let violation = Violation {
            code: "validation_error".to_owned(),
            message: message.clone(),
            hint: "Call describe(id) and resend a request that matches the protocol.".to_owned(),
            retryable: false,
            schema_pointer: pointer.to_owned(),
            details: vec![ViolationDetail {
                schema_pointer: pointer.to_owned(),
                message: message.clone(),
            }],
            audit_id: None,
        };
        ApiError::new(ErrorCode::ValidationError, message)
            .with_details(serde_json::json!({ "violations": [violation] }))
    }
}

/// SQLite's primary result codes for a database that cannot take writes now.
const SQLITE_READONLY: i64 = 8;
const SQLITE_FULL: i64 = 13;

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        tracing::error!(error = %e, "store error");
        if takes_no_writes(&e) {
            return ApiError::new(
                ErrorCode::StorageUnavailable,
                "The gateway's store takes no writes now (full, read-only or unreachable); \
                 nothing was written. Try again later.",
            );
        }
        ApiError::new(
            ErrorCode::Internal,
            "The gateway could not complete the request.",
        )
    }
}

/// Whether the store refused a write because it is full, read-only or gone, rather than because
/// of the request.
fn takes_no_writes(e: &sqlx::Error) -> bool {
    let db = match e {
        sqlx::Error::Database(db) => db,
        // The connection to a PostgreSQL server broke (the server restarted, or ended it).
        sqlx::Error::Io(_) => return true,
        _ => return false,
    };
    if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        // read_only_sql_transaction, disk_full, the server shutting down or ending the session
        // (operator intervention: 57P01–57P03), and connection exceptions.
        let code = pg.code();
        return matches!(code, "25006" | "53100")
            || code.starts_with("57P")
            || code.starts_with("08");
    }
    // Extended codes carry the primary one in their low byte (SQLITE_READONLY_DBMOVED, …).
    let primary = db
        .code()
        .and_then(|c| c.parse::<i64>().ok())
        .map(|c| c & 0xff);
    matches!(primary, Some(SQLITE_FULL | SQLITE_READONLY))
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        tracing::error!(error = %e, "internal error");
        ApiError::new(
            ErrorCode::Internal,
            "The gateway could not complete the request.",
        )
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(e: serde_json::Error) -> Self {
        anyhow::Error::from(e).into()
    }
}
