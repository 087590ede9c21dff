//! One test's set-up, shared by the per-kind test files: a `redis-server` of its own, a
//! lock client (default settings, or a config the test adjusts), a raw fred client to
//! read and write state the way another program would, and a fresh lock name.
//!
//! Tests destructure it: `let Bed(server, client, raw, name) = Bed::new("what").await;`.
//! Bind the server even when the test does not use it (`_server`, not `_`): a field
//! bound to `_` is dropped at once, and dropping the server kills it.

use redisson_lock::fred::prelude::Client as RawClient;
use redisson_lock::{Client, ConfigBuilder};

use super::{RedisServer, key};

/// A server, one lock client, a raw client and a fresh name ([`key`]), in that order.
pub struct Bed(pub RedisServer, pub Client, pub RawClient, pub String);

impl Bed {
    /// The lock client with default settings; the name is `key(what)`.
    pub async fn new(what: &str) -> Bed {
        Bed::with_config(what, |config| config).await
    }

    /// The lock client with `configure` applied to the server's config builder (e.g.
    /// `|c| c.watchdog_timeout(TIMEOUT)`).
    pub async fn with_config(
        what: &str,
        configure: impl FnOnce(ConfigBuilder) -> ConfigBuilder,
    ) -> Bed {
        let server = RedisServer::start();
        let client = server.client_with(configure(server.config())).await;
        let raw = server.raw().await;
        Bed(server, client, raw, key(what))
    }
}

/// [`Bed`] with two lock clients of default settings (two processes on one lock): a
/// server, the clients, a raw client and a fresh name.
pub struct Duo(pub RedisServer, pub [Client; 2], pub RawClient, pub String);

impl Duo {
    /// The name is `key(what)`.
    pub async fn new(what: &str) -> Duo {
        let server = RedisServer::start();
        let clients = [server.client().await, server.client().await];
        let raw = server.raw().await;
        Duo(server, clients, raw, key(what))
    }
}

/// Independent servers (a MultiLock spread over several, a RedLock), each with a lock
/// client and a raw client, index for index.
pub struct Fleet {
    pub servers: Vec<RedisServer>,
    pub clients: Vec<Client>,
    pub raws: Vec<RawClient>,
}

impl Fleet {
    /// `n` servers; every lock client with `configure` applied to its server's config
    /// builder (`|c| c` for the defaults).
    pub async fn new(n: usize, configure: impl Fn(ConfigBuilder) -> ConfigBuilder) -> Fleet {
        let servers: Vec<RedisServer> = (0..n).map(|_| RedisServer::start()).collect();
        let (mut clients, mut raws) = (Vec::new(), Vec::new());
        for server in &servers {
            clients.push(server.client_with(configure(server.config())).await);
            raws.push(server.raw().await);
        }
        Fleet {
            servers,
            clients,
            raws,
        }
    }
}
