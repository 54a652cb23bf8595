//! The seed 002 success envelope that `invoke` answers with.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SuccessEnvelope {
    pub success: bool,
    pub content: String,
    pub provider: String,
    pub usage: Usage,
    /// Diagnostic and execution context; clients tolerate keys they do not know (seed 002).
    pub metadata: Map<String, Value>,
    pub images: Vec<Value>,
    pub files: Vec<Value>,
    pub videos: Vec<Value>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl SuccessEnvelope {
    pub fn new(content: impl Into<String>, metadata: Map<String, Value>) -> Self {
        SuccessEnvelope {
            success: true,
            content: content.into(),
            provider: "countersign".to_owned(),
            usage: Usage::default(),
            metadata,
            images: Vec::new(),
            files: Vec::new(),
            videos: Vec::new(),
        }
    }
}
