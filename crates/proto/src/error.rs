//! Error codes of PROTOCOL section 1 and the seed 002 error envelope.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every stable error code and the HTTP status it always travels with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    ValidationError,
    Unauthenticated,
    BadSignature,
    Forbidden,
    NotEligible,
    NotFound,
    MethodNotAllowed,
    DryRunRequired,
    ApprovalRequired,
    PlanStale,
    PlanExpired,
    PlanNotPending,
    PlanAlreadyExecuted,
    NonceReused,
    IdempotencyConflict,
    DigestMismatch,
    AudienceMismatch,
    StatementExpired,
    BudgetExceeded,
    PayloadTooLarge,
    QuotaExceeded,
    RateLimited,
    StorageUnavailable,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    ProviderRefused,
    ProviderBadResponse,
    ProviderMisconfigured,
    PolicyDenied,
    PolicyError,
    Internal,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 32] = [
        ErrorCode::ValidationError,
        ErrorCode::Unauthenticated,
        ErrorCode::BadSignature,
        ErrorCode::Forbidden,
        ErrorCode::NotEligible,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::DryRunRequired,
        ErrorCode::ApprovalRequired,
        ErrorCode::PlanStale,
        ErrorCode::PlanExpired,
        ErrorCode::PlanNotPending,
        ErrorCode::PlanAlreadyExecuted,
        ErrorCode::NonceReused,
        ErrorCode::IdempotencyConflict,
        ErrorCode::DigestMismatch,
        ErrorCode::AudienceMismatch,
        ErrorCode::StatementExpired,
        ErrorCode::BudgetExceeded,
        ErrorCode::PayloadTooLarge,
        ErrorCode::QuotaExceeded,
        ErrorCode::RateLimited,
        ErrorCode::StorageUnavailable,
        ErrorCode::ProviderRateLimited,
        ErrorCode::ProviderTimeout,
        ErrorCode::ProviderUnavailable,
        ErrorCode::ProviderRefused,
        ErrorCode::ProviderBadResponse,
        ErrorCode::ProviderMisconfigured,
        ErrorCode::PolicyDenied,
        ErrorCode::PolicyError,
        ErrorCode::Internal,
    ];

    pub fn http_status(self) -> u16 {
        use ErrorCode::*;
        match self {
            ValidationError | DigestMismatch | AudienceMismatch | StatementExpired => 422,
            Unauthenticated | BadSignature => 401,
            Forbidden | NotEligible | PolicyDenied => 403,
            NotFound => 404,
            MethodNotAllowed => 405,
            DryRunRequired => 428,
            ApprovalRequired | PlanStale | PlanExpired | PlanNotPending | PlanAlreadyExecuted
            | NonceReused | IdempotencyConflict => 409,
            BudgetExceeded => 402,
            PayloadTooLarge => 413,
            QuotaExceeded | RateLimited => 429,
            StorageUnavailable => 503,
            ProviderRateLimited => 429,
            ProviderTimeout => 504,
            ProviderUnavailable | ProviderBadResponse | ProviderMisconfigured => 502,
            ProviderRefused => 422,
            PolicyError | Internal => 500,
        }
    }

    /// The same request may succeed later unchanged: the gateway's state refused nothing.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::Internal
                | ErrorCode::StorageUnavailable
                | ErrorCode::RateLimited
                | ErrorCode::ProviderRateLimited
                | ErrorCode::ProviderTimeout
                | ErrorCode::ProviderUnavailable
        )
    }

    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            ValidationError => "validation_error",
            Unauthenticated => "unauthenticated",
            BadSignature => "bad_signature",
            Forbidden => "forbidden",
            NotEligible => "not_eligible",
            NotFound => "not_found",
            MethodNotAllowed => "method_not_allowed",
            DryRunRequired => "dry_run_required",
            ApprovalRequired => "approval_required",
            PlanStale => "plan_stale",
            PlanExpired => "plan_expired",
            PlanNotPending => "plan_not_pending",
            PlanAlreadyExecuted => "plan_already_executed",
            NonceReused => "nonce_reused",
            IdempotencyConflict => "idempotency_conflict",
            DigestMismatch => "digest_mismatch",
            AudienceMismatch => "audience_mismatch",
            StatementExpired => "statement_expired",
            BudgetExceeded => "budget_exceeded",
            PayloadTooLarge => "payload_too_large",
            QuotaExceeded => "quota_exceeded",
            RateLimited => "rate_limited",
            StorageUnavailable => "storage_unavailable",
            ProviderRateLimited => "provider_rate_limited",
            ProviderTimeout => "provider_timeout",
            ProviderUnavailable => "provider_unavailable",
            ProviderRefused => "provider_refused",
            ProviderBadResponse => "provider_bad_response",
            ProviderMisconfigured => "provider_misconfigured",
            PolicyDenied => "policy_denied",
            PolicyError => "policy_error",
            Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `{"success": false, "error": {...}, "provider": "system", "metadata": {"trace_id": ...}}`;
/// `provider` names a model provider when its failure is what the error reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorEnvelope {
    pub success: bool,
    pub error: ErrorBody,
    pub provider: String,
    pub metadata: ErrorMetadata,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default)]
    pub details: Value,
    /// Whether the same request may succeed later unchanged; follows the code.
    #[serde(default)]
    pub retryable: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorMetadata {
    pub trace_id: String,
}

impl ErrorEnvelope {
    pub fn new(
        code: ErrorCode,
        message: impl Into<String>,
        details: Value,
        trace_id: &str,
    ) -> Self {
        ErrorEnvelope {
            success: false,
            error: ErrorBody {
                code,
                message: message.into(),
                details,
                retryable: code.retryable(),
            },
            provider: "system".to_owned(),
            metadata: ErrorMetadata {
                trace_id: trace_id.to_owned(),
            },
        }
    }

    pub fn from_provider(mut self, provider: &str) -> Self {
        provider.clone_into(&mut self.provider);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_wire_form() {
        for code in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(code).unwrap(),
                Value::String(code.as_str().to_owned())
            );
        }
    }

    #[test]
    fn statuses_follow_the_table() {
        assert_eq!(ErrorCode::PlanStale.http_status(), 409);
        assert_eq!(ErrorCode::DigestMismatch.http_status(), 422);
        assert_eq!(ErrorCode::BudgetExceeded.http_status(), 402);
        assert_eq!(ErrorCode::DryRunRequired.http_status(), 428);
        assert_eq!(ErrorCode::BadSignature.http_status(), 401);
        assert_eq!(ErrorCode::QuotaExceeded.http_status(), 429);
        assert_eq!(ErrorCode::RateLimited.http_status(), 429);
    }

    #[test]
    fn error_body_has_no_success_only_members() {
        let e = ErrorEnvelope::new(ErrorCode::NotFound, "no plan", Value::Null, "trc_1");
        let v = serde_json::to_value(&e).unwrap();
        for member in ["content", "usage", "images", "files", "videos"] {
            assert!(v.get(member).is_none());
        }
        assert_eq!(v["error"]["code"], "not_found");
    }
}
