//! TLS and ACL against real `redis-server` processes with TLS ports and certificates made
//! for the run (`support::tls`): locks over TLS with a private CA, mutual TLS, a wrong CA,
//! a TLS URL pointed at a plaintext port, a least-privilege ACL user, and passwords kept
//! out of everything the crate shows.
//!
//! Built without a TLS feature (`cargo test --test tls`), only the refusals run: a TLS URL
//! is refused before any connection.

mod support;

#[cfg(not(any(feature = "tls-rustls", feature = "tls-native-tls")))]
mod without_a_tls_feature {
    use super::support::*;
    use redisson_lock::config::TlsOptions;
    use redisson_lock::fred::prelude::*;
    use redisson_lock::fred::types::InfoKind;
    use redisson_lock::{Config, Error};

    #[test]
    fn every_tls_scheme_is_refused_naming_the_feature() {
        for url in [
            "rediss://:s3cret@127.0.0.1:6380",
            "rediss-cluster://127.0.0.1:7000",
            "rediss-sentinel://127.0.0.1:26379?sentinelServiceName=m",
            "valkeys://127.0.0.1:6380",
            "REDISS://127.0.0.1:6380",
        ] {
            let error = Config::from_url(url).unwrap_err();
            assert!(
                matches!(&error, Error::TlsNotEnabled { feature, .. } if *feature == "tls-rustls"),
                "{url}: {error:?}"
            );
            let text = error.to_string();
            assert!(
                text.contains("tls-rustls") && text.contains("tls-native-tls"),
                "{text}"
            );
            assert!(!text.contains("s3cret"), "{text}");
        }
        let explicit = Config::builder()
            .url("redis://127.0.0.1:6379")
            .tls(TlsOptions::new())
            .build()
            .unwrap_err();
        assert!(
            matches!(explicit, Error::TlsNotEnabled { .. }),
            "{explicit:?}"
        );
    }

    #[tokio::test]
    async fn a_refused_tls_url_never_reaches_the_server() {
        let server = RedisServer::start();
        let raw = server.raw().await;
        let before = connections_received(&raw).await;
        let url = format!("rediss://:s3cret@127.0.0.1:{}", server.port);
        assert!(matches!(
            Config::from_url(&url),
            Err(Error::TlsNotEnabled { .. })
        ));
        assert_eq!(
            connections_received(&raw).await,
            before,
            "nothing connected"
        );
    }

    async fn connections_received(raw: &redisson_lock::fred::prelude::Client) -> u64 {
        let info: String = raw.info(Some(InfoKind::Stats)).await.unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("total_connections_received:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("total_connections_received")
    }
}

#[cfg(any(feature = "tls-rustls", feature = "tls-native-tls"))]
mod with_tls {
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use super::support::tls::TlsRedisServer;
    use super::support::*;
    use redisson_lock::config::{TlsBackend, TlsOptions};
    use redisson_lock::fred::prelude::*;
    use redisson_lock::fred::types::{ClusterHash, CustomCommand, InfoKind};
    use redisson_lock::{Client, Config, ConfigBuilder, Error};

    /// The TLS libraries this build has.
    fn backends() -> Vec<TlsBackend> {
        let mut all = Vec::new();
        if cfg!(feature = "tls-rustls") {
            all.push(TlsBackend::Rustls);
        }
        if cfg!(feature = "tls-native-tls") {
            all.push(TlsBackend::NativeTls);
        }
        all
    }

    /// Fails fast: a test of a refused connection should not reconnect for long.
    fn quick(config: ConfigBuilder) -> ConfigBuilder {
        config
            .response_timeout(Duration::from_secs(2))
            // A TLS hello to a plaintext port gets no answer: fail in a second, not 10 s.
            .connect_timeout(Duration::from_secs(1))
            .reconnect_policy(ReconnectPolicy::new_constant(1, 100))
    }

    async fn connect(config: ConfigBuilder) -> redisson_lock::Result<Client> {
        Client::connect(quick(config).build()?).await
    }

    /// A reentrant lock taken twice and a waiter woken by the unlock message, all over TLS;
    /// the raw hash read on the server's plaintext port.
    async fn locks_work(server: &TlsRedisServer, a: &Client, b: &Client, name: &str) {
        let raw = server.plain.raw().await;
        let lock = a.get_lock(name);
        lock.lock().await.unwrap();
        lock.lock().await.unwrap();
        let field = format!("{}:{}", a.id(), lock.owner());
        assert_eq!(hgetall(&raw, name).await, vec![(field, "2".to_owned())]);
        let waiter = {
            let lock = b.get_lock(name);
            tokio::spawn(async move {
                let start = Instant::now();
                let got = lock.try_lock_for(Duration::from_secs(10)).await.unwrap();
                lock.unlock().await.unwrap();
                (got, start.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        lock.unlock().await.unwrap();
        lock.unlock().await.unwrap();
        let (got, waited) = waiter.await.unwrap();
        assert!(got, "the waiter got the lock");
        assert!(
            waited < Duration::from_secs(5),
            "woken by the message, not a timeout: {waited:?}"
        );
        assert!(!exists(&raw, name).await, "nothing left");
    }

    #[tokio::test]
    async fn locks_over_tls_with_a_private_ca() {
        let server = TlsRedisServer::start(&[]);
        for backend in backends() {
            let options = TlsOptions::new().ca_file(&server.pki.ca).backend(backend);
            let config = || Config::builder().url(server.url("")).tls(options.clone());
            let a = connect(config()).await.expect("TLS connect");
            let b = connect(config()).await.expect("TLS connect");
            locks_work(&server, &a, &b, &key("tls-lock")).await;
            // The CA given as PEM text works the same.
            let pem = std::fs::read(&server.pki.ca).unwrap();
            let c = connect(
                Config::builder()
                    .url(server.url(""))
                    .tls(TlsOptions::new().ca_pem(pem).backend(backend)),
            )
            .await
            .expect("TLS connect with PEM text");
            assert!(!c.get_lock(key("pem")).is_locked().await.unwrap());
            for client in [a, b, c] {
                client.shutdown().await.unwrap();
            }
        }
    }

    #[tokio::test]
    async fn mutual_tls_needs_the_client_certificate() {
        let server = TlsRedisServer::start(&["--tls-auth-clients", "yes"]);
        for backend in backends() {
            let with_cert = TlsOptions::new()
                .ca_file(&server.pki.ca)
                .client_cert_files(&server.pki.client_cert, &server.pki.client_key)
                .backend(backend);
            let config = || Config::builder().url(server.url("")).tls(with_cert.clone());
            let a = connect(config()).await.expect("mutual TLS");
            let b = connect(config()).await.expect("mutual TLS");
            locks_work(&server, &a, &b, &key("tls-lock")).await;
            a.shutdown().await.unwrap();
            b.shutdown().await.unwrap();

            let without = TlsOptions::new().ca_file(&server.pki.ca).backend(backend);
            let refused = connect(Config::builder().url(server.url("")).tls(without)).await;
            assert!(
                matches!(refused, Err(Error::Tls { .. })),
                "{backend:?}: {refused:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_server_the_client_does_not_trust_is_refused() {
        let server = TlsRedisServer::start(&[]);
        for backend in backends() {
            let wrong = TlsOptions::new()
                .ca_file(&server.pki.other_ca)
                .backend(backend);
            let refused = connect(Config::builder().url(server.url("")).tls(wrong)).await;
            assert!(
                matches!(refused, Err(Error::Tls { .. })),
                "{backend:?}: {refused:?}"
            );
            // The platform's roots do not know the test CA either.
            let platform = TlsOptions::new().backend(backend);
            let refused = connect(Config::builder().url(server.url("")).tls(platform)).await;
            assert!(
                matches!(refused, Err(Error::Tls { .. })),
                "{backend:?}: {refused:?}"
            );
        }
        // A bare rediss:// URL uses TLS with the platform's roots: refused the same way,
        // which shows it spoke TLS.
        let refused = connect(Config::builder().url(server.url(""))).await;
        assert!(matches!(refused, Err(Error::Tls { .. })), "{refused:?}");
    }

    #[tokio::test]
    async fn a_tls_url_never_talks_plaintext_to_a_plaintext_port() {
        let server = TlsRedisServer::start(&["--requirepass", "s3cret"]);
        let raw = {
            let config = fred::prelude::Config {
                password: Some("s3cret".to_owned()),
                ..fred::prelude::Config::from_url(&server.plain.url()).unwrap()
            };
            let client = Builder::from_config(config).build().unwrap();
            client.init().await.unwrap();
            client
        };
        for backend in backends() {
            let options = TlsOptions::new().ca_file(&server.pki.ca).backend(backend);
            let url = format!("rediss://:s3cret@localhost:{}", server.plain.port);
            let result = connect(Config::builder().url(url).tls(options)).await;
            assert!(result.is_err(), "{backend:?}: connected: {result:?}");
        }
        // The plaintext port never saw a command from the crate: only the raw client's.
        let stats: String = raw.info(Some(InfoKind::CommandStats)).await.unwrap();
        assert!(
            stats.contains("cmdstat_auth:calls=1,"),
            "only the raw client's AUTH: {stats}"
        );
        assert!(!stats.contains("cmdstat_eval"), "{stats}");
    }

    /// What a lock user needs, for lock names under `app:` (see docs/operations.md).
    const LOCK_USER_ACL: &[&str] = &[
        "locks",
        "on",
        ">lock-pass",
        "resetkeys",
        "resetchannels",
        "-@all",
        // Connecting, and the crate's own probes.
        "+auth",
        "+hello",
        "+ping",
        "+select",
        "+info",
        "+client|id",
        // Lock scripts and what they call.
        "+evalsha",
        "+eval",
        "+del",
        "+unlink",
        "+exists",
        "+get",
        "+set",
        "+incr",
        "+time",
        "+type",
        "+pexpire",
        "+pttl",
        "+hdel",
        "+hexists",
        "+hget",
        "+hincrby",
        "+hkeys",
        "+hlen",
        "+hset",
        "+lindex",
        "+lpop",
        "+lrange",
        "+lrem",
        "+rpush",
        "+zadd",
        "+zincrby",
        "+zrange",
        "+zrem",
        "+zscore",
        "+publish",
        "+spublish",
        "+pubsub|numsub",
        // Waiting for unlock messages.
        "+subscribe",
        "+unsubscribe",
        "+ssubscribe",
        "+sunsubscribe",
        // The lock hash, and every key named after it (`{app:...}` and `redisson_*{app:...}`).
        "~app:*",
        "~{app:*",
        "~redisson_*{app:*",
        "&redisson_lock__channel:{app:*",
        "&redisson_rwlock:{app:*",
        // Key tracking (told at once): its set-up, its read-only checks and re-reads, and
        // the listener's channel.
        "+client|tracking",
        "+eval_ro",
        "+evalsha_ro",
        "&__redis__:invalidate",
    ];

    #[tokio::test]
    async fn a_least_privilege_acl_user_does_everything_a_lock_needs() {
        let server = TlsRedisServer::start(&[]);
        let raw = server.plain.raw().await;
        let mut setuser = vec![Value::from("SETUSER")];
        setuser.extend(LOCK_USER_ACL.iter().map(|rule| Value::from(*rule)));
        let _: Value = raw
            .custom(
                CustomCommand::new_static("ACL", ClusterHash::FirstKey, false),
                setuser,
            )
            .await
            .unwrap();
        let options = TlsOptions::new().ca_file(&server.pki.ca);
        let url = server.url("locks:lock-pass@");
        let a = connect(Config::builder().url(&url).tls(options.clone()))
            .await
            .unwrap();
        // The user and password given to the builder instead of the URL.
        let b = connect(
            Config::builder()
                .url(server.url(""))
                .username("locks")
                .password("lock-pass")
                .tls(options.clone()),
        )
        .await
        .unwrap();

        let name = |what: &str| format!("app:{}", key(what));
        // Reentrant, with a waiter on the other client.
        locks_work(&server, &a, &b, &name("rlock")).await;
        // Fair: a queued waiter, woken on its own channel.
        let fair = a.get_fair_lock(name("fair"));
        fair.lock().await.unwrap();
        let waiter = {
            let fair = b.get_fair_lock(fair.name());
            tokio::spawn(async move {
                let got = fair.try_lock_for(Duration::from_secs(10)).await.unwrap();
                fair.unlock().await.unwrap();
                got
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        fair.unlock().await.unwrap();
        assert!(waiter.await.unwrap());
        // Read-write: two readers, then a writer.
        let rw = a.get_read_write_lock(name("rw"));
        let other = b.get_read_write_lock(rw.name());
        rw.read_lock().lock().await.unwrap();
        other.read_lock().lock().await.unwrap();
        rw.read_lock().unlock().await.unwrap();
        other.read_lock().unlock().await.unwrap();
        rw.write_lock().lock().await.unwrap();
        assert!(rw.write_lock().is_locked().await.unwrap());
        rw.write_lock().unlock().await.unwrap();
        // Fenced, spin, non-reentrant.
        let fenced = a.get_fenced_lock(name("fenced"));
        let first = fenced.lock_and_get_token().await.unwrap();
        fenced.unlock().await.unwrap();
        assert_eq!(fenced.lock_and_get_token().await.unwrap(), first + 1);
        fenced.unlock().await.unwrap();
        let floor = fenced.ensure_token_floor().await.unwrap();
        assert!(floor > first + 1, "raised to the server clock");
        assert_eq!(fenced.lock_and_get_token().await.unwrap(), floor + 1);
        fenced.unlock().await.unwrap();
        let spin = a.get_spin_lock(name("spin"));
        spin.lock().await.unwrap();
        assert!(!b.get_spin_lock(spin.name()).try_lock().await.unwrap());
        spin.unlock().await.unwrap();
        let single = a.get_non_reentrant_lock(name("single"));
        single.lock().await.unwrap();
        single.unlock().await.unwrap();
        // Queries and force unlock.
        let lock = a.get_lock(name("queries"));
        lock.lock_with_lease(Duration::from_secs(20)).await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), 1);
        assert!(lock.remain_time_to_live().await.unwrap().is_some());
        assert!(lock.force_unlock().await.unwrap());
        assert!(!lock.is_locked().await.unwrap());

        // A lock outside the user's names is refused by Redis, not taken.
        let outside = a.get_lock(key("not-app"));
        let refused = outside.try_lock().await;
        assert!(refused.is_err(), "{refused:?}");
        // Nothing was refused on the way (ACL LOG lists every refusal but this last one).
        let log: Vec<Value> = raw
            .custom(
                CustomCommand::new_static("ACL", ClusterHash::FirstKey, false),
                vec!["LOG"],
            )
            .await
            .unwrap();
        let refused: Vec<String> = log
            .iter()
            .filter_map(|entry| match entry {
                Value::Array(fields) => fields
                    .windows(2)
                    .find(|w| w[0].as_str().as_deref() == Some("object"))
                    .and_then(|w| w[1].as_string()),
                _ => None,
            })
            .collect();
        assert_eq!(refused, vec![outside.name().to_owned()], "refused: {log:?}");
        a.shutdown().await.unwrap();
        b.shutdown().await.unwrap();
    }

    /// Everything the crate writes to `tracing`, for one test.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn no_password_in_debug_errors_or_traces_of_a_failed_connection() {
        let server = TlsRedisServer::start(&["--requirepass", "right-pass"]);
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);

        let secret = "Wr0ng-S3cret";
        let options = TlsOptions::new()
            .ca_file(&server.pki.ca)
            .client_cert_pem(b"CERT".to_vec(), format!("KEY {secret}"));
        let mut shown = Vec::new();
        // A wrong password over TLS, a wrong CA, an unreachable port, a URL that does not
        // parse, and a sentinel password.
        let attempts = [
            Config::builder()
                .url(server.url(&format!("default:{secret}@")))
                .tls(TlsOptions::new().ca_file(&server.pki.ca)),
            Config::builder()
                .url(server.url(&format!(":{secret}@")))
                .tls(TlsOptions::new().ca_file(&server.pki.other_ca)),
            Config::builder()
                .url(format!("rediss://:{secret}@localhost:1"))
                .password(secret),
            Config::builder().url(format!("rediss://:{secret}@localhost:99999999")),
            Config::builder().url(format!(":{secret}@localhost")),
            Config::builder()
                .url(format!(
                    "rediss-sentinel://u:{secret}@localhost:1?sentinelServiceName=m&sentinelPassword={secret}"
                ))
                .sentinel_credentials(Some("s".to_owned()), secret),
        ];
        for attempt in attempts {
            shown.push(format!("{attempt:?}"));
            match quick(attempt).build() {
                Ok(config) => {
                    shown.push(format!("{config:?}"));
                    let connect = Client::connect(config);
                    match tokio::time::timeout(Duration::from_secs(15), connect).await {
                        Ok(Err(error)) => {
                            shown.push(format!("{error:?}"));
                            shown.push(error.to_string());
                        }
                        Ok(Ok(_)) => panic!("connected with a wrong secret"),
                        Err(_) => shown.push("timed out".to_owned()),
                    }
                }
                Err(error) => {
                    shown.push(format!("{error:?}"));
                    shown.push(error.to_string());
                }
            }
        }
        shown.push(format!("{options:?}"));
        let traces = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
        shown.push(traces);
        let all = shown.join("\n");
        assert!(!all.contains(secret), "a password was shown:\n{all}");
        assert!(all.contains("<redacted>"), "{all}");
        assert!(all.contains("WRONGPASS") || all.contains("Auth"), "{all}");
    }
}

/// The inspector binary over TLS: the same flags as `redis-cli` (`--tls`, `--cacert`,
/// `--cert`, `--key`), the password from `REDIS_PASSWORD`, and never a password printed.
#[cfg(all(
    feature = "cli",
    any(feature = "tls-rustls", feature = "tls-native-tls")
))]
mod inspector {
    use std::process::{Command, Output};

    use super::support::tls::TlsRedisServer;
    use super::support::*;
    use redisson_lock::config::TlsOptions;
    use redisson_lock::{Client, Config};

    const BIN: &str = env!("CARGO_BIN_EXE_redisson-lock");

    async fn run(args: Vec<String>, password: Option<&str>) -> Output {
        let password = password.map(str::to_owned);
        tokio::task::spawn_blocking(move || {
            let mut command = Command::new(BIN);
            command
                .args(&args)
                .env_remove("REDIS_URL")
                .env_remove("REDIS_USERNAME");
            match password {
                Some(password) => command.env("REDIS_PASSWORD", password),
                None => command.env_remove("REDIS_PASSWORD"),
            };
            command.output().expect("run redisson-lock")
        })
        .await
        .expect("join")
    }

    fn all_output(out: &Output) -> String {
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_inspector_speaks_tls_and_never_prints_the_password() {
        let server =
            TlsRedisServer::start(&["--tls-auth-clients", "yes", "--requirepass", "cli-pass"]);
        let pki = &server.pki;
        let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
        let holder = Client::connect(
            Config::builder()
                .url(server.url(":cli-pass@"))
                .tls(
                    TlsOptions::new()
                        .ca_file(&pki.ca)
                        .client_cert_files(&pki.client_cert, &pki.client_key),
                )
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
        let name = key("cli-tls");
        holder.get_lock(&name).lock().await.unwrap();

        // The password from the environment, the certificates from flags.
        let args = |url: String, ca: String| {
            vec![
                "--url".to_owned(),
                url,
                "--cacert".to_owned(),
                ca,
                "--cert".to_owned(),
                path(&pki.client_cert),
                "--key".to_owned(),
                path(&pki.client_key),
                "--json".to_owned(),
                "inspect".to_owned(),
                name.clone(),
            ]
        };
        let out = run(args(server.url(""), path(&pki.ca)), Some("cli-pass")).await;
        assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
        assert!(
            all_output(&out).contains(holder.id()),
            "{}",
            all_output(&out)
        );

        // --tls turns TLS on for a redis:// URL.
        let plain_scheme = format!("redis://localhost:{}", server.tls_port);
        let mut with_flag = args(plain_scheme, path(&pki.ca));
        with_flag.insert(0, "--tls".to_owned());
        let out = run(with_flag, Some("cli-pass")).await;
        assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));

        // Failures: a wrong CA with the password in the URL, a wrong password from the
        // environment. Exit 2, a cause, and no password.
        let out = run(args(server.url(":cli-pass@"), path(&pki.other_ca)), None).await;
        let text = all_output(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(text.contains("TLS"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
        assert!(!text.contains("cli-pass"), "{text}");
        let out = run(args(server.url(""), path(&pki.ca)), Some("wrong-cli-pass")).await;
        let text = all_output(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(!text.contains("wrong-cli-pass"), "{text}");
        holder.shutdown().await.unwrap();
    }
}
