//! A call through the MCP proxy in the real desktop binary: the published filesystem server
//! behind the gateway, an agent's `files.write_file` waiting, and the approver seeing which
//! server's tool it calls, the arguments as signed and the file's text before and after (light
//! and dark to target/screenshots), then signing it; the file then holds the signed text.

use countersign_e2e::TestGateway;
use serde_json::json;

use crate::app::{serial, App, Launch};
use crate::demo_plans::{approve_in_window, preview};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxied_file_write_shows_its_server_tool_and_diff_and_runs_once_signed(
) -> anyhow::Result<()> {
    let _one = serial().await;
    let root = tempfile::tempdir()?;
    let file = root.path().join("release-notes.md");
    std::fs::write(
        &file,
        "# Release notes\n\nThe queue opens on the plans that wait for you.\nExports are signed.\n",
    )?;
    let gateway = TestGateway::before_files(root.path()).await?;
    let agent = gateway.agent("ops").await?;
    let after = "# Release notes\n\nThe queue opens on the plans that wait for you.\n\
                 Exports are signed and verified.\n";
    let plan = preview(
        &agent,
        "files.write_file",
        json!({"path": file, "content": after}),
    )
    .await?;
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    app.open(&plan).await?;

    let call = app.text("[data-testid='mcp-call']").await?;
    assert!(call.ends_with("write_file of the server files"), "{call}");
    assert_eq!(app.count("[data-testid='mcp-call'] .chip.mcp").await?, 1);
    let request = app.text("[data-testid='request-leaves']").await?;
    assert!(request.contains("on the MCP server files"), "{request}");
    let changes = app.text("[data-testid='pane-changes']").await?;
    assert!(changes.contains("signed and verified"), "{changes}");
    assert!(
        app.count("[data-testid='pane-changes'] mark.word").await? > 0,
        "the text's change is marked word by word"
    );
    app.shoot("mcp-proxied-write").await?;
    assert_eq!(
        std::fs::read_to_string(&file)?.lines().count(),
        4,
        "reviewing writes nothing"
    );

    approve_in_window(&app, &agent, &plan).await?;
    let ran = agent.invoke("files.write_file", &plan).await?;
    assert_eq!(ran.status, 200, "{}", ran.body);
    assert_eq!(std::fs::read_to_string(&file)?, after);
    let again = agent.invoke("files.write_file", &plan).await?;
    assert_ne!(again.status, 200, "{}", again.body);
    Ok(())
}
