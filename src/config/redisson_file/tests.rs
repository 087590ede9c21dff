//! Tests of `RedissonFile`: substitution, layouts, values, the codec and the bounds.

use std::time::Duration;

use super::*;
use crate::config::defaults::PublishMode;
use crate::error::{Error, RedissonFileError, Result};

fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    }
}

fn substitute(text: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    text::substitute_tracked(text, env).0
}

fn read(yaml: &str) -> Result<RedissonFile> {
    RedissonFile::from_yaml_with_env(yaml, |_| None)
}

fn refusal(result: Result<RedissonFile>) -> (RedissonFileError, String, String) {
    match result {
        Err(Error::RedissonFile {
            kind,
            setting,
            reason,
        }) => (kind, setting, reason),
        other => panic!("not refused: {other:?}"),
    }
}

fn kind(result: Result<RedissonFile>) -> (RedissonFileError, String) {
    let (kind, setting, _) = refusal(result);
    (kind, setting)
}

#[test]
fn substitution_follows_redissons_pattern() {
    let vars = [("HOST", "db1"), ("EMPTY", ""), ("redis.port", "7000")];
    let e = env(&vars);
    assert_eq!(substitute("${HOST}", &e), "db1");
    assert_eq!(substitute("${UNSET}", &e), "${UNSET}");
    assert_eq!(substitute("${UNSET:-x}", &e), "x");
    assert_eq!(substitute("${EMPTY:-x}", &e), "");
    assert_eq!(substitute("${redis.port:-6379}", &e), "7000");
    // Not Redisson's forms: left as written.
    assert_eq!(substitute("${HOST:db}", &e), "${HOST:db}");
    assert_eq!(substitute("${UNSET-x}", &e), "${UNSET-x}");
    assert_eq!(substitute("${UNSET:-}", &e), "${UNSET:-}");
    assert_eq!(substitute("${}", &e), "${}");
    assert_eq!(substitute("${a-b}", &e), "${a-b}");
    // The default ends at the first `}` and never crosses a line.
    assert_eq!(substitute("${UNSET:-a}b}", &e), "ab}");
    assert_eq!(substitute("${UNSET:-}}", &e), "}");
    assert_eq!(substitute("${UNSET:-a\n}", &e), "${UNSET:-a\n}");
    assert_eq!(
        substitute("a ${HOST} b ${UNSET:-c} ${HOST:-z}", &e),
        "a db1 b c db1"
    );
    assert_eq!(substitute("$${HOST}", &e), "$db1");
    assert_eq!(substitute("é${UNSET:-ü}", &e), "éü");
}

#[test]
fn layouts_of_both_versions_and_the_top_level_wins() {
    // 4.x: credentials at the top level win over the section's.
    let yaml = "password: top\nusername: app\nsingleServerConfig:\n  \
                address: redis://h:6379\n  password: server\n  username: old\n";
    let config = read(yaml).unwrap().build().unwrap();
    assert_eq!(config.redis().password.as_deref(), Some("top"));
    assert_eq!(config.redis().username.as_deref(), Some("app"));
    // 3.x: in the section.
    let yaml = "singleServerConfig:\n  address: redis://h:6379\n  password: server\n";
    let config = read(yaml).unwrap().build().unwrap();
    assert_eq!(config.redis().password.as_deref(), Some("server"));
    // Quoted numbers and booleans are read, as Redisson reads them.
    let yaml = "lockWatchdogTimeout: \"2500\"\ncheckLockSyncedSlaves: \"false\"\n\
                singleServerConfig:\n  address: redis://h:6379\n";
    let config = read(yaml).unwrap().build().unwrap();
    assert_eq!(config.watchdog_timeout(), Duration::from_millis(2500));
    assert!(!config.check_lock_synced_replicas());
}

#[test]
fn sharded_subscription_mode_sets_the_publish_mode() {
    for (mode, expected) in [
        ("AUTO", PublishMode::Auto),
        ("ON", PublishMode::Sharded),
        ("OFF", PublishMode::Publish),
    ] {
        let yaml = format!(
            "clusterServersConfig:\n  nodeAddresses:\n  - redis://h:7000\n  \
             shardedSubscriptionMode: {mode}\n"
        );
        let config = read(&yaml).unwrap().build().unwrap();
        assert_eq!(config.publish_mode(), expected, "{mode}");
    }
    // `on`: no such constant (the names are case-sensitive, the YAML boolean aside).
    let yaml = "clusterServersConfig:\n  nodeAddresses:\n  - redis://h:7000\n  \
                shardedSubscriptionMode: on\n";
    assert_eq!(kind(read(yaml)).0, RedissonFileError::BadValue);
}

#[test]
fn redissons_choice_among_several_sections() {
    let two = "clusterServersConfig:\n  nodeAddresses:\n  - redis://b:1\n\
               singleServerConfig:\n  address: redis://a:2\n";
    let file = read(two).unwrap();
    assert_eq!(file.topology(), RedissonTopology::SingleServer);
    assert_eq!(file.ignored(), ["clusterServersConfig"]);
    let mixed = "clusterServersConfig:\n  nodeAddresses:\n  - redis://a:1\n  - rediss://b:1\n";
    assert_eq!(
        kind(read(mixed)),
        (
            RedissonFileError::Unsupported,
            "clusterServersConfig.nodeAddresses[1]".into()
        )
    );
}

#[test]
fn versions_that_disagree_on_a_value() {
    // 3.x reads `0100` as 100, 4.x as octal 64.
    let yaml = "singleServerConfig:\n  address: redis://h:6379\n  timeout: 0100\n";
    let (kind, setting) = kind(read(yaml));
    assert_eq!(kind, RedissonFileError::Unsupported);
    assert_eq!(setting, "singleServerConfig.timeout");
    // `09`: 3.x reads 9, 4.x refuses the file: read as 3.x does.
    let yaml = "singleServerConfig:\n  address: redis://h:6379\n  timeout: 09\n";
    let config = read(yaml).unwrap().build().unwrap();
    assert_eq!(
        config.lock_settings().response_timeout,
        Duration::from_millis(9)
    );
}

#[test]
fn the_files_codec_names_the_per_key_objects() {
    use crate::codec::{JavaCodec, JsonUuids};
    let file = |codec: &str| format!("{codec}singleServerConfig:\n  address: redis://h:6379\n");
    let codec_of = |yaml: &str| read(yaml).unwrap().build().unwrap().codec();
    // None, or null: Redisson's default.
    assert_eq!(codec_of(&file("")), JavaCodec::Kryo5);
    assert_eq!(codec_of(&file("codec: null\n")), JavaCodec::Kryo5);
    for (class, codec) in [
        ("org.redisson.codec.Kryo5Codec", JavaCodec::Kryo5),
        ("org.redisson.client.codec.StringCodec", JavaCodec::String),
        ("org.redisson.client.codec.LongCodec", JavaCodec::String),
        ("org.redisson.client.codec.IntegerCodec", JavaCodec::String),
        ("org.redisson.client.codec.DoubleCodec", JavaCodec::String),
        // Both series read the file: how UUIDs are written is not known.
        (
            "org.redisson.codec.JsonJacksonCodec",
            JavaCodec::JsonJackson {
                uuids: JsonUuids::Unknown,
            },
        ),
    ] {
        assert_eq!(codec_of(&file(&format!("codec: !<{class}> {{}}\n"))), codec);
    }
    // 3.x's JSON names a class as `{"class": ...}`.
    let json = r#"{"codec": {"class": "org.redisson.client.codec.StringCodec"},
                   "singleServerConfig": {"address": "redis://h:6379"}}"#;
    let config = RedissonFile::from_json_with_env(json, |_| None)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(config.codec(), JavaCodec::String);
    // Only 4.x reads a top-level password: its JsonJacksonCodec types UUIDs.
    let v4 = "password: pw\ncodec: !<org.redisson.codec.JsonJacksonCodec> {}\n\
              singleServerConfig:\n  address: redis://h:6379\n";
    assert_eq!(
        codec_of(v4),
        JavaCodec::JsonJackson {
            uuids: JsonUuids::Typed
        }
    );
    // A UUID key under a JSON codec of unknown series is refused, a string key is not.
    let unknown = JavaCodec::JsonJackson {
        uuids: JsonUuids::Unknown,
    };
    assert!(unknown.encode(crate::codec::Uuid::nil()).is_err());
    assert_eq!(unknown.encode("o-1").unwrap(), br#""o-1""#);
}

#[test]
fn a_codec_whose_bytes_the_crate_does_not_write_is_refused_unless_one_is_given() {
    use crate::codec::JavaCodec;
    let yaml = "threads: 4\ncodec: !<org.redisson.codec.LZ4CodecV2> {}\n\
                singleServerConfig:\n  address: redis://h:6379\n";
    let (kind, setting, reason) = refusal(read(yaml));
    assert_eq!(
        (kind, setting.as_str()),
        (RedissonFileError::Unsupported, "codec")
    );
    assert!(reason.contains("org.redisson.codec.LZ4CodecV2"), "{reason}");
    assert!(
        reason.contains("RedissonFile::options().codec("),
        "{reason}"
    );
    let file = RedissonFile::options()
        .codec(JavaCodec::String)
        .from_yaml_with_env(yaml, |_| None)
        .unwrap();
    assert_eq!(file.ignored(), ["threads"]);
    assert_eq!(file.build().unwrap().codec(), JavaCodec::String);
    // The option also wins over a codec the crate writes.
    let kryo = "codec: !<org.redisson.codec.Kryo5Codec> {}\n\
                singleServerConfig:\n  address: redis://h:6379\n";
    let config = RedissonFile::options()
        .codec(JavaCodec::String)
        .from_yaml_with_env(kryo, |_| None)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(config.codec(), JavaCodec::String);
}

#[test]
fn a_duration_out_of_range_names_the_bounds() {
    let yaml = "slavesSyncTimeout: 9223372036854775807\n\
                singleServerConfig:\n  address: redis://h:6379\n";
    let (kind, setting, reason) = refusal(read(yaml));
    assert_eq!(kind, RedissonFileError::Unsupported);
    assert_eq!(setting, "slavesSyncTimeout");
    assert!(reason.contains("1 to 4503599627370496 ms"), "{reason}");
    let yaml = "lockWatchdogTimeout: 2\nsingleServerConfig:\n  address: redis://h:6379\n";
    let (_, setting, reason) = refusal(read(yaml));
    assert_eq!(setting, "lockWatchdogTimeout");
    assert!(reason.contains("3 to 4503599627370496 ms"), "{reason}");
}

#[test]
fn the_sections_connect_timeout_is_honoured() {
    let yaml = "singleServerConfig:\n  address: redis://h:6379\n  connectTimeout: 2500\n";
    let file = read(yaml).unwrap();
    assert!(file.ignored().is_empty(), "{:?}", file.ignored());
    let config = file.build().unwrap();
    assert_eq!(
        config.lock_settings().connect_timeout,
        Duration::from_millis(2_500)
    );
    let unset = "singleServerConfig:\n  address: redis://h:6379\n";
    assert_eq!(
        read(unset)
            .unwrap()
            .build()
            .unwrap()
            .lock_settings()
            .connect_timeout,
        crate::config::DEFAULT_CONNECT_TIMEOUT
    );
    let zero = "singleServerConfig:\n  address: redis://h:6379\n  connectTimeout: 0\n";
    let (kind, setting) = kind(read(zero));
    assert_eq!(kind, RedissonFileError::Unsupported);
    assert_eq!(setting, "singleServerConfig.connectTimeout");
}
