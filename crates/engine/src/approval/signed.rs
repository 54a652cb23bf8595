//! An approver's signed statement as its envelope came over the wire, opened the one way every
//! kind is opened: the envelope parsed, the key one of this approver's active keys, the
//! signature and canonical payload checked, the statement naming its signer and this gateway.

use countersign_proto::dsse::Envelope;
use countersign_proto::statement::{Signed, StatementError};
use countersign_proto::ErrorCode;

use crate::accounts::{self, callers::Approver};
use crate::{ApiError, ApiResult, Engine};

/// The statement `approver` signed, and the envelope's text, kept verbatim as its audit.
pub async fn open<S: Signed>(
    engine: &Engine,
    approver: &Approver,
    body: &[u8],
) -> ApiResult<(S, String)> {
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::validation("", "The envelope is not UTF-8 JSON."))?;
    let envelope: Envelope = serde_json::from_str(text)
        .map_err(|e| ApiError::validation("", format!("The body is not a DSSE envelope: {e}")))?;
    let signature = envelope
        .signature()
        .map_err(|e| ApiError::validation("/signatures", e.to_string()))?;
    if envelope.payload_type != S::PAYLOAD_TYPE {
        return Err(ApiError::validation(
            "/payloadType",
            format!("The payload type must be {}.", S::PAYLOAD_TYPE),
        ));
    }
    let key = accounts::active_key(engine.store.pool(), &approver.id, &signature.keyid)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::BadSignature,
                format!(
                    "Key {} is not an active key of this approver.",
                    signature.keyid
                ),
            )
        })?;
    let statement = match S::open(&envelope, &key) {
        Ok(statement) => statement,
        Err(StatementError::Dsse(e)) => {
            return Err(ApiError::new(ErrorCode::BadSignature, e.to_string()))
        }
        Err(e) => return Err(ApiError::validation("/payload", e.to_string())),
    };
    let names = statement.names();
    if names.approver_id != approver.id || names.key_id != signature.keyid {
        return Err(ApiError::validation(
            "/payload",
            "The statement names another approver or key than the one that signed it.",
        ));
    }
    if names.audience != engine.gateway_id {
        return Err(ApiError::new(
            ErrorCode::AudienceMismatch,
            format!(
                "The statement is addressed to {}, not this gateway.",
                names.audience
            ),
        ));
    }
    Ok((statement, text.to_owned()))
}
