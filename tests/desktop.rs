//! The real `countersign` binary, driven by tauri-driver and WebKitWebDriver: a plan appears in
//! the queue, a click on Approve makes the gateway report it approved; the page reaches only the
//! commands its capability grants.
//! Run under Xvfb and `tests/with-keyring.sh` (as `make test` does).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use countersign_e2e::relay::{Relay, Tamper};
use countersign_e2e::retention;
use countersign_e2e::webdriver::{queue_row, Driver};
use countersign_e2e::TestGateway;
use fantoccini::{Client, Locator};
use serde_json::json;

fn desktop_binary() -> PathBuf {
    let path = std::env::var_os("COUNTERSIGN_DESKTOP_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/countersign")
        });
    assert!(
        path.exists(),
        "{} is missing: build it first (make test does)",
        path.display()
    );
    path
}

/// Starts tauri-driver with `env` for the app and opens a session on `binary`.
async fn launch(binary: &Path, env: &[(&str, &str)]) -> anyhow::Result<(Driver, Client)> {
    let mut env: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, v.to_string())).collect();
    env.push(("WEBKIT_DISABLE_DMABUF_RENDERER", "1".to_owned()));
    let driver = Driver::start(&env).await?;
    let client = driver.session(binary).await?;
    Ok((driver, client))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_in_the_window_approves_at_the_gateway() -> anyhow::Result<()> {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "no X display: run through `make test`, which starts Xvfb"
    );
    let binary = desktop_binary();
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let code = gateway.invite("Dana").await?;
    let preview = agent
        .dry_run("projects.settings.update", retention("prj_184", 14))
        .await?;
    let plan_id = preview["plan_id"].as_str().unwrap().to_owned();

    let data_dir = tempfile::tempdir()?;
    let (_driver, client) = launch(
        &binary,
        &[
            ("COUNTERSIGN_GATEWAY_URL", gateway.url.as_str()),
            ("COUNTERSIGN_ENROLLMENT_CODE", code.as_str()),
            ("COUNTERSIGN_APPROVER_NAME", "Dana"),
            (
                "COUNTERSIGN_DATA_DIR",
                &data_dir.path().display().to_string(),
            ),
        ],
    )
    .await?;

    let row = queue_row(&plan_id);
    client
        .wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css(&row))
        .await?
        .click()
        .await?;
    let shown = format!("[data-testid='plan'][data-plan-id='{plan_id}']");
    client
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css(&shown))
        .await?;
    let approve = client.find(Locator::Css("[data-testid='approve']")).await?;
    assert_eq!(approve.attr("disabled").await?, None, "Approve is disabled");
    approve.click().await?;

    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let record = agent.plan(&plan_id).await?;
        let status = record["status"].as_str().unwrap_or_default().to_owned();
        if status == "approved" || Instant::now() > deadline {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(status, "approved");
    let record = agent.plan(&plan_id).await?;
    assert_eq!(record["approvals"]["received"][0]["display_name"], "Dana");

    client
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("[data-testid='notice']"))
        .await?;
    client.close().await?;
    Ok(())
}

/// What a script in the page gets when it invokes `command` over the IPC bridge directly.
async fn invoke_from_page(client: &Client, command: &str) -> anyhow::Result<serde_json::Value> {
    let script = "const [command, done] = arguments;
        window.__TAURI_INTERNALS__.invoke(command, {label: 'main'})
            .then(value => done({ok: value ?? null}),
                  error => done({refused: typeof error === 'string' ? error : JSON.stringify(error)}));";
    Ok(client.execute_async(script, vec![json!(command)]).await?)
}

/// The capability file grants the window the app's own commands and event listening, nothing
/// else: a script that got into the page cannot reach the rest of Tauri's core.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webview_may_call_only_what_its_capability_grants() -> anyhow::Result<()> {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "no X display: run through `make test`, which starts Xvfb"
    );
    let data_dir = tempfile::tempdir()?;
    let (_driver, client) = launch(
        &desktop_binary(),
        &[
            (
                "COUNTERSIGN_DATA_DIR",
                &data_dir.path().display().to_string(),
            ),
            ("COUNTERSIGN_SIM_INTERVAL_MS", "0"),
        ],
    )
    .await?;
    client
        .wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css("[data-testid='pending-count']"))
        .await?;

    // Granted: the command runs (its own answer may be an error, as long as it is not the ACL's).
    let granted = invoke_from_page(&client, "status").await?;
    let answer = granted["refused"].as_str().unwrap_or_default();
    assert!(
        !answer.contains("not allowed"),
        "status is granted: {granted}"
    );
    assert!(
        granted.get("ok").is_some() || answer.contains("\"code\""),
        "{granted}"
    );
    for command in [
        "plugin:app|version",
        "plugin:window|close",
        "plugin:webview|print",
    ] {
        let answer = invoke_from_page(&client, command).await?;
        let refused = answer["refused"].as_str().unwrap_or_default();
        assert!(refused.contains("not allowed"), "{command}: {answer}");
    }
    client.close().await?;
    Ok(())
}

/// What a script in the page gets when it invokes `command` with `args`.
async fn invoke_with(
    client: &Client,
    command: &str,
    args: serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let script = "const [command, args, done] = arguments;
        window.__TAURI_INTERNALS__.invoke(command, args)
            .then(value => done({ok: value ?? null}),
                  error => done({refused: error}));";
    Ok(client
        .execute_async(script, vec![json!(command), args])
        .await?)
}

/// A script in the page (here WebDriver's) cannot send the approver's token anywhere: neither
/// `enroll` with a relay that proxies the real gateway and an invite naming its identity key,
/// nor `save_settings` pointing at the relay, gets a header to it or changes the settings. The
/// provider plan's prompt is on its first screen, and the page's policy refuses what it names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_script_cannot_send_the_credential_elsewhere() -> anyhow::Result<()> {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "no X display: run through `make test`, which starts Xvfb"
    );
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let prompt = "Summarize the customer file of Acme Corp.";
    let preview = agent
        .dry_run(
            "text.generate",
            json!({"model": "gpt-4o", "max_tokens": 2048,
                   "messages": [{"role": "user", "content": prompt}]}),
        )
        .await?;
    let plan_id = preview["plan_id"].as_str().unwrap().to_owned();
    let relay = Relay::start(&gateway.url, Tamper::default()).await?;
    let genuine = gateway.invite("Dana").await?;
    let (_, fingerprint) = genuine.rsplit_once('.').unwrap();
    let forged = format!("cse_{}.{fingerprint}", "0".repeat(43));

    let data_dir = tempfile::tempdir()?;
    let config_dir = tempfile::tempdir()?;
    let settings = config_dir.path().join("settings.json");
    let (_driver, client) = launch(
        &desktop_binary(),
        &[
            // Left set after the first enrollment, it must never enroll anywhere again.
            ("COUNTERSIGN_ENROLLMENT_CODE", forged.as_str()),
            ("COUNTERSIGN_APPROVER_NAME", "Dana"),
            (
                "COUNTERSIGN_DATA_DIR",
                &data_dir.path().display().to_string(),
            ),
            (
                "COUNTERSIGN_CONFIG_DIR",
                &config_dir.path().display().to_string(),
            ),
        ],
    )
    .await?;
    client
        .wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css("[data-testid='pending-count']"))
        .await?;
    // The app starts on its demo gateway; the page enrolls with the configured one, as an
    // approver would in Settings.
    let enrolled = invoke_with(
        &client,
        "enroll",
        json!({"gatewayUrl": gateway.url, "code": genuine}),
    )
    .await?;
    assert!(enrolled.get("ok").is_some(), "{enrolled}");
    let before = std::fs::read_to_string(&settings)?;
    assert!(before.contains(&gateway.url), "{before}");

    // Request as signed: the prompt that leaves for the provider, on the plan's first screen.
    client
        .wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css(&queue_row(&plan_id)))
        .await?
        .click()
        .await?;
    let request = client
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css("[data-testid='request']"))
        .await?;
    let text = request.text().await?;
    assert!(text.to_lowercase().contains("request as signed"), "{text}");
    assert!(text.contains(prompt), "{text}");
    client
        .find(Locator::Css("[data-testid='request-leaves']"))
        .await?;

    let refused = invoke_with(
        &client,
        "enroll",
        json!({"gatewayUrl": relay.url, "code": forged}),
    )
    .await?;
    assert_eq!(
        refused["refused"]["code"], "credential_elsewhere",
        "{refused}"
    );
    let mut moved: serde_json::Value = serde_json::from_str(&before)?;
    moved["gateway_url"] = json!(relay.url);
    let refused = invoke_with(&client, "save_settings", json!({"settings": moved})).await?;
    assert_eq!(refused["refused"]["code"], "not_enrolled", "{refused}");
    assert_eq!(
        relay.authorized(),
        Vec::<String>::new(),
        "no token reached the relay"
    );
    assert_eq!(
        std::fs::read_to_string(&settings)?,
        before,
        "the settings are unchanged"
    );

    // The page's policy: no <base>, no plugin objects, no frames, no form posts.
    let script = "const done = arguments[0];
        const seen = [];
        document.addEventListener('securitypolicyviolation',
            (e) => seen.push(e.effectiveDirective || e.violatedDirective));
        const base = document.createElement('base');
        base.href = 'https://relay.example/';
        document.head.appendChild(base);
        const object = document.createElement('object');
        object.data = 'https://relay.example/x.swf';
        document.body.appendChild(object);
        const frame = document.createElement('iframe');
        frame.src = 'https://relay.example/';
        document.body.appendChild(frame);
        setTimeout(() => { base.remove(); object.remove(); frame.remove(); done(seen); }, 1000);";
    let seen = client.execute_async(script, vec![]).await?;
    for directive in ["base-uri", "object-src", "frame-src"] {
        assert!(
            seen.as_array()
                .is_some_and(|s| s.iter().any(|d| d.as_str() == Some(directive))),
            "{directive} is enforced: {seen}"
        );
    }
    client.close().await?;
    let gateway_id = gateway.state.gateway_id.clone();
    countersign_console::signing::signer::Signer::forget(&gateway_id)?;
    Ok(())
}
