//! Real faults for the tests: a server that restarts empty on its port, and a loopback
//! proxy that cuts its connections (closing them) or stalls them (a partition: bytes
//! stop flowing, nothing is closed).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{free_port, redis_cli, redis_server_bin};

/// A redis-server that can be shut down without saving and started again on its port.
pub struct Restartable {
    pub port: u16,
    dir: PathBuf,
    child: Option<std::process::Child>,
}

impl Restartable {
    pub fn start() -> Restartable {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "redisson-lock-restartable-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut server = Restartable {
            port,
            dir,
            child: None,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let child = std::process::Command::new(redis_server_bin())
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--dir", self.dir.to_str().expect("utf-8 temp dir")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let start = Instant::now();
        while !redis_cli(self.port, &["ping"]).contains("PONG") {
            assert!(start.elapsed() < Duration::from_secs(10), "restart failed");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `SHUTDOWN NOSAVE` (every connection closes), and waits for the process to end.
    pub fn shutdown(&mut self) {
        let _ = redis_cli(self.port, &["shutdown", "nosave"]);
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }

    /// Starts the server again, empty, on its port (after [`Restartable::shutdown`]).
    pub fn start_again(&mut self) {
        self.spawn();
    }

    /// `SHUTDOWN NOSAVE`, then the same server again, empty.
    pub fn restart(&mut self) {
        self.shutdown();
        self.spawn();
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Restartable {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What a [`FaultyProxy`] does to the connections it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Bytes pass.
    Pass,
    /// Bytes stop in both directions; connections stay open (a partition).
    Stall,
}

/// A loopback proxy to Redis that cuts every connection it carries when told to, or
/// stalls them (all, or one by the order they were opened in).
pub struct FaultyProxy {
    pub port: u16,
    cut: tokio::sync::watch::Sender<u64>,
    /// The flow of each connection, in the order they were opened, and of new ones.
    flows: Arc<Mutex<(Vec<tokio::sync::watch::Sender<Flow>>, Flow)>>,
    /// While true, a new connection is accepted but carries nothing yet.
    hold_new: tokio::sync::watch::Sender<bool>,
}

impl FaultyProxy {
    pub async fn start(redis_port: u16) -> FaultyProxy {
        Self::start_on(0, redis_port).await
    }

    /// A proxy listening on `port` (0: any free one).
    pub async fn start_on(port: u16, redis_port: u16) -> FaultyProxy {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("proxy port");
        let port = listener.local_addr().expect("proxy address").port();
        let (cut, cuts) = tokio::sync::watch::channel(0u64);
        let flows: Arc<Mutex<(Vec<tokio::sync::watch::Sender<Flow>>, Flow)>> =
            Arc::new(Mutex::new((Vec::new(), Flow::Pass)));
        let (hold_new, holds) = tokio::sync::watch::channel(false);
        let all = flows.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mut holds = holds.clone();
                let held = *holds.borrow_and_update();
                let Ok(server) = TcpStream::connect(("127.0.0.1", redis_port)).await else {
                    continue;
                };
                let mut cuts = cuts.clone();
                let flow = {
                    let mut all = all.lock().unwrap();
                    let (sender, receiver) = tokio::sync::watch::channel(all.1);
                    all.0.push(sender);
                    receiver
                };
                tokio::spawn(async move {
                    if held && holds.wait_for(|hold| !*hold).await.is_err() {
                        return;
                    }
                    cuts.borrow_and_update();
                    tokio::select! {
                        _ = splice(client, server, flow) => {}
                        _ = cuts.changed() => {} // dropping both sockets cuts the connection
                    }
                });
            }
        });
        FaultyProxy {
            port,
            cut,
            flows,
            hold_new,
        }
    }

    /// From now on, connections opened through the proxy are accepted but carry nothing
    /// until [`FaultyProxy::release_new`] (a server that is slow to take a connection);
    /// the open ones go on.
    pub fn hold_new(&self) {
        self.hold_new.send_replace(true);
    }

    /// Lets the held connections (and new ones) through.
    pub fn release_new(&self) {
        self.hold_new.send_replace(false);
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Closes every connection the proxy carries now.
    pub fn cut(&self) {
        self.cut.send_modify(|n| *n += 1);
    }

    /// Stops or restarts the bytes of every connection (open ones and new ones).
    pub fn set_flow(&self, flow: Flow) {
        let mut all = self.flows.lock().unwrap();
        all.1 = flow;
        for connection in &all.0 {
            connection.send_replace(flow);
        }
    }

    /// Stops or restarts the bytes of the `index`-th connection opened through the proxy
    /// (0: the first). A lock client opens its command connection, then its subscriber.
    pub fn set_flow_of(&self, index: usize, flow: Flow) {
        let all = self.flows.lock().unwrap();
        all.0
            .get(index)
            .unwrap_or_else(|| panic!("no connection {index} through the proxy"))
            .send_replace(flow);
    }

    /// How many connections were opened through the proxy so far.
    pub fn connections(&self) -> usize {
        self.flows.lock().unwrap().0.len()
    }
}

async fn splice(client: TcpStream, server: TcpStream, flows: tokio::sync::watch::Receiver<Flow>) {
    let (mut client_rd, mut client_wr) = client.into_split();
    let (mut server_rd, mut server_wr) = server.into_split();
    let up_flow = flows.clone();
    let up = async move {
        let mut flow = up_flow;
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = client_rd.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if flow.wait_for(|f| *f == Flow::Pass).await.is_err() {
                break;
            }
            if server_wr.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    let down = async move {
        let mut flow = flows;
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = server_rd.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if flow.wait_for(|f| *f == Flow::Pass).await.is_err() {
                break;
            }
            if client_wr.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}
