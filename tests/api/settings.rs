//! `Settings` and `LockSettings` with serde (feature `serde`): read from a service's own
//! configuration (JSON here; any serde format alike), durations as humantime strings,
//! round trips, refused typos, and a client built from them that locks where expected.
#![cfg(feature = "serde")]

use crate::support;
use support::*;

use std::time::Duration;

use redisson_lock::config::{FairQueueNames, LockSettings, PublishMode, Settings, TlsFiles};
use redisson_lock::{Client, Config};
use serde_json::json;

#[test]
fn settings_read_from_a_services_configuration() {
    let settings: Settings = serde_json::from_value(json!({
        "url": "redis://127.0.0.1:6379/2",
        "username": "locks",
        "password": "s3cret",
        "name_prefix": "app1:",
        "tls": { "ca_file": "/etc/redis/ca.crt" },
        "locks": {
            "watchdog_timeout": "10s",
            "fair_lock_wait_timeout": "1m 30s",
            "local_handoff_time": "250ms",
            "validity_margin": "500ms",
            "publish_mode": "sharded",
            "fair_queue_names": "unmapped",
            "renewal_batch_size": 50,
            "check_lock_synced_replicas": false,
            "codec": "string"
        }
    }))
    .unwrap();
    assert_eq!(settings.url.as_deref(), Some("redis://127.0.0.1:6379/2"));
    assert_eq!(settings.name_prefix.as_deref(), Some("app1:"));
    let mut tls = TlsFiles::default();
    tls.ca_file = Some("/etc/redis/ca.crt".into());
    assert_eq!(settings.tls, Some(tls));
    let locks = &settings.locks;
    assert_eq!(locks.watchdog_timeout, Duration::from_secs(10));
    assert_eq!(locks.fair_lock_wait_timeout, Duration::from_secs(90));
    assert_eq!(locks.local_handoff_time, Duration::from_millis(250));
    assert_eq!(locks.validity_margin, Some(Duration::from_millis(500)));
    assert_eq!(locks.publish_mode, PublishMode::Sharded);
    assert_eq!(locks.fair_queue_names, FairQueueNames::Unmapped);
    assert_eq!(locks.renewal_batch_size, 50);
    assert!(!locks.check_lock_synced_replicas);
    assert_eq!(locks.codec, redisson_lock::codec::JavaCodec::String);
    // What was not given keeps Redisson's default.
    assert_eq!(locks.response_timeout, Duration::from_secs(3));
    assert_eq!(locks.subscription_timeout, Duration::from_millis(7_500));
    // Debug never shows the password.
    assert!(!format!("{settings:?}").contains("s3cret"));
}

#[test]
fn settings_round_trip() {
    let mut settings = Settings::default();
    settings.url = Some("redis-sentinel://h:26379/0?sentinelServiceName=m".to_owned());
    settings.sentinel_password = Some("sp".to_owned());
    settings.name_prefix = Some("tenant-7:".to_owned());
    let mut files = TlsFiles::default();
    files.client_cert_file = Some("client.crt".into());
    files.client_key_file = Some("client.key".into());
    settings.tls = Some(files);
    let mut locks = LockSettings::default();
    locks.watchdog_timeout = Duration::from_millis(12_345);
    locks.local_handoffs = 0;
    locks.validity_margin = Some(Duration::from_millis(20));
    locks.metrics_lock_names = true;
    locks.codec = redisson_lock::codec::JavaCodec::JsonJackson {
        uuids: redisson_lock::codec::JsonUuids::Typed,
    };
    settings.locks = locks;
    let text = serde_json::to_string(&settings).unwrap();
    assert!(text.contains(r#""watchdog_timeout":"12s 345ms""#), "{text}");
    assert!(
        text.contains(r#""codec":{"json-jackson":{"uuids":"typed"}}"#),
        "{text}"
    );
    let back: Settings = serde_json::from_str(&text).unwrap();
    assert_eq!(back, settings);
    // The defaults too, and an empty document is the defaults.
    let text = serde_json::to_string(&Settings::default()).unwrap();
    assert_eq!(
        serde_json::from_str::<Settings>(&text).unwrap(),
        Settings::default()
    );
    assert_eq!(
        serde_json::from_str::<Settings>("{}").unwrap(),
        Settings::default()
    );
    assert_eq!(
        serde_json::from_str::<LockSettings>(r#"{"watchdog_timeout": "30s"}"#).unwrap(),
        LockSettings::default()
    );
}

#[test]
fn typos_and_bad_durations_are_refused() {
    let typo = serde_json::from_value::<Settings>(json!({ "urll": "redis://h" })).unwrap_err();
    assert!(typo.to_string().contains("urll"), "{typo}");
    let nested =
        serde_json::from_value::<Settings>(json!({ "locks": { "watchdog": "30s" } })).unwrap_err();
    assert!(nested.to_string().contains("watchdog"), "{nested}");
    let number =
        serde_json::from_value::<LockSettings>(json!({ "watchdog_timeout": 30 })).unwrap_err();
    assert!(number.to_string().contains("string"), "{number}");
    let unit = serde_json::from_value::<LockSettings>(json!({ "watchdog_timeout": "30 parsecs" }))
        .unwrap_err();
    assert!(unit.to_string().contains("not a duration"), "{unit}");
    // Deserializing checks the form; building checks the ranges.
    let zero: Settings = serde_json::from_value(json!({
        "url": "redis://h", "locks": { "renewal_batch_size": 0 }
    }))
    .unwrap();
    assert!(Config::from_settings(zero).is_err());
    let half_cert: Settings = serde_json::from_value(json!({
        "url": "redis://h", "tls": { "client_cert_file": "c.pem" }
    }))
    .unwrap();
    let error = Config::from_settings(half_cert).unwrap_err().to_string();
    assert!(error.contains("client_key_file"), "{error}");
}

#[tokio::test]
async fn a_client_from_settings_locks_with_them() {
    let server = RedisServer::start();
    let settings: Settings = serde_json::from_value(json!({
        "url": server.url(),
        "name_prefix": "svc:",
        "locks": { "watchdog_timeout": "7s" }
    }))
    .unwrap();
    let config = Config::from_settings(settings).unwrap();
    assert_eq!(
        config.lock_settings().watchdog_timeout,
        Duration::from_secs(7)
    );
    let client = Client::connect(config).await.unwrap();
    let lock = client.get_lock("orders");
    lock.lock().await.unwrap();
    let raw = server.raw().await;
    let field = format!("{}:{}", client.id(), lock.owner());
    assert_eq!(hgetall(&raw, "svc:orders").await, vec![(field, "1".into())]);
    let ttl = pttl(&raw, "svc:orders").await;
    assert!((5_000..=7_000).contains(&ttl), "PTTL {ttl}");
    lock.unlock().await.unwrap();
    client.shutdown().await.unwrap();
}
