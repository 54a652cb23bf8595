//! The gateway's HTTP API as seen by an approver.

use std::time::Duration;

use countersign_proto::approvals::{
    ApprovalList, ApproverKeys, ApproverProfile, DecisionResponse, PlanRecord,
};
use countersign_proto::describe::{Describe, GatewayInfo};
use countersign_proto::dsse::Envelope;
use countersign_proto::enrollment::{
    BoundEnrollRequest, BoundEnrollResponse, IdentityProof, IdentityRequest,
};
use countersign_proto::error::ErrorEnvelope;
use countersign_proto::guard::{SubjectItem, SubjectPage};
use countersign_proto::keys::RotatedKey;
use countersign_proto::standing::{StandingApproval, StandingList};
use countersign_proto::Credits;
use reqwest::header::{ETAG, IF_NONE_MATCH};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::ConsoleError;
use crate::transport;

/// Plans may be large; anything beyond this is refused rather than held in memory.
const MAX_PLAN_BYTES: usize = 64 * 1024 * 1024;
/// The protocol's largest subject set (PROTOCOL section 4).
const MAX_SUBJECTS: usize = 1_000_000;
/// Pending plans a console lists at most, across pages.
const MAX_QUEUE: usize = 1_000_000;

#[derive(Clone)]
pub struct GatewayClient {
    http: reqwest::Client,
    /// For the event stream: no overall timeout, but silence longer than a few heartbeats ends it.
    stream_http: reqwest::Client,
    base: String,
    token: Option<String>,
}

/// An event stream that has gone quiet for this long (three missed heartbeats) is dead.
pub const STREAM_SILENCE: Duration = Duration::from_secs(45);

/// An agent's budget as the gateway reports it to approvers.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Wallet {
    pub agent_id: String,
    pub limit_credits: Credits,
    pub spent_credits: Credits,
    pub remaining_credits: Credits,
}

/// The agent's wallet as `GET /v1/plans/{id}` reports it beside the plan.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct PlanWallet {
    pub agent_id: String,
    pub remaining_credits: Credits,
    pub limit_credits: Credits,
}

/// A plan as fetched: the raw JSON it was digested from, its typed reading, and the agent's
/// wallet when the gateway tells.
#[derive(Debug, Clone)]
pub struct FetchedPlan {
    pub raw: Value,
    pub record: PlanRecord,
    pub wallet: Option<PlanWallet>,
    /// The capability's title, when the gateway names it beside the plan.
    pub title: Option<String>,
}

/// The outcome of a conditional poll.
#[derive(Debug, Clone)]
pub enum Poll {
    NotModified {
        poll_interval: Option<u64>,
    },
    Changed {
        list: ApprovalList,
        etag: Option<String>,
        poll_interval: Option<u64>,
    },
}

impl GatewayClient {
    /// A client for the gateway at `base`: `https://`, or `http://` to loopback only.
    pub fn new(base: &str, token: Option<String>) -> Result<GatewayClient, ConsoleError> {
        transport::check_url(base)?;
        let http = transport::client_builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ConsoleError::Protocol(e.to_string()))?;
        let stream_http = transport::client_builder()
            .connect_timeout(Duration::from_secs(5))
            .read_timeout(STREAM_SILENCE)
            .build()
            .map_err(|e| ConsoleError::Protocol(e.to_string()))?;
        Ok(GatewayClient {
            http,
            stream_http,
            base: base.trim_end_matches('/').to_owned(),
            token,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn with_token(&self, token: &str) -> GatewayClient {
        GatewayClient {
            token: Some(token.to_owned()),
            ..self.clone()
        }
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let builder = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(token) => builder.bearer_auth(token),
            None => builder,
        }
    }

    async fn send(&self, builder: RequestBuilder) -> Result<Response, ConsoleError> {
        builder.send().await.map_err(|e| ConsoleError::Unreachable {
            url: self.base.clone(),
            reason: e.to_string(),
        })
    }

    async fn json<T: DeserializeOwned>(&self, response: Response) -> Result<T, ConsoleError> {
        parse_json(&self.success(response).await?)
    }

    /// The body of a successful answer; any other answer as the refusal or noise it is.
    async fn success(&self, response: Response) -> Result<Vec<u8>, ConsoleError> {
        let status = response.status();
        let bytes = self.body(response).await?;
        if !status.is_success() {
            return Err(gateway_error(status, &bytes));
        }
        Ok(bytes)
    }

    async fn body(&self, mut response: Response) -> Result<Vec<u8>, ConsoleError> {
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| ConsoleError::Unreachable {
                url: self.base.clone(),
                reason: e.to_string(),
            })?
        {
            if bytes.len() + chunk.len() > MAX_PLAN_BYTES {
                return Err(ConsoleError::Protocol(format!(
                    "the answer is larger than {MAX_PLAN_BYTES} bytes"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }

    pub(crate) async fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<T, ConsoleError> {
        let mut builder = self.request(method, path);
        if let Some(body) = body {
            builder = builder.json(body);
        }
        let response = self.send(builder).await?;
        self.json(response).await
    }

    pub async fn gateway(&self) -> Result<GatewayInfo, ConsoleError> {
        self.call::<(), _>(Method::GET, "/v1/gateway", None).await
    }

    /// The gateway's identity key and its signature over `nonce`.
    pub async fn identity(&self, nonce: &str) -> Result<IdentityProof, ConsoleError> {
        let request = IdentityRequest {
            nonce: nonce.to_owned(),
        };
        self.call(Method::POST, "/v1/gateway/identity", Some(&request))
            .await
    }

    pub async fn enroll_bound(
        &self,
        request: &BoundEnrollRequest,
    ) -> Result<BoundEnrollResponse, ConsoleError> {
        self.call(Method::POST, "/v1/approvers/enroll/bound", Some(request))
            .await
    }

    /// Lists pending plans unless they are unchanged since `etag`.
    pub async fn pending(&self, etag: Option<&str>) -> Result<Poll, ConsoleError> {
        self.pending_in_pages(etag, None).await
    }

    /// [`pending`](Self::pending), asking for pages of `limit` plans (the gateway's own size
    /// when `None`) and following them to the end.
    pub async fn pending_in_pages(
        &self,
        etag: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Poll, ConsoleError> {
        let limit = limit.map(|l| format!("&limit={l}")).unwrap_or_default();
        let mut builder =
            self.request(Method::GET, &format!("/v1/approvals?status=pending{limit}"));
        if let Some(etag) = etag {
            builder = builder.header(IF_NONE_MATCH, etag);
        }
        let response = self.send(builder).await?;
        let poll_interval = response
            .headers()
            .get("x-poll-interval")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        if response.status() == StatusCode::NOT_MODIFIED {
            return Ok(Poll::NotModified { poll_interval });
        }
        let etag = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut list: ApprovalList = self.json(response).await?;
        // A queue too long for one answer comes in pages. The first page's ETag stands for the
        // whole list: if the queue moved while the rest was read, the next poll lists it again.
        let mut next = list.next_cursor.take();
        while let Some(cursor) = next {
            id_checked(&cursor, "queue cursor")?;
            let path = format!("/v1/approvals?status=pending{limit}&cursor={cursor}");
            let mut page: ApprovalList = self.call::<(), _>(Method::GET, &path, None).await?;
            // A gateway that pages in circles, or without end, is not followed forever.
            let stuck = page.items.is_empty() && page.next_cursor.is_some();
            if stuck || list.items.len() + page.items.len() > MAX_QUEUE {
                return Err(ConsoleError::Protocol(format!(
                    "the queue's pages do not end within {MAX_QUEUE} plans"
                )));
            }
            list.items.append(&mut page.items);
            next = page.next_cursor;
        }
        Ok(Poll::Changed {
            list,
            etag,
            poll_interval,
        })
    }

    pub async fn plan(&self, plan_id: &str) -> Result<FetchedPlan, ConsoleError> {
        id_checked(plan_id, "plan")?;
        let request = self.request(Method::GET, &format!("/v1/plans/{plan_id}"));
        let response = self.send(request).await?;
        parse_plan(plan_id, &self.success(response).await?)
    }

    /// Enrolls a new key for the calling approver; `proof` is signed with the current one. Only
    /// a 200 that names a key is an acceptance, and only an error envelope whose code travels
    /// with its own HTTP status is a refusal (`ConsoleError::Gateway`); anything else is
    /// `Protocol` or `Unreachable`, so the caller can tell a refusal from noise.
    pub async fn rotate_key(&self, proof: &Envelope) -> Result<RotatedKey, ConsoleError> {
        let response = self
            .send(self.request(Method::POST, "/v1/approvers/keys").json(proof))
            .await?;
        let status = response.status();
        let bytes = self.body(response).await?;
        if status == StatusCode::OK {
            let rotated: RotatedKey = serde_json::from_slice(&bytes)
                .map_err(|e| ConsoleError::Protocol(format!("the rotation's answer: {e}")))?;
            id_checked(&rotated.key_id, "key").map_err(|_| {
                ConsoleError::Protocol("the rotation's answer names no key".to_owned())
            })?;
            return Ok(rotated);
        }
        match gateway_error(status, &bytes) {
            ConsoleError::Gateway { code, .. } if code.http_status() != status.as_u16() => Err(
                ConsoleError::Protocol(format!("HTTP {status} with the error code {code}")),
            ),
            e => Err(e),
        }
    }

    /// An agent's budget: `limit_credits`, `spent_credits`, `remaining_credits`.
    pub async fn wallet(&self, agent_id: &str) -> Result<Wallet, ConsoleError> {
        id_checked(agent_id, "agent")?;
        self.call::<(), _>(Method::GET, &format!("/v1/agents/{agent_id}/wallet"), None)
            .await
    }

    /// This approver as the gateway's approval policy sees them: person and teams.
    pub async fn me(&self) -> Result<ApproverProfile, ConsoleError> {
        self.call::<(), _>(Method::GET, "/v1/approvers/me", None)
            .await
    }

    /// The plan's audit trails: previews, decisions as received, executions with their journals.
    pub async fn audit(&self, plan_id: &str) -> Result<Value, ConsoleError> {
        id_checked(plan_id, "plan")?;
        self.call::<(), _>(Method::GET, &format!("/v1/audit?plan_id={plan_id}"), None)
            .await
    }

    /// Asks the gateway for a fresh preview of the same request; the new plan supersedes the old.
    pub async fn refresh(&self, plan_id: &str) -> Result<FetchedPlan, ConsoleError> {
        id_checked(plan_id, "plan")?;
        let raw: Value = self
            .call::<(), _>(Method::POST, &format!("/v1/plans/{plan_id}/refresh"), None)
            .await?;
        fetched(plan_id, raw)
    }

    /// One page of an effect's subjects, ids ascending.
    pub async fn subjects(
        &self,
        plan_id: &str,
        effect_id: &str,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<SubjectPage, ConsoleError> {
        id_checked(plan_id, "plan")?;
        id_checked(effect_id, "effect")?;
        let mut path = format!("/v1/plans/{plan_id}/effects/{effect_id}/subjects?limit={limit}");
        if let Some(cursor) = cursor {
            id_checked(cursor, "cursor")?;
            path.push_str(&format!("&cursor={cursor}"));
        }
        self.call::<(), _>(Method::GET, &path, None).await
    }

    /// Every subject id of an effect, paged in the largest pages the protocol allows.
    pub async fn all_subjects(
        &self,
        plan_id: &str,
        effect_id: &str,
    ) -> Result<Vec<String>, ConsoleError> {
        let mut ids = Vec::new();
        self.each_subject_page(plan_id, effect_id, |page| {
            ids.extend(page.into_iter().map(|item| item.id));
        })
        .await?;
        Ok(ids)
    }

    /// Hands every page of an effect's subjects to `each` as it arrives, in the gateway's order,
    /// so that a caller keeping the set in its own form never holds it twice.
    pub async fn each_subject_page(
        &self,
        plan_id: &str,
        effect_id: &str,
        mut each: impl FnMut(Vec<SubjectItem>),
    ) -> Result<(), ConsoleError> {
        let mut received = 0usize;
        let mut cursor: Option<String> = None;
        loop {
            let page = self
                .subjects(plan_id, effect_id, cursor.as_deref(), 5000)
                .await?;
            if page.items.is_empty() && page.next_cursor.is_some() {
                return Err(ConsoleError::Protocol(
                    "an empty subject page that claims more".to_owned(),
                ));
            }
            received += page.items.len();
            // A gateway that pages past its own total, or in circles, is not followed forever.
            if received as u64 > page.total || received > MAX_SUBJECTS {
                return Err(ConsoleError::Protocol(format!(
                    "the subject pages run past their total of {}",
                    page.total
                )));
            }
            each(page.items);
            match page.next_cursor {
                Some(next) if Some(&next) == cursor.as_ref() => {
                    return Err(ConsoleError::Protocol(
                        "a subject cursor that does not advance".to_owned(),
                    ))
                }
                Some(next) => cursor = Some(next),
                None => return Ok(()),
            }
        }
    }

    /// Opens `GET /v1/events`, resuming after `last_event_id` when given.
    pub async fn events(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<crate::live::events::EventStream, ConsoleError> {
        let mut builder = self
            .stream_http
            .get(format!("{}/v1/events", self.base))
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(token) = &self.token {
            builder = builder.bearer_auth(token);
        }
        if let Some(id) = last_event_id {
            builder = builder.header("last-event-id", id);
        }
        let response = self.send(builder).await?;
        if !response.status().is_success() {
            let status = response.status();
            let bytes = self.body(response).await?;
            return Err(gateway_error(status, &bytes));
        }
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            return Err(ConsoleError::Protocol(
                "/v1/events did not answer with an event stream".to_owned(),
            ));
        }
        Ok(crate::live::events::EventStream::new(
            response,
            self.base.clone(),
        ))
    }

    /// A page of the gateway's standing approvals, newest first, from `cursor`.
    pub async fn standing(&self, cursor: Option<&str>) -> Result<StandingList, ConsoleError> {
        let path = match cursor {
            Some(cursor) => {
                id_checked(cursor, "standing cursor")?;
                format!("/v1/standing?cursor={cursor}")
            }
            None => "/v1/standing".to_owned(),
        };
        self.call::<(), _>(Method::GET, &path, None).await
    }

    /// Every standing approval of the gateway, newest first, page after page.
    pub async fn all_standing(&self) -> Result<Vec<StandingApproval>, ConsoleError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self.standing(cursor.as_deref()).await?;
            items.extend(page.items);
            match page.next_cursor {
                Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                _ => return Ok(items),
            }
        }
    }

    /// Sends a signed standing approval.
    pub async fn create_standing(
        &self,
        envelope: &Envelope,
    ) -> Result<StandingApproval, ConsoleError> {
        self.call(Method::POST, "/v1/standing", Some(envelope))
            .await
    }

    /// Revokes one of this approver's standing approvals at once.
    pub async fn revoke_standing(&self, id: &str) -> Result<StandingApproval, ConsoleError> {
        id_checked(id, "standing approval")?;
        self.call::<(), _>(Method::POST, &format!("/v1/standing/{id}/revoke"), None)
            .await
    }

    /// Asks the gateway to preview `params` instead of the plan's request, as its successor.
    pub async fn amend(&self, plan_id: &str, params: &Value) -> Result<FetchedPlan, ConsoleError> {
        id_checked(plan_id, "plan")?;
        let body = serde_json::json!({ "params": params });
        let raw: Value = self
            .call(
                Method::POST,
                &format!("/v1/plans/{plan_id}/amend"),
                Some(&body),
            )
            .await?;
        fetched(plan_id, raw)
    }

    /// A capability's description: its input schema, for the amend editor.
    pub async fn describe(&self, capability_id: &str) -> Result<Describe, ConsoleError> {
        let fine = !capability_id.is_empty()
            && capability_id.len() <= 200
            && capability_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
        if !fine {
            return Err(ConsoleError::Invalid(format!(
                "{capability_id:?} is not a capability id"
            )));
        }
        self.call::<(), _>(
            Method::GET,
            &format!("/v1/capabilities/{capability_id}"),
            None,
        )
        .await
    }

    /// Every approver key the gateway accepted: what an exported history is checked against.
    pub async fn approver_keys(&self) -> Result<ApproverKeys, ConsoleError> {
        self.call::<(), _>(Method::GET, "/v1/approvers/keys", None)
            .await
    }

    pub async fn decide(
        &self,
        plan_id: &str,
        envelope: &Envelope,
    ) -> Result<DecisionResponse, ConsoleError> {
        self.call(
            Method::POST,
            &format!("/v1/plans/{plan_id}/decisions"),
            Some(envelope),
        )
        .await
    }
}

/// Ids go into URL paths and keyring entries: only the characters the gateway's ids are made of.
pub(crate) fn id_checked(id: &str, what: &str) -> Result<(), ConsoleError> {
    let fine = !id.is_empty()
        && id.len() <= 200
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if fine {
        Ok(())
    } else {
        Err(ConsoleError::Invalid(format!("{id:?} is not a {what} id")))
    }
}

/// JSON as the console reads every answer: a key twice has two meanings, and what is shown must be
/// what the digest covers, so such a body is refused.
fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ConsoleError> {
    countersign_proto::strict_json::check(bytes).map_err(ConsoleError::Protocol)?;
    serde_json::from_slice(bytes).map_err(|e| ConsoleError::Protocol(e.to_string()))
}

/// A plan record as the gateway sent it for `plan_id`: the record parsed, the signed plan kept as
/// it came (its digest is computed over that), the wallet and title beside it.
pub fn parse_plan(plan_id: &str, bytes: &[u8]) -> Result<FetchedPlan, ConsoleError> {
    fetched(plan_id, parse_json(bytes)?)
}

fn fetched(plan_id: &str, raw: Value) -> Result<FetchedPlan, ConsoleError> {
    let record = serde_json::from_value(raw.clone())
        .map_err(|e| ConsoleError::Protocol(format!("plan {plan_id}: {e}")))?;
    // Outside the signed plan and only informative: a wallet that does not parse is left out.
    let wallet = match raw.get("wallet").filter(|w| !w.is_null()) {
        Some(w) => serde_json::from_value(w.clone())
            .map_err(|e| tracing::warn!(error = %e, "the plan's wallet does not parse"))
            .ok(),
        None => None,
    };
    Ok(FetchedPlan {
        title: raw["title"].as_str().map(str::to_owned),
        raw: raw["plan"].clone(),
        record,
        wallet,
    })
}

fn gateway_error(status: StatusCode, body: &[u8]) -> ConsoleError {
    if let Ok(envelope) = serde_json::from_slice::<ErrorEnvelope>(body) {
        return ConsoleError::Gateway {
            code: envelope.error.code,
            message: envelope.error.message,
            details: envelope.error.details,
        };
    }
    match serde_json::from_slice::<UnknownError>(body) {
        Ok(unknown) if known_shape(&unknown.error.code) => ConsoleError::UnknownGateway {
            code: unknown.error.code,
            status: status.as_u16(),
            message: unknown.error.message,
            details: unknown.error.details,
        },
        _ => ConsoleError::Protocol(format!("HTTP {status} without an error envelope")),
    }
}

/// The error envelope with its code as plain text, for codes newer than this console.
#[derive(serde::Deserialize)]
struct UnknownError {
    error: UnknownErrorBody,
}

#[derive(serde::Deserialize)]
struct UnknownErrorBody {
    code: String,
    message: String,
    #[serde(default)]
    details: Value,
}

/// A code as the contract writes them (stable snake_case), so a garbled body is not shown as one.
fn known_shape(code: &str) -> bool {
    (1..=64).contains(&code.len())
        && code.starts_with(|c: char| c.is_ascii_lowercase())
        && code
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl crate::review::Pages for GatewayClient {
    async fn page(
        &self,
        plan_id: &str,
        effect_id: &str,
        cursor: Option<&str>,
    ) -> Result<SubjectPage, ConsoleError> {
        self.subjects(plan_id, effect_id, cursor, 5000).await
    }
}
