//! The seed 002 success envelope that `invoke` answers with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Credits;

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

/// Seed 002's normalized billing object: tokens where a provider counts them, and for every
/// capability the credits the wallet was charged and the units they were charged for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub credits: Credits,
    /// What the credits counted (`characters`, `images`, `predict_ms`, `subjects`, …).
    #[serde(default)]
    pub units: BTreeMap<String, u64>,
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
