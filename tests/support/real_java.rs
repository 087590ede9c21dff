//! Real Java Redisson clients beside the crate: Redisson 3.23.3 and 4.7.0, each a
//! `run.sh` driver process (`../shared/redisson-java`, its README lists every verb) that
//! reads one verb a line on stdin and answers one line on stdout. A [`JavaClient`] owns
//! one such process and kills it when dropped (also when a test panics).
//!
//! Tests that use it need the drivers, which a clone of this repository does not carry:
//! they live in the `java` test binary (`tests/java.rs`, `tests/java/`), every one
//! `#[ignore]`d, and run with
//!
//! ```sh
//! REDISSON_JAVA_DIR=/path/to/redisson-java cargo test --all-features --test java -- --ignored
//! ```
//!
//! (`.ci/run` does this with `../shared/redisson-java`, after its `deps.sh`). Asked to
//! run without the drivers, they fail with that instruction ([`java_dir`]); they never
//! pass without Java.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex as SyncMutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

/// A Redisson version the drivers hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    V3_23_3,
    V4_7_0,
}

impl Version {
    /// Both versions, the older first.
    pub const ALL: [Version; 2] = [Version::V3_23_3, Version::V4_7_0];

    /// As `run.sh` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V3_23_3 => "3.23.3",
            Version::V4_7_0 => "4.7.0",
        }
    }

    /// Whether this version sends the unlock latch (3.24+).
    pub fn has_unlock_latch(self) -> bool {
        self == Version::V4_7_0
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The folder of the real Redisson drivers: `REDISSON_JAVA_DIR`, else
/// `../shared/redisson-java` beside this repository. Panics with how to get them when
/// neither is there or Java's dependencies are missing: a real-Java test never passes
/// without Java.
pub fn java_dir() -> PathBuf {
    let explicit = std::env::var_os("REDISSON_JAVA_DIR").map(PathBuf::from);
    let beside = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/redisson-java");
    let dir = explicit.clone().unwrap_or(beside);
    let usable = dir.join("run.sh").is_file() && dir.join("jars").is_dir();
    if !usable {
        panic!(
            "this test runs real Java Redisson (3.23.3 and 4.7.0) beside the crate, and no \
             drivers were found at {} ({}).\n\
             Point REDISSON_JAVA_DIR at a redisson-java folder (run.sh, jars/, deps.sh: the \
             project's shared/redisson-java), install its runtime once with `sudo \
             $REDISSON_JAVA_DIR/deps.sh` (after `apt-get update`), then run\n    \
             REDISSON_JAVA_DIR=... cargo test --all-features --test java -- --ignored",
            dir.display(),
            if explicit.is_some() {
                "REDISSON_JAVA_DIR"
            } else {
                "REDISSON_JAVA_DIR unset; looked beside the repository"
            }
        );
    }
    if !std::path::Path::new("/usr/share/java/jackson-core.jar").is_file() {
        panic!(
            "the real Redisson drivers at {} need their runtime (a JDK 17 and Debian's jars): \
             run `sudo {}/deps.sh` once (after `apt-get update`)",
            dir.display(),
            dir.display()
        );
    }
    dir
}

/// The JVM options of the drivers and probes: C1 only, the serial collector, no perf
/// data file. Short-lived test JVMs spend most of their CPU in C2's compiler threads
/// otherwise: the `java` binary took 537 s of CPU with the JVM's defaults and 272 s with
/// these (2 cores, 2 test threads: 313 s then 233 s). Redisson's behaviour is the same;
/// only the measurements ([`measuring`]) run the JVM's defaults, as Java users do. A
/// `JAVA_OPTS` of the caller's replaces them.
const TEST_JVM: &str = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData";

static MEASURING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Drivers started from now on in this process run with the JVM's default options (C2,
/// its default collector), as in production: for the `measure_*` tests, which compare
/// the crate with Java's speed.
pub fn measuring() {
    MEASURING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// How long one answer may take before the test fails (a blocking verb should be sent
/// with [`JavaClient::spawn`]).
pub const ANSWER_LIMIT: Duration = Duration::from_secs(60);

struct Io {
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

/// One real Redisson client (a JVM running the driver), killed on drop. Cheap to share
/// by reference; calls are sent one at a time, in order.
pub struct JavaClient {
    version: Version,
    id: String,
    io: Mutex<Io>,
    child: SyncMutex<Child>,
    /// The driver's last stderr lines, shown when a call fails.
    log: Arc<SyncMutex<VecDeque<String>>>,
    tags: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for JavaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JavaClient(Redisson {}, {})", self.version, self.id)
    }
}

impl JavaClient {
    /// Starts Redisson `version` on `url` (a single server `redis://`, a cluster
    /// `redis-cluster://…`, a Sentinel set `redis-sentinel://…`, as the driver's README
    /// says), with Redisson's default watchdog timeout (30 s).
    pub async fn start(version: Version, url: &str) -> JavaClient {
        Self::start_with_watchdog(version, url, 30_000).await
    }

    /// As [`JavaClient::start`], with `lockWatchdogTimeout` = `watchdog_ms`.
    pub async fn start_with_watchdog(version: Version, url: &str, watchdog_ms: u64) -> JavaClient {
        let dir = java_dir();
        let mut command = Command::new(dir.join("run.sh"));
        command
            .arg(version.as_str())
            .arg(url)
            .arg(watchdog_ms.to_string());
        Self::spawn_process(version, url, command).await
    }

    /// A Java program of the tests' own beside the drivers (`tests/java/probe/<class>.java`,
    /// for calls the drivers have no verb for), compiled with `javac` against `version`'s
    /// jars (once per build folder) and run on `url`. It speaks the drivers' protocol:
    /// `READY <what>`, then one answer line a command line.
    pub async fn start_probe(version: Version, url: &str, class: &str) -> JavaClient {
        let dir = java_dir();
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/java/probe/{class}.java"));
        let classes =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("probe-{class}-{version}"));
        assert!(
            std::process::Command::new("javac")
                .arg("-version")
                .output()
                .is_ok(),
            "{class} is compiled against real Redisson and needs `javac` (a JDK 17): \
             apt-get install -y openjdk-17-jdk-headless"
        );
        let script = format!(
            ". '{}/classpath.sh' {version} && mkdir -p '{classes}' && \
             javac -nowarn -d '{classes}' -cp \"$JAVA_CP\" '{source}' && \
             exec java $JAVA_OPTS_BASE ${{JAVA_OPTS:-}} -cp '{classes}':\"$JAVA_CP\" {class} '{url}'",
            dir.display(),
            classes = classes.display(),
            source = source.display(),
        );
        let mut command = Command::new("bash");
        command.arg("-c").arg(script);
        Self::spawn_process(version, url, command).await
    }

    /// Starts `command` (a driver, or a probe speaking its protocol) and waits for its
    /// `READY <id>`.
    async fn spawn_process(version: Version, url: &str, mut command: Command) -> JavaClient {
        if std::env::var_os("JAVA_OPTS").is_none()
            && !MEASURING.load(std::sync::atomic::Ordering::Relaxed)
        {
            command.env("JAVA_OPTS", TEST_JVM);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start Redisson {version}'s process: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let log = Arc::new(SyncMutex::new(VecDeque::new()));
        if let Some(stderr) = child.stderr.take() {
            let log = log.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut log = log.lock().unwrap();
                    if log.len() == 40 {
                        log.pop_front();
                    }
                    log.push_back(line);
                }
            });
        }
        let first = tokio::time::timeout(ANSWER_LIMIT, stdout.next_line()).await;
        let id = match first {
            Ok(Ok(Some(line))) if line.starts_with("READY ") => line["READY ".len()..].to_string(),
            other => {
                // Give the driver a moment to write why it stopped.
                tokio::time::sleep(Duration::from_millis(200)).await;
                panic!(
                    "Redisson {version} on {url} did not start: {other:?}\n{}",
                    log.lock()
                        .unwrap()
                        .iter()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            }
        };
        JavaClient {
            version,
            id,
            io: Mutex::new(Io { stdin, stdout }),
            child: SyncMutex::new(child),
            log,
            tags: Default::default(),
        }
    }

    /// Both versions on `url`, the older first.
    pub async fn both(url: &str) -> [JavaClient; 2] {
        let (old, new) = tokio::join!(
            JavaClient::start(Version::V3_23_3, url),
            JavaClient::start(Version::V4_7_0, url)
        );
        [old, new]
    }

    /// The Redisson version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The client's id (`redisson.getId()`): the first half of its hash fields.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Sends one verb line and returns its one answer line. Panics (with the driver's
    /// last log lines) when the driver is gone or takes longer than [`ANSWER_LIMIT`].
    pub async fn call(&self, line: &str) -> String {
        let mut io = self.io.lock().await;
        let sent = async {
            io.stdin.write_all(line.as_bytes()).await?;
            io.stdin.write_all(b"\n").await?;
            io.stdin.flush().await
        };
        if let Err(e) = sent.await {
            self.fail(line, &format!("cannot write to the driver: {e}"));
        }
        match tokio::time::timeout(ANSWER_LIMIT, io.stdout.next_line()).await {
            Ok(Ok(Some(answer))) => answer,
            Ok(Ok(None)) => self.fail(line, "the driver exited"),
            Ok(Err(e)) => self.fail(line, &format!("cannot read the driver: {e}")),
            Err(_) => self.fail(line, &format!("no answer within {ANSWER_LIMIT:?}")),
        }
    }

    fn fail(&self, line: &str, why: &str) -> ! {
        let log = self.log.lock().unwrap().iter().cloned().collect::<Vec<_>>();
        panic!(
            "Redisson {} ({}): `{line}`: {why}\ndriver log:\n{}",
            self.version,
            self.id,
            log.join("\n")
        )
    }

    /// [`JavaClient::call`] that must answer `OK`.
    pub async fn ok(&self, line: &str) {
        let answer = self.call(line).await;
        assert_eq!(answer, "OK", "Redisson {}: `{line}`", self.version);
    }

    /// [`JavaClient::call`] that answers `true` or `false`.
    pub async fn bool(&self, line: &str) -> bool {
        match self.call(line).await.as_str() {
            "true" => true,
            "false" => false,
            other => panic!("Redisson {}: `{line}` answered {other}", self.version),
        }
    }

    /// [`JavaClient::call`] that answers a number.
    pub async fn int(&self, line: &str) -> i64 {
        let answer = self.call(line).await;
        answer.parse().unwrap_or_else(|_| {
            panic!(
                "Redisson {}: `{line}` answered {answer}, not a number",
                self.version
            )
        })
    }

    /// The hash field Redisson writes for its thread `thread` (`<id>:<java thread id>`).
    pub async fn field(&self, thread: &str) -> String {
        self.call(&format!("lockfield {thread}")).await
    }

    /// Runs `line` in the background on the driver (`async <tag> <line>`); the returned
    /// [`Pending`] reads its answer.
    pub async fn spawn(&self, line: &str) -> Pending<'_> {
        let tag = format!(
            "t{}",
            self.tags.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let queued = self.call(&format!("async {tag} {line}")).await;
        assert_eq!(queued, format!("QUEUED {tag}"), "Redisson {}", self.version);
        Pending {
            client: self,
            tag,
            line: line.to_string(),
        }
    }

    /// Kills the driver now (a crashed Java process: its holds stay until their leases
    /// end).
    pub fn kill(&self) {
        let _ = self.child.lock().unwrap().start_kill();
    }
}

impl Drop for JavaClient {
    fn drop(&mut self) {
        let _ = self.child.get_mut().map(|c| c.start_kill());
    }
}

/// A verb running in the background on a driver (see [`JavaClient::spawn`]).
#[derive(Debug)]
pub struct Pending<'a> {
    client: &'a JavaClient,
    tag: String,
    line: String,
}

impl Pending<'_> {
    /// Its answer, or `None` while it runs.
    pub async fn poll(&self) -> Option<String> {
        let answer = self.client.call(&format!("poll {}", self.tag)).await;
        (answer != "PENDING").then_some(answer)
    }

    /// Its answer, waiting for it up to `limit`; `None` if it is still running then.
    pub async fn wait(&self, limit: Duration) -> Option<String> {
        let answer = self
            .client
            .call(&format!("await {} {}", self.tag, limit.as_millis()))
            .await;
        (answer != "TIMEOUT").then_some(answer)
    }

    /// Its answer; panics when it takes longer than `limit`.
    pub async fn answer(&self, limit: Duration) -> String {
        self.wait(limit).await.unwrap_or_else(|| {
            panic!(
                "Redisson {}: `{}` did not answer within {limit:?}",
                self.client.version, self.line
            )
        })
    }
}

/// Real Redisson's reading of a configuration file: `config-check.sh <version> FILE` (its
/// README, "Config check"), which loads it with `Config.fromYAML` / `fromJSON` (by the
/// extension) without connecting, and prints one line: the resolved settings as JSON, or
/// `ERR ...`. `env`: variables for its `${NAME}` substitution (`None`: removed from the
/// environment it inherits). The JVM starts with C1 only, the serial collector and a
/// class-data archive of the checker made on first use ([`config_check_archive`]): about
/// 0.1-0.25 s of CPU a file.
pub fn config_check(
    version: Version,
    path: &std::path::Path,
    env: &[(&str, Option<&str>)],
) -> String {
    let mut options = config_check_jvm();
    if let Some(archive) = config_check_archive(version) {
        options.push_str(&format!(" -XX:SharedArchiveFile={}", archive.display()));
    }
    let (status, line, stderr) = run_config_check(version, path, env, &options);
    // 0 loaded, 1 refused, 3 unsupported (JSON in 4.x); anything else is the checker's.
    assert!(
        matches!(status.code(), Some(0 | 1 | 3)) && !line.is_empty(),
        "config-check.sh {version} {}: {status:?}, {line}\n{stderr}",
        path.display(),
    );
    line
}

/// [`TEST_JVM`], and no JVM log lines on stdout (a stale archive's warning).
fn config_check_jvm() -> String {
    format!("{TEST_JVM} -Xlog:disable")
}

fn run_config_check(
    version: Version,
    path: &std::path::Path,
    env: &[(&str, Option<&str>)],
    jvm_options: &str,
) -> (std::process::ExitStatus, String, String) {
    let dir = java_dir();
    let mut command = std::process::Command::new(dir.join("config-check.sh"));
    command
        .arg(version.as_str())
        .arg(path)
        .env("JAVA_OPTS", jvm_options)
        .stdin(Stdio::null());
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}/config-check.sh: {e}", dir.display()));
    (
        output.status,
        String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The checker's classes as a JDK class-data archive (AppCDS), dumped once per version
/// and build folder by a first check (of `toyaml/single-<version>.yaml`); `None` when the
/// JDK cannot make one (the checks then run without it). A stale archive is ignored by
/// the JVM.
pub fn config_check_archive(version: Version) -> Option<PathBuf> {
    static ARCHIVES: [std::sync::OnceLock<Option<PathBuf>>; 2] =
        [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    let slot = &ARCHIVES[usize::from(version == Version::V4_7_0)];
    slot.get_or_init(|| {
        let archive =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("config-check-{version}.jsa"));
        if !archive.is_file() {
            let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(format!("tests/redisson-yaml/toyaml/single-{version}.yaml"));
            let dump = format!(
                "{} -XX:ArchiveClassesAtExit={}",
                config_check_jvm(),
                archive.display()
            );
            run_config_check(version, &sample, &[], &dump);
        }
        archive.is_file().then_some(archive)
    })
    .clone()
}
