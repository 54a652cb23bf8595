//! What this approver signed, read back and handed on: the history of decisions this console sent
//! (`history`) and the in-toto export others verify offline (`intoto`).

pub mod history;
pub mod intoto;
