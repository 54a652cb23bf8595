use clap::{Args, Command};
use figment::Jail;

use super::*;

fn given(args: &[&str]) -> Given {
    let command = Flags::augment_args(Command::new("serve"));
    let matches = command
        .try_get_matches_from(std::iter::once("serve").chain(args.iter().copied()))
        .unwrap();
    <Flags as clap::FromArgMatches>::from_arg_matches(&matches)
        .unwrap()
        .given()
}

// figment's Jail takes a closure returning its own (large) error type.
#[allow(clippy::result_large_err)]
fn jailed<T>(test: impl FnOnce(&mut Jail) -> T) -> T {
    let mut out = None;
    Jail::expect_with(|jail| {
        out = Some(test(jail));
        Ok(())
    });
    out.unwrap()
}

#[test]
fn every_setting_has_a_key_a_flag_and_a_variable_and_nothing_else_does() {
    let settings = serde_json::to_value(Settings::default()).unwrap();
    let keys: Vec<&str> = settings.as_object().unwrap().keys().map(|k| &**k).collect();
    let mut listed = KEYS.to_vec();
    listed.sort_unstable();
    assert_eq!(keys, listed, "KEYS lists every setting once");
    let command = Flags::augment_args(Command::new("serve"));
    let mut flags: Vec<String> = command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|long| *long != "config")
        .map(|long| long.replace('-', "_"))
        .collect();
    flags.sort_unstable();
    assert_eq!(flags, listed, "one flag per setting");
}

#[test]
fn flags_override_the_environment_which_overrides_the_file_which_overrides_the_defaults() {
    jailed(|jail| {
        jail.create_file(
            "gw.toml",
            "database = \"sqlite://file.db\"\nmax_pending_plans = 7\nmax_waits = 3\n\
             rate_limit = \"5/10\"\n",
        )
        .unwrap();
        let file = Some(Path::new("gw.toml"));
        let from_file = load(file, &given(&[])).unwrap();
        assert_eq!(from_file.max_pending_plans, 7);
        assert_eq!(from_file.rate_limit.to_string(), "5/10");
        assert_eq!(from_file.max_streams, Settings::default().max_streams);

        jail.set_env("COUNTERSIGN_MAX_PENDING_PLANS", "8");
        jail.set_env("COUNTERSIGN_RATE_LIMIT", "off");
        jail.set_env("COUNTERSIGN_APPROVE_PROVIDER_CALLS_ABOVE", "2.50");
        let from_env = load(file, &given(&[])).unwrap();
        assert_eq!(from_env.max_pending_plans, 8);
        assert_eq!(from_env.rate_limit.0, None);
        assert_eq!(
            from_env.approve_provider_calls_above,
            "2.50".parse().unwrap()
        );
        assert_eq!(
            from_env.max_waits, 3,
            "the file's, untouched by the environment"
        );

        let from_flags = load(
            file,
            &given(&["--max-pending-plans", "9", "--database", "sqlite://flag.db"]),
        )
        .unwrap();
        assert_eq!(from_flags.max_pending_plans, 9);
        assert_eq!(from_flags.database, "sqlite://flag.db");
        assert_eq!(from_flags.rate_limit.0, None, "no flag: the environment's");
        assert!(!from_flags.demo, "a flag not given overrides nothing");
    });
}

#[test]
fn an_unknown_or_mistyped_key_is_refused_with_its_name_and_line() {
    jailed(|jail| {
        jail.create_file(
            "gw.toml",
            "database = \"sqlite://x.db\"\n\nmax_pendng_plans = 7\n",
        )
        .unwrap();
        let error = load(Some(Path::new("gw.toml")), &given(&[]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("gw.toml"), "{error}");
        assert!(error.contains("line 3"), "{error}");
        assert!(
            error.contains("unknown field `max_pendng_plans`"),
            "{error}"
        );

        jail.create_file("typed.toml", "max_waits = \"many\"\n")
            .unwrap();
        let error = check(Path::new("typed.toml")).unwrap_err().to_string();
        assert!(
            error.contains("line 1") && error.contains("max_waits"),
            "{error}"
        );

        jail.create_file("rate.toml", "rate_limit = \"fast\"\n")
            .unwrap();
        let error = check(Path::new("rate.toml")).unwrap_err().to_string();
        assert!(error.contains("line 1"), "{error}");
    });
}

#[test]
fn a_setting_that_does_not_hold_is_refused_wherever_it_comes_from() {
    jailed(|jail| {
        jail.create_file("gw.toml", "max_waits = 3\n").unwrap();
        let error = load(Some(Path::new("gw.toml")), &given(&[]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("no database"), "{error}");
        let error = load(
            None,
            &given(&["--database", "sqlite://x.db", "--tls-cert", "c.pem"]),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("tls_cert and tls_key"), "{error}");
        jail.set_env("COUNTERSIGN_MAX_WAITS", "-1");
        let error = load(None, &given(&["--database", "sqlite://x.db"]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("COUNTERSIGN_") && error.contains("MAX_WAITS"),
            "{error}"
        );
    });
}

#[test]
fn check_prints_each_setting_with_its_origin_and_no_password() {
    jailed(|jail| {
        jail.create_file(
            "gw.toml",
            "database = \"postgres://gw:hunter2@db.internal/gw\"\n\
             smtp_relay = \"smtps://mailer:s3cret@mail.internal\"\nmax_streams = 4\n",
        )
        .unwrap();
        jail.set_env("COUNTERSIGN_MAX_WAITS", "12");
        jail.set_env("COUNTERSIGN_AGENT_TOKEN", "not a setting");
        let report = check(Path::new("gw.toml")).unwrap();
        assert!(
            !report.contains("hunter2") && !report.contains("s3cret"),
            "{report}"
        );
        for line in [
            "database = \"postgres://gw:***@db.internal/gw\"  # the file",
            "smtp_relay = \"smtps://mailer:***@mail.internal\"  # the file",
            "max_streams = 4  # the file",
            "max_waits = 12  # COUNTERSIGN_MAX_WAITS",
            "addr = \"127.0.0.1:7780\"  # default",
            "rate_limit = \"200/1000\"  # default",
            "policy = (unset)  # default",
        ] {
            assert!(
                report.lines().any(|l| l == line),
                "no `{line}` in\n{report}"
            );
        }
        assert_eq!(report.lines().count(), KEYS.len());
    });
}

#[test]
fn the_packaged_example_names_every_setting_and_sets_only_the_database_apart_from_defaults() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/dist/gateway.toml"));
    let text = std::fs::read_to_string(path).unwrap();
    for key in KEYS {
        let named = text.lines().any(|line| {
            let line = line.trim_start_matches("# ");
            line.starts_with(&format!("{key} = "))
        });
        assert!(named, "the example does not name {key}");
    }
    let example: Settings = toml::from_str(&text).unwrap();
    assert_eq!(
        example,
        Settings {
            database: "sqlite:///var/lib/countersign/gateway.db".into(),
            ..Settings::default()
        }
    );
}
