//! What an external capability's call gets, and what it answers.

use countersign_proto::envelope::Usage;
use countersign_proto::Credits;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// One call of an approved plan.
#[derive(Clone, Copy)]
pub struct ExternalCall<'a> {
    pub params: &'a Value,
    /// The approved maximum: the charge never exceeds it, and a call that would is cut off.
    pub budget: Credits,
}

/// A call's answer in seed 002's terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    pub content: String,
    pub usage: Usage,
    pub metadata: Map<String, Value>,
    pub images: Vec<Value>,
    pub files: Vec<Value>,
    pub videos: Vec<Value>,
}

/// How a call ended, and what it cost whichever way it ended.
#[derive(Debug, Clone)]
pub struct Called {
    /// Who answered, as the envelope's `provider` names it.
    pub provider: &'static str,
    pub outcome: Result<Output, ApiError>,
    /// What the call's usage says was spent, at most the budget (the engine holds it there).
    pub charged: Credits,
    /// The call certainly did no work: the plan may run again.
    pub nothing_done: bool,
}
