//! Settings on disk: defaults, a round trip, refused values, and the `COUNTERSIGN_*` overrides.
//! One test, since it sets process-wide environment variables.

use countersign_console::settings::{load_settings, save_settings, Settings, Theme};

#[test]
fn settings_persist_refuse_bad_values_and_yield_to_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    for name in [
        "COUNTERSIGN_GATEWAY_URL",
        "COUNTERSIGN_POLL_INTERVAL_SECS",
        "COUNTERSIGN_THEME",
    ] {
        std::env::remove_var(name);
    }
    let fresh = load_settings(&config).unwrap();
    assert_eq!(fresh.settings, Settings::default());
    assert!(fresh.overridden.is_empty());

    let mut mine = Settings {
        gateway_url: Some("https://gateway.example.com".into()),
        poll_interval_secs: 30,
        theme: Theme::Dark,
        ..Settings::default()
    };
    mine.notify
        .capabilities
        .insert("groups.members.remove".into());
    let saved = save_settings(&config, &mine).unwrap();
    assert_eq!(saved.settings, mine);
    assert_eq!(load_settings(&config).unwrap().settings, mine);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(config.join("settings.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    for bad in [
        Settings {
            poll_interval_secs: 0,
            ..mine.clone()
        },
        Settings {
            gateway_url: Some("http://gateway.example.com".into()),
            ..mine.clone()
        },
    ] {
        let e = save_settings(&config, &bad).unwrap_err();
        assert!(
            ["invalid_input", "insecure_transport"].contains(&e.code().as_str()),
            "{e}"
        );
        assert_eq!(
            load_settings(&config).unwrap().settings,
            mine,
            "nothing half-written"
        );
    }
    std::fs::write(
        config.join("settings.json"),
        r#"{"gateway_url": null, "poll_interval_secs": 5, "theme": "sepia", "notify": {"risk": [], "capabilities": []}}"#,
    )
    .unwrap();
    assert_eq!(
        load_settings(&config).unwrap_err().code(),
        "invalid_input",
        "an unknown theme is refused"
    );
    save_settings(&config, &mine).unwrap();

    std::env::set_var("COUNTERSIGN_GATEWAY_URL", "https://other.example.com");
    std::env::set_var("COUNTERSIGN_THEME", "light");
    let view = load_settings(&config).unwrap();
    assert_eq!(
        view.settings.gateway_url.as_deref(),
        Some("https://other.example.com")
    );
    assert_eq!(view.settings.theme, Theme::Light);
    assert_eq!(view.settings.poll_interval_secs, 30, "the file's");
    assert_eq!(view.overridden, ["gateway_url", "theme"]);
    std::env::set_var("COUNTERSIGN_POLL_INTERVAL_SECS", "often");
    assert_eq!(load_settings(&config).unwrap_err().code(), "invalid_input");
    for name in [
        "COUNTERSIGN_GATEWAY_URL",
        "COUNTERSIGN_POLL_INTERVAL_SECS",
        "COUNTERSIGN_THEME",
    ] {
        std::env::remove_var(name);
    }
}
