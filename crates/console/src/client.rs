//! The gateway's HTTP API as seen by an approver.

use std::time::Duration;

use countersign_proto::approvals::{
    ApprovalList, DecisionResponse, EnrollRequest, EnrollResponse, PlanRecord,
};
use countersign_proto::describe::GatewayInfo;
use countersign_proto::dsse::Envelope;
use countersign_proto::error::ErrorEnvelope;
use reqwest::header::{ETAG, IF_NONE_MATCH};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::ConsoleError;

/// Plans may be large; anything beyond this is refused rather than held in memory.
const MAX_PLAN_BYTES: usize = 64 * 1024 * 1024;

#[derive(Clone)]
pub struct GatewayClient {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

/// A plan as fetched: the raw JSON it was digested from, and its typed reading.
#[derive(Debug, Clone)]
pub struct FetchedPlan {
    pub raw: Value,
    pub record: PlanRecord,
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
    pub fn new(base: &str, token: Option<String>) -> Result<GatewayClient, ConsoleError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ConsoleError::Protocol(e.to_string()))?;
        Ok(GatewayClient {
            http,
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
        let status = response.status();
        let bytes = self.body(response).await?;
        if !status.is_success() {
            return Err(gateway_error(status, &bytes));
        }
        serde_json::from_slice(&bytes).map_err(|e| ConsoleError::Protocol(e.to_string()))
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

    async fn call<B: Serialize, T: DeserializeOwned>(
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

    pub async fn enroll(&self, request: &EnrollRequest) -> Result<EnrollResponse, ConsoleError> {
        self.call(Method::POST, "/v1/approvers/enroll", Some(request))
            .await
    }

    /// Lists pending plans unless they are unchanged since `etag`.
    pub async fn pending(&self, etag: Option<&str>) -> Result<Poll, ConsoleError> {
        let mut builder = self.request(Method::GET, "/v1/approvals?status=pending");
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
        Ok(Poll::Changed {
            list: self.json(response).await?,
            etag,
            poll_interval,
        })
    }

    pub async fn plan(&self, plan_id: &str) -> Result<FetchedPlan, ConsoleError> {
        if plan_id.is_empty()
            || !plan_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(ConsoleError::Invalid(format!(
                "{plan_id:?} is not a plan id"
            )));
        }
        let raw: Value = self
            .call::<(), _>(Method::GET, &format!("/v1/plans/{plan_id}"), None)
            .await?;
        let record = serde_json::from_value(raw.clone())
            .map_err(|e| ConsoleError::Protocol(format!("plan {plan_id}: {e}")))?;
        Ok(FetchedPlan {
            raw: raw["plan"].clone(),
            record,
        })
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

fn gateway_error(status: StatusCode, body: &[u8]) -> ConsoleError {
    match serde_json::from_slice::<ErrorEnvelope>(body) {
        Ok(envelope) => ConsoleError::Gateway {
            code: envelope.error.code,
            message: envelope.error.message,
            details: envelope.error.details,
        },
        Err(_) => ConsoleError::Protocol(format!("HTTP {status} without an error envelope")),
    }
}
